/**
 * Pieces shared by the BLS backends: secret-key validation and the opaque key handle.
 *
 * The handle carries only the public key. Each backend keeps the secret in a WeakMap inside its
 * own closure, keyed by the handle, so the secret is not a property of the handle at all:
 * JSON.stringify, String(), console.log / util.inspect and Object.keys cannot reach it.
 */
import {
  type BlsBackendName,
  type BlsSecretKey,
  PUBLIC_KEY_BYTES,
  SECRET_KEY_BYTES,
  SIGNATURE_BYTES,
} from "./backend";

/** Order r of the BLS12-381 scalar field (the G1/G2 subgroup order). */
export const CURVE_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n;

const INSPECT = Symbol.for("nodejs.util.inspect.custom");

/**
 * Checks a 32-byte big-endian secret scalar and returns it as a bigint. Error messages never
 * include the key's bytes.
 */
export function parseSecretScalar(secret: Uint8Array): bigint {
  if (!(secret instanceof Uint8Array)) {
    throw new Error("BLS secret key must be a byte array");
  }
  if (secret.length !== SECRET_KEY_BYTES) {
    throw new Error(
      `BLS secret key must be ${SECRET_KEY_BYTES} bytes, got ${String(secret.length)}`,
    );
  }
  let scalar = 0n;
  for (const byte of secret) scalar = (scalar << 8n) | BigInt(byte);
  if (scalar === 0n) throw new Error("BLS secret key is zero");
  if (scalar >= CURVE_ORDER) throw new Error("BLS secret key is not below the curve order");
  return scalar;
}

/** Bare hex (no 0x), for comparing and quoting keys and signatures in messages. */
export function toHex(bytes: Uint8Array): string {
  return bytes.toHex();
}

class KeyHandle implements BlsSecretKey {
  readonly #publicKey: Uint8Array;
  readonly #label: string;
  readonly #pubkeyHex: string;
  readonly #backend: BlsBackendName;

  constructor(backend: BlsBackendName, publicKey: Uint8Array) {
    if (publicKey.length !== PUBLIC_KEY_BYTES) {
      throw new Error(`BLS public key must be ${PUBLIC_KEY_BYTES} bytes`);
    }
    this.#publicKey = Uint8Array.from(publicKey);
    this.#backend = backend;
    this.#pubkeyHex = `0x${toHex(publicKey)}`;
    this.#label = `BlsSecretKey(${backend}, pubkey ${this.#pubkeyHex})`;
    Object.freeze(this);
  }

  /** A copy each time, so no caller can alter the key's public key in place. */
  get publicKey(): Uint8Array {
    return this.#publicKey.slice();
  }

  toJSON(): { backend: BlsBackendName; publicKey: string } {
    return { backend: this.#backend, publicKey: this.#pubkeyHex };
  }

  toString(): string {
    return this.#label;
  }

  [INSPECT](): string {
    return this.#label;
  }
}

export function createKeyHandle(backend: BlsBackendName, publicKey: Uint8Array): BlsSecretKey {
  return new KeyHandle(backend, publicKey);
}

/** Length checks every verify does before touching the curve library (compressed encodings only). */
export function hasVerifyShape(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): boolean {
  return (
    publicKey instanceof Uint8Array &&
    message instanceof Uint8Array &&
    signature instanceof Uint8Array &&
    publicKey.length === PUBLIC_KEY_BYTES &&
    signature.length === SIGNATURE_BYTES
  );
}
