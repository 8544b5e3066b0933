// No request on the Commit-Boost routes yields a signature valid in a beacon domain: for random
// object roots and nonces, each signature (consensus key and BLS proxy) is checked against every
// beacon domain type of the consensus specs (@lodestar/params), every fork version of the
// network (@lodestar/config's Hoodi), with its genesis validators root and a zero one, over both
// the root the module sent and the signing-info root sigil built from it. And the message whose
// signature seals proxy keys (proxy-seal.ts) is in a domain none of these, nor any domain sigil
// signs in, so no request anywhere can get it signed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PublicKey, Signature, verify } from "@chainsafe/blst";
import { hoodiChainConfig } from "@lodestar/config/networks";
import * as params from "@lodestar/params";
import fc from "fast-check";
import {
  PROXY_SEAL_DOMAIN_TYPE,
  PROXY_SEAL_TAG,
  proxySealRoot,
} from "../../src/commit-boost/proxy-seal";
import { COMMIT_BOOST_DOMAIN_TYPE } from "../../src/commit-boost/roots";
import * as sigilDomains from "../../src/signing/ssz";
import * as sigilGloasDomains from "../../src/signing/ssz-gloas";
import { fromHex, toHex } from "../../src/wire/hex";
import { TempDir } from "../support/cli";
import {
  cbCall,
  MODULES,
  oracleCommitBoostDomain,
  oracleRequestRoot,
  startCommitBoostSigner,
} from "../support/commit-boost";
import { oracleDomain, oracleSigningRoot } from "../support/oracle";
import type { InProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const HOODI_GVR = "0x212f13fc4df078b6cb7db228f1c8307566dcecf900867401a92023d7ba99cb5f";
const ZERO = `0x${"00".repeat(32)}`;
const KEY = INTEROP_KEYS[2] ?? "";

const DOMAIN_TYPES = Object.entries(params)
  .filter(
    ([name, value]) =>
      name.startsWith("DOMAIN_") &&
      name !== "DOMAIN_APPLICATION_MASK" &&
      value instanceof Uint8Array,
  )
  .map(([, value]) => toHex(value as Uint8Array));
const FORK_VERSIONS = Object.entries(hoodiChainConfig)
  .filter(([name, value]) => name.endsWith("_FORK_VERSION") && value instanceof Uint8Array)
  .map(([, value]) => toHex(value as Uint8Array));
const BEACON_DOMAINS = DOMAIN_TYPES.flatMap((type) =>
  FORK_VERSIONS.flatMap((fork) => [HOODI_GVR, ZERO].map((gvr) => oracleDomain(type, fork, gvr))),
);

const dir = new TempDir();
let signer: InProcessSigner;
let cb = "";
let proxy = "";

beforeAll(async () => {
  signer = await startCommitBoostSigner(dir, "cb-domains");
  cb = signer.signer.commitBoostUrl ?? "";
  const generated = await cbCall(cb, "/signer/v1/generate_proxy_key", {
    pubkey: KEY,
    scheme: "bls",
  });
  proxy = (generated.json() as { message: { proxy: string } }).message.proxy;
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

test("the domain lists are the specs' (sanity of the oracle)", () => {
  expect(DOMAIN_TYPES).toContain("0x00000000");
  expect(DOMAIN_TYPES).toContain("0x01000000");
  expect(DOMAIN_TYPES).toContain("0x00000001");
  expect(DOMAIN_TYPES.length).toBeGreaterThanOrEqual(15);
  expect(FORK_VERSIONS).toContain("0x10000910");
  expect(FORK_VERSIONS.length).toBeGreaterThanOrEqual(7);
});

async function signBoth(objectRoot: string, nonce: number) {
  const consensus = await cbCall(cb, "/signer/v1/request_signature/bls", {
    pubkey: KEY,
    object_root: objectRoot,
    nonce,
  });
  const proxied = await cbCall(cb, "/signer/v1/request_signature/proxy-bls", {
    proxy,
    object_root: objectRoot,
    nonce,
  });
  expect([consensus.status, proxied.status]).toEqual([200, 200]);
  const { infoRoot, signingRoot } = oracleRequestRoot(
    {
      objectRoot: fromHex(objectRoot),
      signingId: fromHex(MODULES.alpha.signingId),
      nonce: BigInt(nonce),
      chainId: 560048n,
    },
    "0x10000910",
  );
  return {
    signatures: [
      { pubkey: KEY, signature: (consensus.json() as { signature: string }).signature },
      { pubkey: proxy, signature: (proxied.json() as { signature: string }).signature },
    ],
    candidates: [fromHex(objectRoot), infoRoot],
    signingRoot,
  };
}

const GENESIS = "0x10000910";
const SEAL_ROOT = toHex(proxySealRoot(fromHex(GENESIS)));
/** Every domain type sigil signs in: its beacon and builder constants and Commit-Boost's. */
const SIGIL_DOMAIN_TYPES = [
  ...Object.entries({ ...sigilDomains, ...sigilGloasDomains })
    .filter(([name, value]) => name.startsWith("DOMAIN_") && value instanceof Uint8Array)
    .map(([, value]) => toHex(value as Uint8Array)),
  toHex(COMMIT_BOOST_DOMAIN_TYPE),
];

test("the proxy-seal message is in no beacon, builder or Commit-Boost domain", () => {
  const sealType = toHex(PROXY_SEAL_DOMAIN_TYPE);
  expect(SIGIL_DOMAIN_TYPES.length).toBeGreaterThanOrEqual(14);
  expect(SIGIL_DOMAIN_TYPES).toContain("0x0b000001");
  for (const type of [...DOMAIN_TYPES, ...SIGIL_DOMAIN_TYPES]) expect(type).not.toBe(sealType);
  // The documented message, computed independently (@lodestar/types): "sgPS", the genesis fork
  // version, a zero validators root, the 32-byte tag.
  const sealDomain = oracleDomain("0x73675053", GENESIS, ZERO);
  expect(toHex(oracleSigningRoot(PROXY_SEAL_TAG, sealDomain))).toBe(SEAL_ROOT);
  const everyDomain = [
    ...BEACON_DOMAINS,
    ...SIGIL_DOMAIN_TYPES.flatMap((type) =>
      FORK_VERSIONS.flatMap((fork) =>
        [HOODI_GVR, ZERO].map((gvr) => oracleDomain(type, fork, gvr)),
      ),
    ),
    oracleCommitBoostDomain(GENESIS),
  ];
  for (const domain of everyDomain) {
    // Its first 4 bytes differ, so SigningData of any object root differs (short of a collision).
    expect(toHex(domain.subarray(0, 4))).not.toBe(sealType);
    expect(toHex(oracleSigningRoot(PROXY_SEAL_TAG, domain))).not.toBe(SEAL_ROOT);
  }
});

const rootArb = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => toHex(b));
const nonceArb = fc.integer({ min: 0, max: 2 ** 31 });

test("random roots: the signed root is never a beacon signing root of the network", async () => {
  await fc.assert(
    fc.asyncProperty(rootArb, nonceArb, async (objectRoot, nonce) => {
      const { signatures, candidates, signingRoot } = await signBoth(objectRoot, nonce);
      // Positive control: each signature verifies under the Commit-Boost root.
      for (const { pubkey, signature } of signatures)
        expect(verify(signingRoot, PublicKey.fromHex(pubkey), Signature.fromHex(signature))).toBe(
          true,
        );
      const signed = toHex(signingRoot);
      expect(signed).not.toBe(SEAL_ROOT);
      for (const domain of BEACON_DOMAINS)
        for (const candidate of candidates)
          expect(toHex(oracleSigningRoot(candidate, domain))).not.toBe(signed);
    }),
    { numRuns: 60 },
  );
});

test("random roots: no signature verifies under any beacon domain (BLS verification)", async () => {
  await fc.assert(
    fc.asyncProperty(rootArb, nonceArb, async (objectRoot, nonce) => {
      const { signatures, candidates } = await signBoth(objectRoot, nonce);
      for (const { pubkey, signature } of signatures) {
        const key = PublicKey.fromHex(pubkey);
        const sig = Signature.fromHex(signature);
        for (const domain of BEACON_DOMAINS)
          for (const candidate of candidates)
            expect(verify(oracleSigningRoot(candidate, domain), key, sig)).toBe(false);
      }
    }),
    { numRuns: 3 },
  );
});
