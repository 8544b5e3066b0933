/**
 * Pieces shared by the BLS backends: secret-key validation and the opaque key handle.
 *
 * The handle carries only the public key. Each backend keeps the secret in a WeakMap inside its
 * own closure, keyed by the handle, so the secret is not a property of the handle at all:
 * JSON.stringify, String(), console.log / util.inspect and Object.keys cannot reach it.
 */
import { bytesEqual } from "../wire/hex";
import {
  type BlsBackendName,
  type BlsSecretKey,
  PUBLIC_KEY_BYTES,
  PUBLIC_KEY_MISMATCH,
  SECRET_KEY_BYTES,
  SIGNATURE_BYTES,
} from "./backend";

/** Order r of the BLS12-381 scalar field (the G1/G2 subgroup order). */
export const CURVE_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n;

const INSPECT = Symbol.for("nodejs.util.inspect.custom");

/** CURVE_ORDER as 32 big-endian bytes, for `checkSecretScalar`. */
const CURVE_ORDER_BYTES = Uint8Array.fromHex(CURVE_ORDER.toString(16).padStart(64, "0"));

/**
 * Checks a 32-byte big-endian secret scalar: not zero, below the curve order. Error messages
 * never include the key's bytes. Byte by byte, without bigints: a worker checks every key it
 * imports, and the bigint arithmetic of 100,000 keys was megabytes of garbage at start-up.
 */
export function checkSecretScalar(secret: Uint8Array): void {
  if (!(secret instanceof Uint8Array)) {
    throw new Error("BLS secret key must be a byte array");
  }
  if (secret.length !== SECRET_KEY_BYTES) {
    throw new Error(
      `BLS secret key must be ${SECRET_KEY_BYTES} bytes, got ${String(secret.length)}`,
    );
  }
  let zero = true;
  // -1: below the order so far, 0: equal so far, 1: above: the first differing byte decides.
  let order = 0;
  for (let i = 0; i < SECRET_KEY_BYTES; i++) {
    const byte = secret[i] as number;
    if (byte !== 0) zero = false;
    if (order === 0) {
      const limit = CURVE_ORDER_BYTES[i] as number;
      if (byte !== limit) order = byte < limit ? -1 : 1;
    }
  }
  if (zero) throw new Error("BLS secret key is zero");
  if (order >= 0) throw new Error("BLS secret key is not below the curve order");
}

/** `checkSecretScalar`, then the scalar as a bigint. */
export function parseSecretScalar(secret: Uint8Array): bigint {
  checkSecretScalar(secret);
  return BigInt(`0x${toHex(secret)}`);
}

/** Bare hex (no 0x), for comparing and quoting keys and signatures in messages. */
export function toHex(bytes: Uint8Array): string {
  return bytes.toHex();
}

/**
 * The handle. It keeps the public key once, as the hex text the key store is keyed by (the loader
 * uses this very string), and makes the bytes and its label when asked for: a signer holds one
 * handle per key, and 100,000 keys' worth of a second copy and stored labels was memory and
 * garbage-collector work at every start-up for nothing.
 */
class KeyHandle implements BlsSecretKey {
  readonly #pubkey: string;
  readonly #backend: BlsBackendName;

  constructor(backend: BlsBackendName, publicKey: Uint8Array) {
    if (publicKey.length !== PUBLIC_KEY_BYTES) {
      throw new Error(`BLS public key must be ${PUBLIC_KEY_BYTES} bytes`);
    }
    this.#pubkey = `0x${toHex(publicKey)}`;
    this.#backend = backend;
    Object.freeze(this);
  }

  /** A new array each time, so no caller can alter the key's public key in place. */
  get publicKey(): Uint8Array {
    return Uint8Array.fromHex(this.#pubkey.slice(2));
  }

  get pubkey(): string {
    return this.#pubkey;
  }

  toJSON(): { backend: BlsBackendName; publicKey: string } {
    return { backend: this.#backend, publicKey: this.#pubkey };
  }

  toString(): string {
    return `BlsSecretKey(${this.#backend}, pubkey ${this.#pubkey})`;
  }

  [INSPECT](): string {
    return this.toString();
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

/**
 * The check behind `importClaimedKey`: a key imported with a claimed public key is compared with
 * its derived public key before its first signature; a key whose claim was wrong never signs.
 */
export function createClaimCheck(): {
  /** Marks a key just imported with a claimed public key. */
  claimed(key: BlsSecretKey): void;
  /** Before signing: passes, or throws PUBLIC_KEY_MISMATCH (and does so for good). */
  check(key: BlsSecretKey, derive: () => Uint8Array): void;
} {
  const unchecked = new WeakSet<BlsSecretKey>();
  const wrong = new WeakSet<BlsSecretKey>();
  return {
    claimed(key) {
      unchecked.add(key);
    },
    check(key, derive) {
      if (wrong.has(key)) throw new Error(PUBLIC_KEY_MISMATCH);
      if (!unchecked.has(key)) return;
      if (!bytesEqual(derive(), key.publicKey)) {
        wrong.add(key);
        throw new Error(PUBLIC_KEY_MISMATCH);
      }
      unchecked.delete(key);
    },
  };
}
