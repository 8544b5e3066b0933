/**
 * The messages between the signer's sqlite slashing store on the main thread (thread-store.ts)
 * and the slashing thread that owns the database (thread-worker.ts).
 *
 * The checks of one main-thread turn travel in ONE `checks` message, packed into flat arrays (a
 * structured clone costs per object: one object per check cost more than the arrays' bytes); the
 * thread answers each such message with ONE `decided` at the commit, and each barrier (the WAL
 * sync that makes a commit durable) with ONE `durable` once it settles. Everything else is a
 * `call` of a SlashingStore method, answered by a `reply` in the order of completion.
 */

import type { LogFields } from "../../../observability/log";
import type { Decision, RefusalReason, StoreMaintenance } from "../../store";
import { NothingToExportError, SlashingDatabaseError, SlashingImportError } from "../../store";
import { SqliteSchemaError } from "./store";
import { DatabaseFileChangedError, WalSyncError } from "./wal-sync";

/** What the main thread asks the thread to open: openSqliteStore's options that can cross. */
export interface ThreadOpenOptions {
  readonly create: boolean;
  readonly checkpoints: "inline" | "background";
  readonly busyTimeoutMs?: number;
  /** Where the checkpoint worker's entry is (the main thread knows the binary's layout). */
  readonly checkpointWorkerUrl?: string;
}

/** The methods forwarded as calls (the checks travel packed instead). */
export type ForwardedMethod =
  | "storedGenesisValidatorsRoot"
  | "bindGenesisValidatorsRoot"
  | "probeWrite"
  | "importInterchange"
  | "exportInterchange"
  | "prune"
  | "databaseWatermarks"
  | "changeWatermarks"
  | "ping"
  | "close";

/** A block is one slot; an attestation a source and a target epoch. */
export const KIND_BLOCK = 0;
export const KIND_ATTESTATION = 1;

/**
 * One turn's checks. Check i is `kinds[i]`, for `pubkeys[i]`, with numbers `numbers[2i]` (slot or
 * source epoch) and `numbers[2i+1]` (target epoch; 0 for a block), the genesis validators root at
 * `roots[64i..64i+32)` and the signing root at `roots[64i+32..64i+64)`.
 */
export interface ChecksMessage {
  type: "checks";
  batch: number;
  kinds: Uint8Array;
  pubkeys: string[];
  numbers: BigUint64Array;
  roots: Uint8Array;
}

export type ToThread =
  | { type: "open"; path: string; options: ThreadOpenOptions }
  | ChecksMessage
  | { type: "call"; id: number; method: ForwardedMethod; args: unknown[] };

/** A decision's outcome as one byte; an error is a check that rejected (nothing recorded). */
export const OUTCOME_NEW = 0;
export const OUTCOME_SAME_DATA = 1;
export const OUTCOME_REFUSED = 2;
export const OUTCOME_ERROR = 3;

/**
 * The answer to one `checks` message, at the commit. Check i has outcome `outcomes[i]` and, when
 * staged, the barrier `barriers[i]` that makes it durable (a later `durable` message settles it).
 * Refusals and errors, rare, carry their words in `details`.
 */
export interface DecidedMessage {
  type: "decided";
  batch: number;
  outcomes: Uint8Array;
  barriers: Uint32Array;
  details: (
    | { index: number; reason: RefusalReason; detail: string }
    | { index: number; error: EncodedError }
  )[];
}

export type FromThread =
  | { type: "opened"; location: string; upkeep: StoreMaintenance | null }
  | { type: "open_failed"; error: EncodedError }
  | DecidedMessage
  | { type: "durable"; barrier: number; error?: EncodedError }
  | { type: "reply"; id: number; ok: true; value: unknown }
  | { type: "reply"; id: number; ok: false; error: EncodedError }
  | { type: "upkeep"; upkeep: StoreMaintenance }
  | {
      type: "log";
      level: "info" | "warn" | "error";
      message: string;
      fields?: LogFields;
    };

/** An error as it crosses: the class (by name), its message, and what callers read of it. */
export interface EncodedError {
  name: string;
  message: string;
  problem?: string;
  code?: string;
}

export function encodeError(error: unknown): EncodedError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const encoded: EncodedError = { name: error.name, message: error.message };
  if (error instanceof SlashingDatabaseError) encoded.problem = error.problem;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") encoded.code = code;
  return encoded;
}

/** The error the thread threw, as the same class: callers (the CLI, health) tell them apart. */
export function decodeError(encoded: EncodedError): Error {
  const { name, message } = encoded;
  switch (name) {
    case "SlashingDatabaseError":
      return new SlashingDatabaseError(
        encoded.problem as ConstructorParameters<typeof SlashingDatabaseError>[0],
        message,
      );
    case "SqliteSchemaError":
      return new SqliteSchemaError(message);
    case "SlashingImportError":
      return new SlashingImportError(message);
    case "NothingToExportError":
      return new NothingToExportError(message);
    case "WalSyncError":
      return new WalSyncError(message);
    case "DatabaseFileChangedError":
      return new DatabaseFileChangedError(message);
  }
  const error: Error & { code?: string } =
    name === "TypeError"
      ? new TypeError(message)
      : name === "RangeError"
        ? new RangeError(message)
        : new Error(message);
  if (error.name !== name) error.name = name;
  if (encoded.code !== undefined) error.code = encoded.code;
  return error;
}

/** The decision of check `index` of a `decided` message (not for OUTCOME_ERROR). */
export function decisionAt(message: DecidedMessage, index: number): Decision {
  const outcome = message.outcomes[index];
  if (outcome === OUTCOME_NEW) return NEW;
  if (outcome === OUTCOME_SAME_DATA) return SAME;
  const found = message.details.find((d) => d.index === index);
  if (found && "reason" in found) {
    return { outcome: "refused", reason: found.reason, detail: found.detail };
  }
  throw new Error(`slashing thread: no decision for check ${index}`);
}

const NEW: Decision = Object.freeze({ outcome: "new" });
const SAME: Decision = Object.freeze({ outcome: "same_data" });
