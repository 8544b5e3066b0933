// Commit-Boost test helpers: module JWTs made as commit-boost-client's SignerClient makes them,
// calls to the listener, and roots computed independently with @chainsafe/ssz containers.

import { resolve } from "node:path";
import { ByteVectorType, ContainerType, UintBigintType } from "@chainsafe/ssz";
import { createModuleJwt } from "../../src/commit-boost/jwt";
import type { TempDir } from "./cli";
import { oracleDomain, oracleSigningRoot } from "./oracle";
import { type InProcessSigner, startInProcessSigner } from "./signer";

export const MODULES = {
  alpha: {
    id: "alpha-preconf",
    secret: "alpha-secret-0123456789abcdef",
    signingId: "0x6a33a23ef26a4836979edff86c493a69b26ccf0b4a16491a815a13787657431b",
  },
  beta: {
    id: "beta-inclusion",
    secret: "beta-secret-0123456789abcdef",
    signingId: "0x61fe00135d7b4912a8c63ada215ac2e62326e6e7b30f49a29fcf9779d7ad800d",
  },
} as const;

/** The `commit_boost:` YAML of a test signer (listener on a free loopback port). */
export function commitBoostYaml(store: string, extra = ""): string {
  const modules = Object.values(MODULES)
    .map((m) => `{id: ${m.id}, jwt_secret: ${m.secret}, signing_id: "${m.signingId}"}`)
    .join(", ");
  return `commit_boost: {enabled: true, listen_address: 127.0.0.1, listen_port: 0, modules: [${modules}], proxy_store: ${store}${extra}}`;
}

/**
 * A Hoodi signer with the interop keys (examples/keys) and the Commit-Boost listener on, its
 * proxies in `store` (YAML flow mapping; default a sqlite file in `dir`).
 */
export function startCommitBoostSigner(
  dir: TempDir,
  name: string,
  options: { store?: string; extra?: string; workers?: number; yaml?: readonly string[] } = {},
): Promise<InProcessSigner> {
  const store = options.store ?? `{backend: sqlite, path: ${dir.path}/${name}-proxies.sqlite}`;
  return startInProcessSigner(dir, name, {
    yaml: [
      "network: hoodi",
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      "antislashing: {backend: noop}",
      `bls: {workers: ${options.workers ?? 0}}`,
      commitBoostYaml(store, options.extra),
      ...(options.yaml ?? []),
    ],
  });
}

export interface CallOptions {
  module?: { id: string; secret: string };
  /** Overrides of the token's claims. */
  route?: string;
  exp?: number;
  /** The body the token's payload_hash is made for, when not the one sent. */
  hashedBody?: string;
  /** Bun's fetch TLS options (the CA of an https listener). */
  tls?: { ca: string };
  /** More request headers (a traceparent). */
  headers?: Record<string, string>;
}

/** A body sent as this exact text (a u64 beyond 2^53, which JSON.stringify cannot write). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** A request as commit-boost-client's SignerClient sends it: bearer JWT over the exact body. */
export async function cbCall(
  base: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<{ status: number; text: string; json: () => unknown }> {
  const module = options.module ?? MODULES.alpha;
  const text =
    body === undefined ? undefined : body instanceof RawJson ? body.text : JSON.stringify(body);
  const hashed = options.hashedBody ?? text;
  const token = createModuleJwt(
    {
      module: module.id,
      route: options.route ?? path,
      exp: options.exp ?? Math.floor(Date.now() / 1000) + 300,
      ...(hashed === undefined ? {} : { body: new TextEncoder().encode(hashed) }),
    },
    module.secret,
  );
  const response = await fetch(`${base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${token}`,
      ...(text === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers,
    },
    ...(text === undefined ? {} : { body: text }),
    ...(options.tls ? { tls: options.tls } : {}),
  });
  const responseText = await response.text();
  return { status: response.status, text: responseText, json: () => JSON.parse(responseText) };
}

const Bytes32 = new ByteVectorType(32);
const Bytes48 = new ByteVectorType(48);
const PropCommitSigningInfo = new ContainerType({
  data: Bytes32,
  moduleSigningId: Bytes32,
  nonce: new UintBigintType(8),
  chainId: new UintBigintType(32),
});
const ProxyDelegationBls = new ContainerType({ delegator: Bytes48, proxy: Bytes48 });
const ProxyDelegationEcdsa = new ContainerType({
  delegator: Bytes48,
  proxy: new ByteVectorType(20),
});

const ZERO_ROOT = `0x${"00".repeat(32)}`;

export function oracleCommitBoostDomain(genesisForkVersion: string): Uint8Array {
  return oracleDomain("0x6d6d6f43", genesisForkVersion, ZERO_ROOT);
}

/** The root a module request is signed over, by @chainsafe/ssz. */
export function oracleRequestRoot(
  request: { objectRoot: Uint8Array; signingId: Uint8Array; nonce: bigint; chainId: bigint },
  genesisForkVersion: string,
): { infoRoot: Uint8Array; signingRoot: Uint8Array } {
  const infoRoot = PropCommitSigningInfo.hashTreeRoot({
    data: request.objectRoot,
    moduleSigningId: request.signingId,
    nonce: request.nonce,
    chainId: request.chainId,
  });
  return {
    infoRoot,
    signingRoot: oracleSigningRoot(infoRoot, oracleCommitBoostDomain(genesisForkVersion)),
  };
}

/** The root a delegation is signed over, by @chainsafe/ssz. */
export function oracleDelegationRoot(
  delegator: Uint8Array,
  proxy: Uint8Array,
  genesisForkVersion: string,
): Uint8Array {
  const type = proxy.length === 20 ? ProxyDelegationEcdsa : ProxyDelegationBls;
  const root = type.hashTreeRoot({ delegator, proxy });
  return oracleSigningRoot(root, oracleCommitBoostDomain(genesisForkVersion));
}
