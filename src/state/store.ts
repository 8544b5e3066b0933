import type { Policy } from "../auth/types";

/**
 * signer_state: runtime policies and tokens of the stateful mode (and, with the seal feature,
 * operators and wrapped shares). One interface, three backends (sqlite, postgres, dynamodb), one
 * conformance suite (test/state/conformance.ts).
 */

export type TokenKind = "management" | "client" | "setup";

/** A token as stored: never the token itself, only the SHA-256 of it. */
export interface TokenRecord {
  /** Opaque id used to list and revoke the token; not secret. */
  readonly accessor: string;
  /** Hex SHA-256 of the token. */
  readonly hash: string;
  readonly kind: TokenKind;
  readonly policies: readonly string[];
  /** CIDRs the token is accepted from; empty = anywhere. Never set on management tokens. */
  readonly cidrs: readonly string[];
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  /** Milliseconds since the epoch; undefined = no expiry (management tokens). */
  readonly expiresAt?: number;
}

/** The seal record as stored: JSON text (the seal feature owns its format) and a version. */
export interface SealSlot {
  readonly body: string;
  /** 1 after creation, +1 on every successful putSeal. */
  readonly version: number;
}

export interface SignerStateStore {
  readonly backend: "sqlite" | "postgres" | "dynamodb";

  /** False when a policy of that name exists (nothing changes). */
  createPolicy(policy: Policy): Promise<boolean>;
  /** False when no policy of that name exists (nothing changes). */
  updatePolicy(policy: Policy): Promise<boolean>;
  getPolicy(name: string): Promise<Policy | undefined>;
  /** Sorted by name. */
  listPolicies(): Promise<Policy[]>;
  deletePolicy(name: string): Promise<boolean>;

  /** Throws if the accessor or hash already exists. */
  createToken(token: TokenRecord): Promise<void>;
  /** The token with that hash, if it exists (expired ones included: callers decide). */
  findToken(hash: string): Promise<TokenRecord | undefined>;
  /** Sorted by creation time. */
  listTokens(): Promise<TokenRecord[]>;
  revokeToken(accessor: string): Promise<boolean>;
  /** Deletes tokens that expired at or before `now`; returns how many. */
  deleteExpiredTokens(now: number): Promise<number>;
  /**
   * Atomically deletes the token with that hash and returns it, or undefined when absent; of two
   * concurrent calls at most one gets it (one-use setup and registration tokens).
   */
  consumeToken(hash: string): Promise<TokenRecord | undefined>;

  /**
   * The seal record (DESIGN §8: operators, wrapped shares, check value) as an opaque JSON text,
   * with its version; undefined while the signer is uninitialized.
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
