/**
 * The BLS signature scheme Ethereum uses: BLS12-381, minimal-pubkey-size (48-byte G1 public
 * keys, 96-byte G2 signatures), proof-of-possession ciphersuite. Two implementations sit behind
 * this interface (blst native, noble pure TypeScript) and must produce identical bytes.
 */
export const ETH_BLS_DST = "BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";

export const SECRET_KEY_BYTES = 32;
export const PUBLIC_KEY_BYTES = 48;
export const SIGNATURE_BYTES = 96;

/** A secret key held inside a backend. The secret itself is never exposed again. */
export interface BlsSecretKey {
  /** Compressed G1 public key, 48 bytes (a copy each time). */
  readonly publicKey: Uint8Array;
  /** The same public key as 0x + 96 lower-case hex digits (the same string each time). */
  readonly pubkey: string;
}

export type BlsBackendName = "blst" | "noble";

export interface BlsBackend {
  readonly name: BlsBackendName;
  /**
   * Takes a 32-byte big-endian secret scalar. Throws (plain Error, message without the key) when
   * it is not 32 bytes, is zero, or is not below the curve order. Callers zero their copy after.
   */
  importSecretKey(secret: Uint8Array): BlsSecretKey;
  /**
   * As `importSecretKey`, but without deriving the public key (about 0.1 ms of CPU with blst, the
   * whole cost of an import): the key takes `publicKey` as given, from a cache that already
   * derived it. The claim is checked before the key's first signature: `sign` derives the public
   * key then, and when it differs the key never signs (`sign` throws PUBLIC_KEY_MISMATCH, then
   * and every time after). Optional: a backend without it imports with `importSecretKey`.
   */
  importClaimedKey?(secret: Uint8Array, publicKey: Uint8Array): BlsSecretKey;
  /**
   * Imports many secrets at once, for start-up: as `importSecretKey` on each, but the backend may
   * derive the public keys elsewhere (the worker pool does it in its workers, in parallel). Every
   * secret is copied before this returns, so callers may zero theirs at once. One result per
   * secret, in order; an invalid secret fails alone, with the error `importSecretKey` would
   * throw. `claimed`, when given, holds for each secret its public key as a cache knows it, or
   * undefined: a claimed public key is taken as `importClaimedKey` takes it (checked before the
   * first signature). Optional: `importSecretKeys` below stands in for a backend without it.
   */
  importSecretKeys?(
    secrets: readonly Uint8Array[],
    claimed?: readonly (Uint8Array | undefined)[],
  ): Promise<BlsImportResult[]>;
  /**
   * Signs `message` (for Ethereum: a 32-byte signing root). Returns the 96-byte compressed
   * signature, or a promise of it when the signing happens elsewhere (the worker pool, pool.ts).
   * A job that waits there while `cancel` is aborted is dropped unsigned (`request_timeout`).
   */
  sign(
    key: BlsSecretKey,
    message: Uint8Array,
    cancel?: AbortSignal,
  ): Uint8Array | Promise<Uint8Array>;
  /** False for any malformed input (bad point encodings, infinity pubkey, wrong lengths); never throws. */
  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean;
  /**
   * Drops a key that leaves the key store: signing with it fails afterwards, and the backend
   * lets go of (and where it can, wipes) the secret. Optional: a backend without it relies on
   * the handle being garbage-collected.
   */
  forget?(key: BlsSecretKey): void;
}

export type BlsImportResult = { ok: true; key: BlsSecretKey } | { ok: false; error: Error };

/** A thrown value as an Error (an import's result carries one). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Why a key imported with a claimed public key refuses to sign: the claim was wrong. */
export const PUBLIC_KEY_MISMATCH =
  "the key's public key does not match its secret (a wrong cached public key): it never signs";

/**
 * `backend.importSecretKeys`, or else one import per secret, one after the other: with
 * `importClaimedKey` where a public key is claimed and the backend has it, `importSecretKey`
 * otherwise.
 */
export function importSecretKeys(
  backend: BlsBackend,
  secrets: readonly Uint8Array[],
  claimed?: readonly (Uint8Array | undefined)[],
): Promise<BlsImportResult[]> {
  if (backend.importSecretKeys) return backend.importSecretKeys(secrets, claimed);
  return Promise.resolve(
    secrets.map((secret, i): BlsImportResult => {
      try {
        const claim = claimed?.[i];
        const key =
          claim !== undefined && backend.importClaimedKey
            ? backend.importClaimedKey(secret, claim)
            : backend.importSecretKey(secret);
        return { ok: true, key };
      } catch (error) {
        return { ok: false, error: asError(error) };
      }
    }),
  );
}

/** A backend that signs on the calling thread (blst, noble): `sign` returns the bytes directly. */
export interface LocalBlsBackend extends BlsBackend {
  sign(key: BlsSecretKey, message: Uint8Array): Uint8Array;
  forget(key: BlsSecretKey): void;
}
