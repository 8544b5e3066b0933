import type { AuthStore, TokenKind, TokenRecord } from "../auth/store";

export type { TokenKind, TokenRecord };

/**
 * signer_state: runtime policies and tokens of the stateful mode (and, with the seal feature,
 * operators and wrapped shares). One interface, three backends (sqlite, postgres, dynamodb), one
 * conformance suite (test/state/conformance.ts).
 */

/** The seal record as stored: JSON text (the seal feature owns its format) and a version. */
export interface SealSlot {
  readonly body: string;
  /** 1 after creation, +1 on every successful putSeal. */
  readonly version: number;
}

/** The Auth API's store (auth/store.ts), plus what only the stateful lifecycle needs. */
export interface SignerStateStore extends AuthStore {
  readonly backend: "sqlite" | "postgres" | "dynamodb";

  /** Deletes tokens that expired at or before `now`; returns how many. */
  deleteExpiredTokens(now: number): Promise<number>;
  /**
   * Atomically deletes the token with that hash and returns it, or undefined when absent; of two
   * concurrent calls at most one gets it (one-use setup and registration tokens).
   */
  consumeToken(hash: string): Promise<TokenRecord | undefined>;

  /**
   * The seal record (docs/architecture.md, "Seal lifecycle": operators, wrapped shares, check
   * value) as an opaque JSON text, with its version; undefined while the signer is uninitialized.
   */
  getSeal(): Promise<SealSlot | undefined>;
  /**
   * Compare-and-set of the seal record. `expectedVersion` undefined: create it, only if none
   * exists. Otherwise replace it only if its version is still `expectedVersion`. On success the
   * stored version becomes `(expectedVersion ?? 0) + 1` and true is returned; false means
   * another writer got there first and nothing changed.
   */
  putSeal(body: string, expectedVersion: number | undefined): Promise<boolean>;

  ping(): Promise<void>;
  close(): Promise<void>;
}
