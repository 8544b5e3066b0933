/**
 * A proxy's secret at rest: AES-256-GCM under a key-encryption key, random 96-bit nonce, the
 * proxy's identity (scheme, id, consensus pubkey, module) as associated data, so a sealed secret
 * copied onto another row does not open. Stored as base64 of `version ‖ nonce ‖ ciphertext ‖ tag`.
 *
 * The key-encryption key is HKDF-SHA256 of what protects the signer's own secrets: the seal's
 * master key on a stateful signer (the proxies open only while it is unsealed, as cloud_kv keys),
 * else the operator's `commit_boost.proxy_seal_key` secret. A database copy alone opens nothing.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { ProxyScheme } from "./proxy-store";

const FORMAT_V1 = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const SECRET_BYTES = 32;
const SEALED_BYTES = 1 + NONCE_BYTES + SECRET_BYTES + TAG_BYTES;
const KEK_INFO = "sigil/commit-boost/proxy-seal/v1";

export class ProxySealError extends Error {
  override readonly name = "ProxySealError";
}

export interface ProxyIdentity {
  readonly scheme: ProxyScheme;
  readonly proxy: string;
  readonly consensus: string;
  readonly module: string;
}

/** The 32-byte key-encryption key derived from `material` (a master key or an operator secret). */
export function proxyKek(material: Uint8Array): Uint8Array {
  if (material.length < 16) throw new ProxySealError("proxy seal key material is too short");
  return new Uint8Array(hkdfSync("sha256", material, new Uint8Array(0), KEK_INFO, 32));
}

function aad(identity: ProxyIdentity): Buffer {
  const { scheme, proxy, consensus, module } = identity;
  return Buffer.from(JSON.stringify([KEK_INFO, scheme, proxy, consensus, module]), "utf8");
}

export function sealProxySecret(kek: Uint8Array, identity: ProxyIdentity, secret: Uint8Array) {
  if (secret.length !== SECRET_BYTES) throw new ProxySealError("a proxy secret is 32 bytes");
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", kek, nonce);
  cipher.setAAD(aad(identity));
  const body = Buffer.concat([cipher.update(secret), cipher.final()]);
  return Buffer.concat([Buffer.of(FORMAT_V1), nonce, body, cipher.getAuthTag()]).toString("base64");
}

/** The 32-byte secret, or ProxySealError (another key, another row, or damaged data). */
export function openProxySecret(kek: Uint8Array, identity: ProxyIdentity, sealed: string) {
  const bytes = Buffer.from(sealed, "base64");
  if (bytes.length !== SEALED_BYTES || bytes[0] !== FORMAT_V1)
    throw new ProxySealError("sealed proxy secret has an unknown format or length");
  const nonce = bytes.subarray(1, 1 + NONCE_BYTES);
  const body = bytes.subarray(1 + NONCE_BYTES, SEALED_BYTES - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", kek, nonce);
  decipher.setAAD(aad(identity));
  decipher.setAuthTag(bytes.subarray(SEALED_BYTES - TAG_BYTES));
  try {
    return new Uint8Array(Buffer.concat([decipher.update(body), decipher.final()]));
  } catch {
    throw new ProxySealError("sealed proxy secret does not open under this key for this proxy");
  }
}
