/**
 * What the parts of the sqlite slashing store share: the encoding of uint64 columns (see the uint64
 * paragraph of checks.ts) and the access that the import, export and prune functions get to the
 * store's connection and state.
 */
import type { Database } from "bun:sqlite";
import type { WalSync } from "./wal-sync";

const OFFSET = 1n << 63n;
export const enc = (value: bigint): bigint => value - OFFSET;
export const dec = (value: bigint): bigint => value + OFFSET;

export type Row = Record<string, unknown>;

export function asBigint(value: unknown): bigint | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return value;
  if (typeof value === "number") return BigInt(value);
  throw new Error(`sqlite: expected an integer, got ${typeof value}`);
}

/** An encoded column value, decoded; null stays null. */
export function decoded(value: unknown): bigint | null {
  const raw = asBigint(value);
  return raw === null ? null : dec(raw);
}

/** The low watermark (both encoded): the floor when there is one, else the lowest record. */
export function watermark(lowestRecord: unknown, floor: unknown): bigint | null {
  const effective = asBigint(floor) ?? asBigint(lowestRecord);
  return effective === null ? null : dec(effective);
}

export function encFloor(value: bigint | undefined): bigint | null {
  return value === undefined ? null : enc(value);
}

export function asRoot(value: unknown): Uint8Array | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Uint8Array) return new Uint8Array(value);
  throw new Error(`sqlite: expected a blob, got ${typeof value}`);
}

/** What interchange.ts and maintenance.ts use of an open store (SqliteSlashingStore). */
export interface StoreAccess {
  readonly db: Database;
  readonly durability: WalSync;
  isClosed(): boolean;
  assertOpen(): void;
  /** The stored genesis validators root, or null when there is none yet. */
  readGvr(): Uint8Array | null;
  /** Inside a transaction: the stored root, storing `requested` if there is none yet. */
  checkOrStoreGvr(requested: Uint8Array): Uint8Array;
  validatorId(pubkey: string): bigint | null;
}
