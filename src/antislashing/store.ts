/**
 * Slashing protection storage (EIP-3076). Every backend implements this one interface, and one
 * conformance suite (test/antislashing/) runs against all of them.
 *
 * The only way to record a signature is check-and-insert, atomic per validator: either the
 * message is refused and nothing changes, or it is recorded before the caller may sign it.
 * Re-signing identical data (same slot or target epoch AND the same signing root) is allowed
 * and reports "same_data"; an imported record without a signing root never matches.
 */

import type { DatabaseWatermarks, WatermarkChange } from "./watermarks";

/** 0x + 96 lower-case hex. */
export type PubkeyHex = string;

export interface BlockProposal {
  readonly pubkey: PubkeyHex;
  readonly slot: bigint;
  readonly signingRoot: Uint8Array;
}

export interface AttestationVote {
  readonly pubkey: PubkeyHex;
  readonly sourceEpoch: bigint;
  readonly targetEpoch: bigint;
  readonly signingRoot: Uint8Array;
}

export type RefusalReason =
  | "double_block_proposal"
  | "block_slot_below_low_watermark"
  | "double_vote"
  | "surrounding_vote"
  | "surrounded_vote"
  | "source_after_target"
  | "attestation_source_below_low_watermark"
  | "attestation_target_below_low_watermark"
  | "genesis_validators_root_mismatch"
  /** The database's high watermark (watermarks.ts, `sigil slashing watermark-repair`). */
  | "block_slot_at_or_above_high_watermark"
  | "attestation_at_or_above_high_watermark"
  /** The future-epoch bound (future.ts), applied before the store: such a message is never recorded. */
  | "block_slot_too_far_in_future"
  | "attestation_target_too_far_in_future";

export type Decision =
  | { readonly outcome: "new" }
  | { readonly outcome: "same_data" }
  | { readonly outcome: "refused"; readonly reason: RefusalReason; readonly detail: string };

/**
 * A check-and-insert whose transaction has committed, so that every later check sees its record,
 * but whose record may not be on disk yet. Nothing may leave the signer on the strength of
 * `decision` before `durable` has resolved; work may be done meanwhile.
 */
export interface Staged<T> {
  readonly decision: T;
  /** Resolves once the record, and every record the decision read, is on disk; rejects if it cannot be. */
  readonly durable: Promise<void>;
}

export type StagedDecision = Staged<Decision>;

/** The decision, once it is durable. */
export async function durableDecision<T>(staged: Staged<T>): Promise<T> {
  await staged.durable;
  return staged.decision;
}

/** EIP-3076 "complete" keeps full history; "minimal" keeps watermarks only; "none" is noop. */
export type ProtectionStrategy = "complete" | "minimal" | "none";

export interface InterchangeMetadata {
  readonly interchange_format_version: "5";
  readonly genesis_validators_root: string;
}

export interface InterchangeBlock {
  readonly slot: bigint;
  readonly signingRoot?: Uint8Array;
}

export interface InterchangeAttestation {
  readonly sourceEpoch: bigint;
  readonly targetEpoch: bigint;
  readonly signingRoot?: Uint8Array;
}

/**
 * Low watermarks that hold without a record at them, compared as the lowest record would be: a
 * block slot at or below `blockSlot`, a source epoch below `sourceEpoch`, a target epoch at or below
 * `targetEpoch` is refused. They carry another signer's watermarks over: Web3Signer keeps its low
 * watermarks apart from its records and keeps every record at and above them, and after it prunes
 * sparse blocks its watermark sits below its oldest record.
 *
 * Complete stores: where a validator has a floor, it IS that side's low watermark, in place of
 * the lowest record. The import that brings it vouches that every message at or above it is among
 * the records (Web3Signer's own invariant), so a slot between the floor and the oldest record is
 * signable, as Web3Signer would sign it. Never lower than before: an imported floor is raised to
 * the watermark the validator had before that import (its floor, else its lowest record); an import
 * of records without floors raises an existing floor to the lowest record kept (EIP-3076
 * conditions 2, 4, 5 for what it brought); a prune raises the block and target floors to the
 * lowest records it keeps.
 * Minimal stores fold floors into their watermarks. Not part of EIP-3076: an interchange file has
 * no place for them, and an export carries records only.
 */
export interface ValidatorFloors {
  readonly blockSlot?: bigint;
  readonly sourceEpoch?: bigint;
  readonly targetEpoch?: bigint;
}

export interface InterchangeValidator {
  readonly pubkey: PubkeyHex;
  readonly blocks: readonly InterchangeBlock[];
  readonly attestations: readonly InterchangeAttestation[];
  /** Raised with the records, in the same import; see ValidatorFloors. */
  readonly floors?: ValidatorFloors;
}

/** A parsed interchange, read validator by validator so that large files are never held whole. */
export interface InterchangeSource {
  readonly metadata: InterchangeMetadata;
  validators(): AsyncIterable<InterchangeValidator>;
}

export interface ImportReport {
  readonly validators: number;
  readonly blocks: number;
  readonly attestations: number;
}

export interface SlashingStore {
  readonly backend: "sqlite" | "postgres" | "dynamodb" | "noop";
  readonly strategy: ProtectionStrategy;
  /**
   * Where the records live, for log lines and errors: the sqlite file, the PostgreSQL database
   * (never its password), the DynamoDB table.
   */
  readonly location: string;
  /** The genesis validators root recorded in the database; null while none is. */
  storedGenesisValidatorsRoot(): Promise<Uint8Array | null>;
  /**
   * Records `root` as the database's chain when none is recorded yet (creation binds the database
   * to the configured network); resolves, once durable, with the root recorded either way, which
   * differs from `root` when the database belongs to another chain.
   */
  bindGenesisValidatorsRoot(root: Uint8Array): Promise<Uint8Array>;
  /**
   * A durable write that changes nothing, through the same path as a check's (health, after a
   * write failed: has the database become writable again?). Rejects when it cannot be made.
   */
  probeWrite(): Promise<void>;
  checkAndInsertBlock(
    genesisValidatorsRoot: Uint8Array,
    proposal: BlockProposal,
  ): Promise<Decision>;
  checkAndInsertAttestation(
    genesisValidatorsRoot: Uint8Array,
    vote: AttestationVote,
  ): Promise<Decision>;
  /**
   * Optional, for a backend whose commit is not yet durable (sqlite: the WAL is synced after the
   * commit): as checkAndInsertBlock, but resolves at the commit with the sync still to come, so
   * that the signature can be computed while the disk syncs. A backend without it answers only
   * once durable. The same decisions, by the same rules, as checkAndInsertBlock.
   */
  stageBlock?(genesisValidatorsRoot: Uint8Array, proposal: BlockProposal): Promise<StagedDecision>;
  /** Optional: checkAndInsertAttestation staged, as stageBlock. */
  stageAttestation?(
    genesisValidatorsRoot: Uint8Array,
    vote: AttestationVote,
  ): Promise<StagedDecision>;
  /**
   * Imports an interchange. A genesis validators root other than the stored one refuses the
   * whole import before anything is written (throws SlashingImportError). Complete backends
   * keep every record; minimal ones raise their watermarks to the imported maxima. Floors a
   * validator carries are raised in the same step as its records (complete backends: the same
   * transaction; minimal ones fold them into the watermarks).
   */
  importInterchange(source: InterchangeSource): Promise<ImportReport>;
  /** Records of the given validators (all when omitted), in the interchange's shape. */
  exportInterchange(pubkeys?: readonly PubkeyHex[]): Promise<InterchangeSource>;
  /**
   * Complete backends only: per validator, drops blocks and attestations older than the newest
   * `epochs` epochs (blocks: `epochs * 32` slots). Sound because the low-watermark rules use the
   * oldest record kept, so pruning can only make the store refuse more, never less.
   */
  prune?(epochs: bigint): Promise<{ blocks: number; attestations: number }>;
  /**
   * The database-wide low and high watermarks (watermarks.ts), as stored now: every check applies
   * them in its own atomic step. The noop backend has none.
   */
  databaseWatermarks(): Promise<DatabaseWatermarks>;
  /**
   * `sigil slashing watermark-repair`: one atomic change of the stored watermarks (a low one only
   * rises); resolves, once durable, with the watermarks after it. The noop backend refuses it.
   */
  changeWatermarks(change: WatermarkChange): Promise<DatabaseWatermarks>;
  /** Throws when the database cannot be reached (health check). */
  ping(): Promise<void>;
  /** Optional (sqlite writers): how the database's upkeep goes, for health and metrics. */
  readonly maintenance?: () => StoreMaintenance;
  close(): Promise<void>;
}

/** sqlite: the WAL's checkpoints (copies of its records into the database file). */
export interface StoreMaintenance {
  /** Why the last checkpoint failed; null while they succeed. */
  readonly checkpointFailing: string | null;
  /** Checkpoints that failed since the database was opened. */
  readonly checkpointFailures: number;
  /** Size of the -wal file: it grows while checkpoints fail. */
  readonly walBytes: number;
}

export class SlashingImportError extends Error {
  override readonly name = "SlashingImportError";
}

/**
 * Why a slashing protection database cannot be used as it is found (opening it, at start-up):
 *   missing          it does not exist; only `sigil slashing init` (or --init-slashing-protection)
 *                    creates one
 *   not_initialized  it exists but records no genesis validators root (made by an older sigil,
 *                    never used): init binds it
 *   not_a_database   the file is empty or not a sigil slashing protection database
 *   replaced         the files at the path are not the ones the last writer had open
 *   chain_mismatch   it belongs to another chain than the configured network
 *   unknown_chain    creating or binding one needs the network's genesis validators root, which
 *                    the configuration does not give
 *   in_use           another process writes it (sqlite: one writer per file)
 *   linked           sqlite: the main file has other names (hard links), each a writer's way in
 */
export type DatabaseProblem =
  | "missing"
  | "not_initialized"
  | "not_a_database"
  | "replaced"
  | "chain_mismatch"
  | "unknown_chain"
  | "in_use"
  | "linked";

export class SlashingDatabaseError extends Error {
  override readonly name = "SlashingDatabaseError";
  constructor(
    readonly problem: DatabaseProblem,
    message: string,
  ) {
    super(message);
  }
}

/** Export from a store that never recorded a genesis validators root: there is nothing to export. */
export class NothingToExportError extends Error {
  override readonly name = "NothingToExportError";
}
