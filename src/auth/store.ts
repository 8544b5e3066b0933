import type { Policy } from "./types";

/**
 * The storage auth needs, defined here and implemented by signer_state (state/): auth reads
 * tokens and policies, and the Auth API changes them. Nothing here knows which database holds
 * them.
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

/** What authenticating a request reads. */
export interface TokenLookup {
  /** The token with that hash, if it exists (expired ones included: callers decide). */
  findToken(hash: string): Promise<TokenRecord | undefined>;
  getPolicy(name: string): Promise<Policy | undefined>;
}

/** What the Auth API reads and changes. */
export interface AuthStore extends TokenLookup {
  /** False when a policy of that name exists (nothing changes). */
  createPolicy(policy: Policy): Promise<boolean>;
  /** False when no policy of that name exists (nothing changes). */
  updatePolicy(policy: Policy): Promise<boolean>;
  /** Sorted by name. */
  listPolicies(): Promise<Policy[]>;
  deletePolicy(name: string): Promise<boolean>;
  /** Throws if the accessor or hash already exists. */
  createToken(token: TokenRecord): Promise<void>;
  /** Sorted by creation time. */
  listTokens(): Promise<TokenRecord[]>;
  revokeToken(accessor: string): Promise<boolean>;
}
