/**
 * The JSON of the Commit-Boost signer API v0.10 (commit-boost-client `commit/request.rs`,
 * `commit/response.rs`), read and written byte-compatibly with its serde types: hex with or
 * without 0x on input (alloy), lower-case 0x hex on output, `nonce` a JSON integer up to 2^64-1
 * (read from its source text, never through a double), `chain_id` a U256 written as ruint does
 * (0x + minimal lower-case hex).
 */
import { SigilError } from "../errors";
import { toHex } from "../wire/hex";
import { isJsonObject, type JsonObject } from "../wire/json";
import type { ProxyScheme } from "./proxy-store";
import type { ConsensusProxies, Delegation, Signed } from "./service";

const MAX_U64 = 2n ** 64n - 1n;

const invalid = (message: string) => new SigilError("invalid_request", message);

/** The body as an object, with `nonce` kept as its source digits. */
export function parseBody(body: Uint8Array): JsonObject {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    throw new SigilError("invalid_utf8", "request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text, (key, parsed, context?: { source?: string }) =>
      key === "nonce" && typeof parsed === "number" ? `#${context?.source ?? parsed}` : parsed,
    );
  } catch {
    throw new SigilError("malformed_json", "request body is not valid JSON");
  }
  if (!isJsonObject(value)) throw invalid("request body must be a JSON object");
  return value;
}

function hexField(body: JsonObject, field: string, bytes: number): Uint8Array {
  const value = body[field];
  if (typeof value !== "string") throw invalid(`${field}: expected ${bytes} bytes of hex`);
  const digits = value.startsWith("0x") ? value.slice(2) : value;
  if (digits.length !== bytes * 2 || !/^[0-9a-fA-F]*$/.test(digits))
    throw invalid(
      `${field}: expected ${bytes} bytes of hex, got ${JSON.stringify(value.slice(0, 140))}`,
    );
  return Uint8Array.fromHex(digits);
}

function nonceField(body: JsonObject): bigint {
  const value = body.nonce;
  // parseBody marks numbers read from source with "#"; a string sent by the client is refused.
  if (typeof value !== "string" || !/^#\d+$/.test(value))
    throw invalid("nonce: expected an unsigned 64-bit integer");
  const nonce = BigInt(value.slice(1));
  if (nonce > MAX_U64) throw invalid("nonce: expected an unsigned 64-bit integer");
  return nonce;
}

export interface SignRequestBody {
  readonly key: string;
  readonly objectRoot: Uint8Array;
  readonly nonce: bigint;
}

/** `{pubkey | proxy, object_root, nonce}`; `field` names the key field of the route. */
export function signRequest(body: JsonObject, field: "pubkey" | "proxy", keyBytes: number) {
  const key = toHex(hexField(body, field, keyBytes));
  return { key, objectRoot: hexField(body, "object_root", 32), nonce: nonceField(body) };
}

export function generateProxyRequest(body: JsonObject): { pubkey: string; scheme: ProxyScheme } {
  const pubkey = toHex(hexField(body, "pubkey", 48));
  const scheme = body.scheme;
  if (scheme !== "bls" && scheme !== "ecdsa") throw invalid('scheme: expected "bls" or "ecdsa"');
  return { pubkey, scheme };
}

/** ruint's serde form of a U256: 0x + minimal lower-case hex. */
export function u256Json(value: bigint): string {
  return `0x${value.toString(16)}`;
}

/** BlsSignResponse (`pubkey`) or EcdsaSignResponse (`address`), with an exact u64 nonce. */
export function signResponseText(signed: Signed, keyField: "pubkey" | "address"): string {
  const head = {
    [keyField]: signed.key,
    object_root: toHex(signed.objectRoot),
    module_signing_id: toHex(signed.moduleSigningId),
  };
  const tail = { chain_id: u256Json(signed.chainId), signature: toHex(signed.signature) };
  const headText = JSON.stringify(head).slice(0, -1);
  const tailText = JSON.stringify(tail).slice(1);
  return `${headText},"nonce":${signed.nonce.toString()},${tailText}`;
}

export function delegationJson(delegation: Delegation) {
  return {
    message: { delegator: delegation.delegator, proxy: delegation.proxy },
    signature: delegation.signature,
  };
}

export function pubkeysJson(keys: readonly ConsensusProxies[]) {
  return {
    keys: keys.map((k) => ({
      consensus: k.consensus,
      proxy_bls: k.proxyBls,
      proxy_ecdsa: k.proxyEcdsa,
    })),
  };
}
