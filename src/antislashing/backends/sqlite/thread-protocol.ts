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

/** A validator's public key, compressed: it crosses as its 48 bytes, not as its 98-character hex. */
const PUBKEY_BYTES = 48;

/**
 * One turn's checks, packed into ONE byte array: a structured clone costs per object and per
 * typed array (the BLS jobs' message measured 5.2–5.9 µs of CPU for eight jobs in three arrays,
 * 3.2–3.9 in one; src/bls/protocol.ts), and this message crosses for every signed request.
 * Layout for `count` checks: the numbers (uint64 pairs at 0: the slot or source epoch, then the
 * target epoch, 0 for a block), the roots (at 16·count, 64 bytes a check: the genesis validators
 * root, then the signing root), the public keys (at 80·count, 48 bytes a check) and the kinds (at
 * 128·count, a byte a check).
 */
export interface ChecksMessage {
  type: "checks";
  batch: number;
  count: number;
  packed: Uint8Array;
}

/** One check as the proxy queued it (pubkey: 0x + 96 lower-case hex, checked already). */
export interface CheckToSend {
  readonly kind: number;
  readonly gvr: Uint8Array;
  readonly pubkey: string;
  readonly first: bigint;
  readonly second: bigint;
  readonly signingRoot: Uint8Array;
}

/** A check as the thread reads it back; the roots are views into the message's bytes. */
export interface ReceivedCheck extends CheckToSend {}

export function packChecks(batch: number, checks: readonly CheckToSend[]): ChecksMessage {
  const count = checks.length;
  // Zeroed, not allocUnsafe: no stale bytes of the process cross, whatever a caller sent.
  const packed = Buffer.alloc(129 * count);
  const numbers = new BigUint64Array(packed.buffer, 0, 2 * count);
  for (let i = 0; i < count; i++) {
    const check = checks[i] as CheckToSend;
    numbers[2 * i] = check.first;
    numbers[2 * i + 1] = check.second;
    packed.set(check.gvr, 16 * count + 64 * i);
    packed.set(check.signingRoot, 16 * count + 64 * i + 32);
    // The hex after "0x" straight into place: no Uint8Array per key.
    packed.write(check.pubkey.slice(2), 80 * count + PUBKEY_BYTES * i, PUBKEY_BYTES, "hex");
    packed[128 * count + i] = check.kind;
  }
  return { type: "checks", batch, count, packed };
}

export function unpackChecks(message: ChecksMessage): ReceivedCheck[] {
  const { count } = message;
  const packed = aligned(message.packed);
  const numbers = new BigUint64Array(packed.buffer, packed.byteOffset, 2 * count);
  const bytes = Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
  const checks: ReceivedCheck[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const roots = 16 * count + 64 * i;
    const key = 80 * count + PUBKEY_BYTES * i;
    checks[i] = {
      kind: bytes[128 * count + i] as number,
      gvr: packed.subarray(roots, roots + 32),
      signingRoot: packed.subarray(roots + 32, roots + 64),
      pubkey: `0x${bytes.toString("hex", key, key + PUBKEY_BYTES)}`,
      first: numbers[2 * i] as bigint,
      second: numbers[2 * i + 1] as bigint,
    };
  }
  return checks;
}

/** The bytes at an offset a 64-bit view can start at (a clone starts at 0; copied otherwise). */
function aligned(packed: Uint8Array): Uint8Array {
  return packed.byteOffset % 8 === 0 ? packed : packed.slice();
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
 * The answer to one `checks` message, at the commit, in one byte array as well: for `count`
 * checks, the barrier of each (uint32 at 0: the `durable` message that settles it; 0 for an
 * error) then its outcome (a byte, at 4·count). Refusals and errors, rare, carry their words in
 * `details` (null when there are none: no array to clone).
 */
export interface DecidedMessage {
  type: "decided";
  batch: number;
  count: number;
  packed: Uint8Array;
  details: DecisionDetail[] | null;
}

export type DecisionDetail =
  | { index: number; reason: RefusalReason; detail: string }
  | { index: number; error: EncodedError };

/** An empty `decided` answer for `count` checks: fill in `barriers` and `outcomes`, then send it. */
export function decidedAnswer(
  batch: number,
  count: number,
): { message: DecidedMessage; barriers: Uint32Array; outcomes: Uint8Array } {
  const packed = new Uint8Array(5 * count);
  return {
    message: { type: "decided", batch, count, packed, details: null },
    barriers: new Uint32Array(packed.buffer, 0, count),
    outcomes: packed.subarray(4 * count),
  };
}

/** The barriers and outcomes of a `decided` answer. */
export function readDecided(message: DecidedMessage): {
  barriers: Uint32Array;
  outcomes: Uint8Array;
} {
  const { count } = message;
  const packed = message.packed.byteOffset % 4 === 0 ? message.packed : message.packed.slice();
  return {
    barriers: new Uint32Array(packed.buffer, packed.byteOffset, count),
    outcomes: packed.subarray(4 * count),
  };
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
export function decisionAt(message: DecidedMessage, outcome: number, index: number): Decision {
  if (outcome === OUTCOME_NEW) return NEW;
  if (outcome === OUTCOME_SAME_DATA) return SAME;
  const found = message.details?.find((d) => d.index === index);
  if (found && "reason" in found) {
    return { outcome: "refused", reason: found.reason, detail: found.detail };
  }
  throw new Error(`slashing thread: no decision for check ${index}`);
}

const NEW: Decision = Object.freeze({ outcome: "new" });
const SAME: Decision = Object.freeze({ outcome: "same_data" });
