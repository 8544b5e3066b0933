/**
 * A proxy's secret at rest: AES-256-GCM under a sealing key, random 96-bit nonce, the proxy's
 * identity (scheme, id, consensus pubkey, module) as associated data, so a sealed secret copied
 * onto another row does not open. Stored as base64 of `format ‖ nonce ‖ ciphertext ‖ tag`.
 *
 * The sealing key is under the same protection as the consensus key the proxy is delegated from:
 * - format 1, on a stateful signer: HKDF-SHA256 of the seal's master key (the proxies open only
 *   while the signer is unsealed, as cloud_kv keys);
 * - format 2, without signer_state: HKDF-SHA256 of the consensus key's own BLS signature of
 *   `proxySealRoot` (below), with the proxy's identity as HKDF info. Whoever can sign with the
 *   consensus key (every instance loading its keystore) opens its proxies; nobody else can, and
 *   no second secret exists. The signature never leaves the process.
 * A database copy alone opens nothing.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { ProxyScheme } from "./proxy-store";
import { computeDomain, signingRoot } from "./roots";

const FORMAT_MASTER_KEY = 1;
const FORMAT_CONSENSUS_KEY = 2;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const SECRET_BYTES = 32;
const SEALED_BYTES = 1 + NONCE_BYTES + SECRET_BYTES + TAG_BYTES;
const KEK_INFO = "sigil/commit-boost/proxy-seal/v1";
const CONSENSUS_KEY_INFO = "sigil/commit-boost/proxy-seal/consensus-key/v1";

/**
 * The domain type of the one message sigil signs for itself: ASCII "sgPS" (sigil proxy seal).
 * It is none of the consensus specs' domain types (`0x00000000`…`0x0d000000`, `0x00000001`,
 * `0x0b000001`: all zero in bytes 1 and 2) and not Commit-Boost's `0x6d6d6f43`. Every root a
 * sigil consensus key signs for anyone else is hash_tree_root(SigningData{object_root, domain})
 * = SHA-256(object_root ‖ domain) with one of those domain types, which sigil computes itself
 * (the Web3Signer API recomputes the root from the message; Commit-Boost modules send data, not
 * roots). The 64-byte preimage of `proxySealRoot` differs from all of them in bytes 32..35, so
 * no request can be answered with the signature that seals proxies short of a SHA-256 collision.
 * Like Commit-Boost's, the domain is on the chain's genesis fork version with a zero validators
 * root: proxies (and their delegations) belong to one chain.
 */
export const PROXY_SEAL_DOMAIN_TYPE = Uint8Array.of(0x73, 0x67, 0x50, 0x53);

/** The fixed 32-byte object root of the sealing message. */
export const PROXY_SEAL_TAG = new TextEncoder().encode("sigil commit-boost proxy seal v1");

/** The root a consensus key signs to derive its proxies' sealing keys (never sent anywhere). */
export function proxySealRoot(genesisForkVersion: Uint8Array): Uint8Array {
  const domain = computeDomain(PROXY_SEAL_DOMAIN_TYPE, genesisForkVersion, new Uint8Array(32));
  return signingRoot(PROXY_SEAL_TAG, domain);
}

export class ProxySealError extends Error {
  override readonly name = "ProxySealError";
}

export interface ProxyIdentity {
  readonly scheme: ProxyScheme;
  readonly proxy: string;
  readonly consensus: string;
  readonly module: string;
}

/** The AES-256-GCM key of one or more proxies, and the format it writes and opens. */
export interface ProxySealKey {
  readonly format: typeof FORMAT_MASTER_KEY | typeof FORMAT_CONSENSUS_KEY;
  readonly key: Uint8Array;
}

const FORMAT_NAMES = {
  [FORMAT_MASTER_KEY]: "the signer_state master key",
  [FORMAT_CONSENSUS_KEY]: "its consensus key",
} as const;

/** The 32-byte key-encryption key derived from the seal's master key. */
export function proxyKek(master: Uint8Array): Uint8Array {
  if (master.length < 16) throw new ProxySealError("proxy seal key material is too short");
  return new Uint8Array(hkdfSync("sha256", master, new Uint8Array(0), KEK_INFO, 32));
}

/** The sealing key of every proxy, from `proxyKek` (a stateful signer). */
export function masterSealKey(kek: Uint8Array): ProxySealKey {
  return { format: FORMAT_MASTER_KEY, key: kek };
}

/**
 * The sealing key of one proxy, from its consensus key's BLS signature of `proxySealRoot`: one
 * key per proxy, as the identity is the HKDF info. The caller wipes the signature and the key.
 */
export function consensusSealKey(signature: Uint8Array, identity: ProxyIdentity): ProxySealKey {
  if (signature.length !== 96) throw new ProxySealError("a BLS signature is 96 bytes");
  const info = identityBytes(CONSENSUS_KEY_INFO, identity);
  const key = new Uint8Array(hkdfSync("sha256", signature, new Uint8Array(0), info, 32));
  return { format: FORMAT_CONSENSUS_KEY, key };
}

function identityBytes(label: string, identity: ProxyIdentity): Buffer {
  const { scheme, proxy, consensus, module } = identity;
  return Buffer.from(JSON.stringify([label, scheme, proxy, consensus, module]), "utf8");
}

export function sealProxySecret(
  sealKey: ProxySealKey,
  identity: ProxyIdentity,
  secret: Uint8Array,
) {
  if (secret.length !== SECRET_BYTES) throw new ProxySealError("a proxy secret is 32 bytes");
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", sealKey.key, nonce);
  cipher.setAAD(identityBytes(KEK_INFO, identity));
  const body = Buffer.concat([cipher.update(secret), cipher.final()]);
  return Buffer.concat([Buffer.of(sealKey.format), nonce, body, cipher.getAuthTag()]).toString(
    "base64",
  );
}

/** The 32-byte secret, or ProxySealError (another key, another row, or damaged data). */
export function openProxySecret(sealKey: ProxySealKey, identity: ProxyIdentity, sealed: string) {
  const bytes = Buffer.from(sealed, "base64");
  const format = bytes[0];
  if (
    bytes.length !== SEALED_BYTES ||
    (format !== FORMAT_MASTER_KEY && format !== FORMAT_CONSENSUS_KEY)
  )
    throw new ProxySealError("sealed proxy secret has an unknown format or length");
  if (format !== sealKey.format)
    throw new ProxySealError(
      `proxy sealed under ${FORMAT_NAMES[format]}, which this signer does not seal with (signer_state added or removed?)`,
    );
  const nonce = bytes.subarray(1, 1 + NONCE_BYTES);
  const body = bytes.subarray(1 + NONCE_BYTES, SEALED_BYTES - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", sealKey.key, nonce);
  decipher.setAAD(identityBytes(KEK_INFO, identity));
  decipher.setAuthTag(bytes.subarray(SEALED_BYTES - TAG_BYTES));
  try {
    return new Uint8Array(Buffer.concat([decipher.update(body), decipher.final()]));
  } catch {
    throw new ProxySealError("sealed proxy secret does not open under this key for this proxy");
  }
}
