import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * A validator secret as stored in the cloud_kv table: AES-256-GCM under the master key, with the
 * pubkey as associated data so that a ciphertext moved to another item does not decrypt.
 * Stored as base64 of `version || nonce || ciphertext || tag`.
 */
const FORMAT_V1 = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const SECRET_BYTES = 32;
const SEALED_BYTES = 1 + NONCE_BYTES + SECRET_BYTES + TAG_BYTES;

export class SealedSecretError extends Error {
  override readonly name = "SealedSecretError";
}

export function sealSecret(masterKey: Uint8Array, pubkey: string, secret: Uint8Array): string {
  if (secret.length !== SECRET_BYTES) throw new SealedSecretError("a secret key is 32 bytes");
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", masterKey, nonce);
  cipher.setAAD(aad(pubkey));
  const body = Buffer.concat([cipher.update(secret), cipher.final()]);
  return Buffer.concat([Buffer.of(FORMAT_V1), nonce, body, cipher.getAuthTag()]).toString("base64");
}

/** The 32-byte secret, or SealedSecretError (wrong master key, wrong item, or damaged data). */
export function openSecret(masterKey: Uint8Array, pubkey: string, sealed: string): Uint8Array {
  const bytes = Buffer.from(sealed, "base64");
  if (bytes.length !== SEALED_BYTES || bytes[0] !== FORMAT_V1)
    throw new SealedSecretError("ciphertext has an unknown format or length");
  const nonce = bytes.subarray(1, 1 + NONCE_BYTES);
  const body = bytes.subarray(1 + NONCE_BYTES, SEALED_BYTES - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", masterKey, nonce);
  decipher.setAAD(aad(pubkey));
  decipher.setAuthTag(bytes.subarray(SEALED_BYTES - TAG_BYTES));
  try {
    return new Uint8Array(Buffer.concat([decipher.update(body), decipher.final()]));
  } catch {
    throw new SealedSecretError(
      "ciphertext does not authenticate under this master key for this pubkey",
    );
  }
}

function aad(pubkey: string): Buffer {
  return Buffer.from(`sigil/cloud_kv/v1/${pubkey.toLowerCase()}`, "utf8");
}
