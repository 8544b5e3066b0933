/**
 * EIP-2335 (version 4) BLS keystore decryption.
 *
 * The keystore is validated completely before any KDF runs, so a malformed or hostile file costs
 * nothing. The KDFs use the asynchronous `node:crypto` functions, which run on the runtime's
 * thread pool: decrypting a keystore (scrypt n=2^18 takes about a second) never blocks the event
 * loop, and several keystores decrypt in parallel.
 *
 * Secrets never appear in an error: every refusal is a `KeystoreError` whose `reason` names the
 * problem (a field, a function name, a length), never the password, derived key or secret.
 *
 * Cost guards (denial of service): a keystore can ask for an arbitrarily expensive KDF. Real
 * keystores use scrypt n=2^18, r=8, p=1 (256 MiB, ~1 s) or PBKDF2 c=2^18 (~30 ms). Refused:
 *   - scrypt n > 2^20, r > 32, p > 16, or memory 128·r·(n+2) + 128·r·p > 1 GiB;
 *   - pbkdf2 c > 2^24 (about 2 s here).
 * These are about 4× and 64× the standard costs, so every keystore a real tool writes loads.
 */
import { createDecipheriv, createHash, pbkdf2, scrypt, timingSafeEqual } from "node:crypto";
import { toHex } from "../wire/hex";
import { isJsonObject } from "../wire/json";

export const MAX_SCRYPT_N = 2 ** 20;
export const MAX_SCRYPT_R = 32;
export const MAX_SCRYPT_P = 16;
export const MAX_SCRYPT_MEMORY_BYTES = 2 ** 30;
export const MAX_PBKDF2_C = 2 ** 24;

/** A keystore that is malformed, unsupported, too costly, or that the password does not open. */
export class KeystoreError extends Error {
  override readonly name = "KeystoreError";
  readonly reason: string;

  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

type ScryptParams = { fn: "scrypt"; n: number; r: number; p: number; salt: Buffer };
type Pbkdf2Params = { fn: "pbkdf2"; c: number; salt: Buffer };

interface ParsedKeystore {
  kdf: ScryptParams | Pbkdf2Params;
  checksum: Buffer;
  iv: Buffer;
  cipherText: Buffer;
  pubkey: string | undefined;
}

type Json = Record<string, unknown>;

function fail(reason: string): never {
  throw new KeystoreError(reason);
}

function describe(value: unknown): string {
  if (typeof value === "string")
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function object(parent: Json, key: string, where: string): Json {
  const value = parent[key];
  if (value === undefined) fail(`${where} has no '${key}'`);
  if (!isJsonObject(value)) fail(`${where}.${key} must be an object, got ${describe(value)}`);
  return value;
}

function text(parent: Json, key: string, where: string): string {
  const value = parent[key];
  if (value === undefined) fail(`${where} has no '${key}'`);
  if (typeof value !== "string") fail(`${where}.${key} must be a string, got ${describe(value)}`);
  return value;
}

function integer(parent: Json, key: string, where: string, min: number, max: number): number {
  const value = parent[key];
  if (value === undefined) fail(`${where} has no '${key}'`);
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    fail(`${where}.${key} must be an integer, got ${describe(value)}`);
  }
  if (value < min) fail(`${where}.${key} must be at least ${min}, got ${value}`);
  if (value > max) {
    fail(`${where}.${key} = ${value} exceeds the limit ${max} (refused as too costly to compute)`);
  }
  return value;
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** Hex as EIP-2335 writes it (no prefix); a "0x" prefix is tolerated. */
function hexBytes(value: string, what: string, expectedLength?: number): Buffer {
  const digits = value.startsWith("0x") || value.startsWith("0X") ? value.slice(2) : value;
  if (!HEX.test(digits)) fail(`${what} is not valid hex`);
  const bytes = Buffer.from(digits, "hex");
  if (expectedLength !== undefined && bytes.length !== expectedLength) {
    fail(`${what} must be ${expectedLength} bytes, got ${bytes.length}`);
  }
  return bytes;
}

function dklen(params: Json, where: string): void {
  const value = params.dklen;
  if (value === undefined) fail(`${where} has no 'dklen'`);
  if (value !== 32) fail(`${where}.dklen = ${describe(value)} is unsupported (must be 32)`);
}

function parseKdf(kdf: Json): ScryptParams | Pbkdf2Params {
  const fn = text(kdf, "function", "crypto.kdf");
  if (fn !== "scrypt" && fn !== "pbkdf2") {
    fail(`kdf function ${JSON.stringify(fn)} is unsupported (expected scrypt or pbkdf2)`);
  }
  const params = object(kdf, "params", "crypto.kdf");
  const where = "crypto.kdf.params";
  dklen(params, where);
  const salt = hexBytes(text(params, "salt", where), `${where}.salt`);
  if (fn === "pbkdf2") {
    const prf = text(params, "prf", where);
    if (prf !== "hmac-sha256") {
      fail(`pbkdf2 prf ${JSON.stringify(prf)} is unsupported (only hmac-sha256)`);
    }
    return { fn, c: integer(params, "c", where, 1, MAX_PBKDF2_C), salt };
  }
  const n = integer(params, "n", where, 2, MAX_SCRYPT_N);
  // n is at most 2^20 here, so the bit trick is exact.
  if ((n & (n - 1)) !== 0) fail(`${where}.n = ${n} is not a power of two`);
  const r = integer(params, "r", where, 1, MAX_SCRYPT_R);
  const p = integer(params, "p", where, 1, MAX_SCRYPT_P);
  if (scryptMemory(n, r, p) > MAX_SCRYPT_MEMORY_BYTES) {
    fail(`scrypt n=${n}, r=${r}, p=${p} needs more than 1 GiB (refused as too costly to compute)`);
  }
  return { fn, n, r, p, salt };
}

/** Bytes OpenSSL's scrypt allocates (and checks against `maxmem`): V = 128·r·(n+2), B = 128·r·p. */
export function scryptMemory(n: number, r: number, p: number): number {
  return 128 * r * (n + 2) + 128 * r * p;
}

function parsePubkey(keystore: Json): string | undefined {
  const value = keystore.pubkey;
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") fail(`pubkey must be a string, got ${describe(value)}`);
  const bytes = hexBytes(value, "pubkey", 48);
  return toHex(bytes);
}

/** Validates the whole structure; refuses (KeystoreError) with the first problem found. */
function parseKeystore(keystore: unknown): ParsedKeystore {
  if (!isJsonObject(keystore)) fail(`keystore must be a JSON object, got ${describe(keystore)}`);
  const version = keystore.version;
  if (version === undefined) fail("keystore has no 'version'");
  if (version !== 4) fail(`keystore version ${describe(version)} is unsupported (must be 4)`);
  const crypto = object(keystore, "crypto", "keystore");

  const kdf = parseKdf(object(crypto, "kdf", "crypto"));

  const checksumModule = object(crypto, "checksum", "crypto");
  const checksumFn = text(checksumModule, "function", "crypto.checksum");
  if (checksumFn !== "sha256") {
    fail(`checksum function ${JSON.stringify(checksumFn)} is unsupported (only sha256)`);
  }
  const checksum = hexBytes(
    text(checksumModule, "message", "crypto.checksum"),
    "crypto.checksum.message",
    32,
  );

  const cipherModule = object(crypto, "cipher", "crypto");
  const cipherFn = text(cipherModule, "function", "crypto.cipher");
  if (cipherFn !== "aes-128-ctr") {
    fail(`cipher function ${JSON.stringify(cipherFn)} is unsupported (only aes-128-ctr)`);
  }
  const cipherParams = object(cipherModule, "params", "crypto.cipher");
  const iv = hexBytes(
    text(cipherParams, "iv", "crypto.cipher.params"),
    "crypto.cipher.params.iv",
    16,
  );
  // A BLS secret is 32 bytes and CTR mode keeps the length, so anything else cannot be a key.
  const cipherText = hexBytes(
    text(cipherModule, "message", "crypto.cipher"),
    "crypto.cipher.message",
    32,
  );

  return { kdf, checksum, iv, cipherText, pubkey: parsePubkey(keystore) };
}

/**
 * EIP-2335 password processing: NFKD, then remove the C0 (U+0000–U+001F), DEL (U+007F) and C1
 * (U+0080–U+009F) control codes, then UTF-8. Spaces and all other characters are kept.
 */
export function normalizePassword(password: string): Buffer {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  const stripped = password.normalize("NFKD").replace(/[\u0000-\u001f\u007f-\u009f]/g, "");
  return Buffer.from(stripped, "utf8");
}

function deriveKey(kdf: ScryptParams | Pbkdf2Params, password: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, key: Buffer) => {
      // The KDF error text comes from OpenSSL and never contains the inputs.
      if (err) reject(new KeystoreError(`key derivation failed: ${err.message}`));
      else resolve(key);
    };
    if (kdf.fn === "pbkdf2") {
      pbkdf2(password, kdf.salt, kdf.c, 32, "sha256", done);
    } else {
      const maxmem = scryptMemory(kdf.n, kdf.r, kdf.p) + 1024 * 1024;
      scrypt(password, kdf.salt, 32, { N: kdf.n, r: kdf.r, p: kdf.p, maxmem }, done);
    }
  });
}

/**
 * Decrypts an EIP-2335 v4 keystore (parsed JSON) and returns the 32-byte secret. The caller owns
 * the returned array and should zero it once the key is imported.
 *
 * Throws `KeystoreError`: structure or cost refusals before any KDF runs, then
 * "wrong password or corrupted keystore" when the checksum does not match.
 * Does not check the optional `pubkey` field against the secret; see `verifyKeystorePubkey`.
 */
export async function decryptKeystore(keystore: unknown, password: string): Promise<Uint8Array> {
  const parsed = parseKeystore(keystore);
  const passwordBytes = normalizePassword(password);
  let dk: Buffer;
  try {
    dk = await deriveKey(parsed.kdf, passwordBytes);
  } finally {
    passwordBytes.fill(0);
  }
  const plain: Buffer[] = [];
  try {
    const checksum = createHash("sha256")
      .update(dk.subarray(16, 32))
      .update(parsed.cipherText)
      .digest();
    if (!timingSafeEqual(checksum, parsed.checksum)) {
      fail("wrong password or corrupted keystore (checksum mismatch)");
    }
    const decipher = createDecipheriv("aes-128-ctr", dk.subarray(0, 16), parsed.iv);
    plain.push(decipher.update(parsed.cipherText), decipher.final());
    const secret = new Uint8Array(32);
    let offset = 0;
    for (const part of plain) {
      secret.set(part, offset);
      offset += part.length;
    }
    return secret;
  } finally {
    dk.fill(0);
    for (const part of plain) part.fill(0);
  }
}

/** A keystore's KDF and its cost, without the salt. */
export type KeystoreKdfCost =
  | { fn: "scrypt"; n: number; r: number; p: number }
  | { fn: "pbkdf2"; c: number };

/**
 * Validates the whole keystore exactly as `decryptKeystore` does (same `KeystoreError`s) and
 * returns its KDF cost without running the KDF: the keystore cache (keystore-cache.ts) sizes its
 * own KDF from it, and a malformed keystore is refused before any expensive work.
 */
export function keystoreKdfCost(keystore: unknown): KeystoreKdfCost {
  const { kdf } = parseKeystore(keystore);
  return kdf.fn === "scrypt"
    ? { fn: kdf.fn, n: kdf.n, r: kdf.r, p: kdf.p }
    : { fn: kdf.fn, c: kdf.c };
}

/**
 * The keystore's optional `pubkey` as `0x` + lower-case hex, or undefined when it is absent (or
 * empty). Throws `KeystoreError` when the field is present but not 48 bytes of hex.
 */
export function keystorePubkey(keystore: unknown): string | undefined {
  if (!isJsonObject(keystore)) return undefined;
  return parsePubkey(keystore);
}

/**
 * Throws `KeystoreError` when the keystore names a `pubkey` other than `derived` (the public key
 * of the decrypted secret). A keystore without `pubkey` passes.
 */
export function verifyKeystorePubkey(keystore: unknown, derived: Uint8Array): void {
  const stated = keystorePubkey(keystore);
  if (stated === undefined) return;
  const actual = toHex(derived);
  if (stated !== actual) {
    fail(`keystore pubkey ${stated} does not match the decrypted key's pubkey ${actual}`);
  }
}

/** A failure as shown to an API client: the keystore's own reason, or the error's message. */
export function keystoreFailureReason(error: unknown): string {
  if (error instanceof KeystoreError) return error.reason;
  return error instanceof Error ? error.message : String(error);
}
