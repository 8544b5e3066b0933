/**
 * EIP-3076 slashing protection rules as pure functions: no IO, no clock, no database. A backend
 * fetches the few facts below for ONE validator, calls a `decide*` function, and inserts the new
 * record (complete) or raises the watermark (minimal) iff the outcome is "new" — all inside the
 * same per-validator critical section (sqlite: one BEGIN IMMEDIATE transaction; postgres: one
 * statement or function holding a per-validator lock; dynamodb: one conditional write).
 *
 * Vocabulary. A "record" is a signed (or imported) block `(slot, root)` or attestation
 * `(source, target, root)`. `root` is null for an imported record without `signing_root`; a null
 * root never equals anything, not even another null root (EIP-3076: "a special null value which
 * is distinct from all other signing roots"). A root of 32 zero bytes is an ordinary root.
 *
 * ─── COMPLETE strategy (sqlite, postgres): every record kept ────────────────────────────────────
 *
 * Block (slot S, root R). Facts (`BlockHistory`):
 *   sameSlot  a record with slot = S; if several exist (possible only after importing slashable
 *             data), one whose root is NOT R (or is null) if there is such a record
 *   minSlot   MIN(slot) over the validator's records (the low watermark), null when none; a
 *             backend hands the validator's floor instead where it has one (ValidatorFloors)
 * Decision, first match wins:
 *   1. sameSlot exists: root = R (non-null) → same_data (nothing inserted); else → double_block_proposal
 *   2. minSlot ≠ null and S <= minSlot → block_slot_below_low_watermark       (EIP-3076 condition 2)
 *   3. → new (insert)
 *
 * Attestation (source s, target t, root R). Facts (`AttestationHistory`):
 *   sameTarget       a record with target = t; if several, one that does NOT match, i.e. whose
 *                    source ≠ s or whose root ≠ R (or is null), if there is one
 *   surroundedByNew  any record with source > s AND target < t    (the new vote would surround it)
 *   surroundingNew   any record with source < s AND target > t    (it surrounds the new vote)
 *   minSource        MIN(source) over the validator's records, null when none (or its floor)
 *   minTarget        MIN(target) over the validator's records, null when none (or its floor)
 * Decision, first match wins:
 *   1. s > t → source_after_target (never signable, whatever is stored)
 *   2. sameTarget exists: source = s and root = R (non-null) → same_data; else → double_vote
 *   3. surroundedByNew exists → surrounding_vote                   (is_slashable_attestation_data)
 *   4. surroundingNew exists → surrounded_vote
 *   5. minSource ≠ null and s < minSource → attestation_source_below_low_watermark  (condition 4)
 *   6. minTarget ≠ null and t <= minTarget → attestation_target_below_low_watermark (condition 5)
 *   7. → new (insert)
 * The same-data exceptions of conditions 2 and 5 are rules 1/2 above: a repeat is recognised before
 * any watermark is looked at. Whether the stored record came from an import or from signing does
 * not matter (EIP-3076 "Advice for complete databases": enforce 2, 4, 5 at all times).
 *
 * The facts map onto single indexed lookups; in PostgreSQL one round trip can fetch all of them,
 * e.g. for an attestation (validator $v, new $s/$t/$r; the sqlite backend does the same with
 * UNION ALL and INDEXED BY):
 *
 *   SELECT
 *     (SELECT row(source_epoch, target_epoch, signing_root) FROM signed_attestations
 *       WHERE validator_id = $v AND target_epoch = $t
 *       ORDER BY (source_epoch = $s AND signing_root IS NOT DISTINCT FROM $r) LIMIT 1) AS same_target,
 *     --  (false sorts first: a non-matching record is preferred; a NULL root never matches)
 *     (SELECT row(...) FROM signed_attestations
 *       WHERE validator_id = $v AND source_epoch > $s AND target_epoch < $t LIMIT 1) AS surrounded_by_new,
 *     (SELECT row(...) FROM signed_attestations
 *       WHERE validator_id = $v AND source_epoch < $s AND target_epoch > $t LIMIT 1) AS surrounding_new,
 *     (SELECT min(source_epoch) FROM signed_attestations WHERE validator_id = $v) AS min_source,
 *     (SELECT min(target_epoch) FROM signed_attestations WHERE validator_id = $v) AS min_target;
 *
 * Indexes: (validator_id, target_epoch) serves same_target, min_target and surrounding_new (range
 * target > t: normally empty, new votes are the newest); (validator_id, source_epoch) serves
 * min_source and surrounded_by_new (range source > s: normally empty). Blocks: (validator_id, slot).
 *
 * Import (complete): every imported record is stored as is — including records that are slashable
 * with respect to each other or to the database — except exact duplicates (same slot/epochs and
 * same root, null = null for this purpose only). The rules above then refuse anything that conflicts
 * with any stored record, which is what the eth-clients interchange tests expect under
 * `should_succeed_complete` for every step, including the 21 `contains_slashable_data` ones. The
 * low watermark is MIN() over the kept records. Pruning also records per-validator floors, and
 * imports skip history below them, so re-importing pruned history cannot lower that MIN() again
 * (see `prune` in backends/sqlite/store.ts).
 *
 * ─── MINIMAL strategy (dynamodb): watermarks only ────────────────────────────────────────────────
 *
 * Per validator: `BlockWatermark` = highest slot + the root signed there; `AttestationWatermark`
 * = highest source, highest target + the root signed at that target. A root is kept only when THIS
 * signer signed the message at the watermark; imports never carry roots into a watermark (see
 * `mergeImportedBlocks`), which is what the interchange tests' `should_succeed` flags require
 * (e.g. single_validator_resign_block: re-signing an imported root must be refused by a minimal
 * client). The root exists so that a validator client retrying the same request (lost response)
 * gets its signature again instead of a refusal.
 *
 * Block (S, R) against watermark (maxSlot, root):
 *   1. no watermark → new
 *   2. S = maxSlot: root = R (non-null) → same_data; else → double_block_proposal
 *   3. S < maxSlot → block_slot_below_low_watermark
 *   4. → new; the watermark becomes (S, R)
 * Attestation (s, t, R) against watermark (maxSource, maxTarget, targetRoot):
 *   1. s > t → source_after_target
 *   2. no watermark → new
 *   3. t = maxTarget: targetRoot = R (non-null) → same_data; else → double_vote
 *   4. t < maxTarget → attestation_target_below_low_watermark
 *   5. s < maxSource → attestation_source_below_low_watermark
 *   6. → new; the watermark becomes (s, t, R)
 * DynamoDB: the "new" case is exactly the condition expression of one UpdateItem
 *   block:       attribute_not_exists(max_slot) OR max_slot < :S
 *   attestation: (attribute_not_exists(max_target) OR max_target < :t)
 *                AND (attribute_not_exists(max_source) OR max_source <= :s)
 * and on ConditionalCheckFailed the returned old item is classified with the functions below.
 *
 * Minimal is never more permissive than complete: an accepted vote has s >= every stored source and
 * t > every stored target, so it can neither surround (needs s < s') nor be surrounded by (needs
 * t < t') nor double any record the complete strategy would hold; same_data needs our own root.
 */
import { bytesEqual, bytesToHex } from "./encoding";
import type { Decision, InterchangeAttestation, InterchangeBlock, RefusalReason } from "./store";

export interface StoredBlock {
  readonly slot: bigint;
  /** null: imported without a signing root (never matches). */
  readonly signingRoot: Uint8Array | null;
}

export interface StoredAttestation {
  readonly sourceEpoch: bigint;
  readonly targetEpoch: bigint;
  /** null: imported without a signing root (never matches). */
  readonly signingRoot: Uint8Array | null;
}

/**
 * What a low watermark is: the lowest record, or the validator's floor (an imported low watermark,
 * Web3Signer's say, or one pruning set) where that is above every record. Refusals name which, so
 * that an operator looking for a record at that slot is not sent looking for one that never was.
 */
export type LowWatermarkSource = "record" | "floor";

/** The facts about one validator's blocks that the complete-strategy block rule needs. */
export interface BlockHistory {
  /** A record at the new slot; when several, a non-matching one if any. */
  readonly sameSlot: StoredBlock | null;
  /** Lowest recorded slot, null when the validator has no block records. */
  readonly minSlot: bigint | null;
  /** What minSlot is; "record" when not given. */
  readonly minSlotFrom?: LowWatermarkSource;
}

/** The facts about one validator's attestations that the complete-strategy attestation rule needs. */
export interface AttestationHistory {
  /** A record with the new target; when several, a non-matching one (source or root differ) if any. */
  readonly sameTarget: StoredAttestation | null;
  /** A record with source > new source AND target < new target (the new vote would surround it). */
  readonly surroundedByNew: StoredAttestation | null;
  /** A record with source < new source AND target > new target (it surrounds the new vote). */
  readonly surroundingNew: StoredAttestation | null;
  /** Lowest recorded source epoch, null when none. */
  readonly minSource: bigint | null;
  /** Lowest recorded target epoch, null when none. */
  readonly minTarget: bigint | null;
  /** What minSource and minTarget are; "record" when not given. */
  readonly minSourceFrom?: LowWatermarkSource;
  readonly minTargetFrom?: LowWatermarkSource;
}

/**
 * Which of the two a complete store's low watermark `value` is: the floor when it is the floor,
 * unless the lowest record is at the floor too (as pruning leaves it), which reads as the record.
 */
export function lowWatermarkSource(
  value: bigint | null,
  lowestRecord: bigint | null,
  floor: bigint | null,
): LowWatermarkSource {
  return floor !== null && value === floor && lowestRecord !== floor ? "floor" : "record";
}

/** "the lowest recorded block slot 7", "the block slot floor 7 (…)". */
function describeLow(what: string, value: bigint, from: LowWatermarkSource | undefined): string {
  return from === "floor"
    ? `the validator's ${what} floor ${value} (a low watermark from an imported interchange or from pruning: nothing at or below it is signed)`
    : `the lowest recorded ${what} ${value}`;
}

/** The message being decided: what BlockProposal/AttestationVote carry minus the pubkey. */
export interface NewBlock {
  readonly slot: bigint;
  readonly signingRoot: Uint8Array;
}

export interface NewAttestation {
  readonly sourceEpoch: bigint;
  readonly targetEpoch: bigint;
  readonly signingRoot: Uint8Array;
}

/** Minimal strategy: the highest block slot and, if this signer signed it, its root. */
export interface BlockWatermark {
  readonly maxSlot: bigint;
  readonly signingRoot: Uint8Array | null;
}

/** Minimal strategy: highest source, highest target and, if this signer signed it, the target's root. */
export interface AttestationWatermark {
  readonly maxSource: bigint;
  readonly maxTarget: bigint;
  readonly targetRoot: Uint8Array | null;
}

export const NEW: Decision = Object.freeze({ outcome: "new" });
export const SAME_DATA: Decision = Object.freeze({ outcome: "same_data" });

export function refused(reason: RefusalReason, detail: string): Decision {
  return { outcome: "refused", reason, detail };
}

/** A stored root proves a repeat only when it is known (non-null) and byte-equal to the new one. */
export function rootMatches(stored: Uint8Array | null, requested: Uint8Array): boolean {
  return stored !== null && bytesEqual(stored, requested);
}

function describeRoot(root: Uint8Array | null): string {
  return root === null ? "no signing root (imported)" : `signing root ${bytesToHex(root)}`;
}

function describeVote(a: { sourceEpoch: bigint; targetEpoch: bigint }): string {
  return `source ${a.sourceEpoch} → target ${a.targetEpoch}`;
}

/** The refusal for a message whose genesis validators root is not the stored one. */
export function genesisMismatch(
  requested: Uint8Array | string,
  stored: Uint8Array | string,
): Decision {
  const hex = (v: Uint8Array | string) => (typeof v === "string" ? v : bytesToHex(v));
  return refused(
    "genesis_validators_root_mismatch",
    `genesis validators root ${hex(requested)} is not the stored ${hex(stored)} (one database serves one chain)`,
  );
}

// ─── complete strategy ─────────────────────────────────────────────────────────────────────────

export function decideBlock(history: BlockHistory, block: NewBlock): Decision {
  const same = history.sameSlot;
  if (same !== null) {
    if (same.slot !== block.slot) throw new Error("decideBlock: sameSlot is at another slot");
    if (rootMatches(same.signingRoot, block.signingRoot)) return SAME_DATA;
    return refused(
      "double_block_proposal",
      `already signed a different block at slot ${same.slot} (${describeRoot(same.signingRoot)})`,
    );
  }
  if (history.minSlot !== null && block.slot <= history.minSlot) {
    return refused(
      "block_slot_below_low_watermark",
      `slot ${block.slot} is at or below ${describeLow("block slot", history.minSlot, history.minSlotFrom)}`,
    );
  }
  return NEW;
}

export function decideAttestation(history: AttestationHistory, vote: NewAttestation): Decision {
  const { sourceEpoch: s, targetEpoch: t } = vote;
  if (s > t) {
    return refused("source_after_target", `source epoch ${s} is after target epoch ${t}`);
  }
  const same = history.sameTarget;
  if (same !== null) {
    if (same.targetEpoch !== t) throw new Error("decideAttestation: sameTarget has another target");
    if (same.sourceEpoch === s && rootMatches(same.signingRoot, vote.signingRoot)) return SAME_DATA;
    return refused(
      "double_vote",
      `already signed a different attestation for target epoch ${t} (${describeVote(same)}, ${describeRoot(same.signingRoot)})`,
    );
  }
  const inner = history.surroundedByNew;
  if (inner !== null) {
    if (!(inner.sourceEpoch > s && inner.targetEpoch < t)) {
      throw new Error("decideAttestation: surroundedByNew is not surrounded by the new vote");
    }
    return refused(
      "surrounding_vote",
      `${describeVote(vote)} would surround the signed attestation ${describeVote(inner)}`,
    );
  }
  const outer = history.surroundingNew;
  if (outer !== null) {
    if (!(outer.sourceEpoch < s && outer.targetEpoch > t)) {
      throw new Error("decideAttestation: surroundingNew does not surround the new vote");
    }
    return refused(
      "surrounded_vote",
      `${describeVote(vote)} is surrounded by the signed attestation ${describeVote(outer)}`,
    );
  }
  if (history.minSource !== null && s < history.minSource) {
    return refused(
      "attestation_source_below_low_watermark",
      `source epoch ${s} is below ${describeLow("source epoch", history.minSource, history.minSourceFrom)}`,
    );
  }
  if (history.minTarget !== null && t <= history.minTarget) {
    return refused(
      "attestation_target_below_low_watermark",
      `target epoch ${t} is at or below ${describeLow("target epoch", history.minTarget, history.minTargetFrom)}`,
    );
  }
  return NEW;
}

// ─── minimal strategy ──────────────────────────────────────────────────────────────────────────

export function decideBlockMinimal(watermark: BlockWatermark | null, block: NewBlock): Decision {
  if (watermark === null || block.slot > watermark.maxSlot) return NEW;
  if (block.slot === watermark.maxSlot) {
    if (rootMatches(watermark.signingRoot, block.signingRoot)) return SAME_DATA;
    return refused(
      "double_block_proposal",
      watermark.signingRoot === null
        ? `slot ${block.slot} is the highest block slot signed or imported, whose root is unknown (minimal strategy: only slots above it can be signed)`
        : `already signed a block at slot ${block.slot} (signing root ${bytesToHex(watermark.signingRoot)})`,
    );
  }
  return refused(
    "block_slot_below_low_watermark",
    `slot ${block.slot} is below the highest block slot signed or imported, ${watermark.maxSlot} (minimal strategy: only slots above it can be signed)`,
  );
}

export function decideAttestationMinimal(
  watermark: AttestationWatermark | null,
  vote: NewAttestation,
): Decision {
  const { sourceEpoch: s, targetEpoch: t } = vote;
  if (s > t) return refused("source_after_target", `source epoch ${s} is after target epoch ${t}`);
  if (watermark === null) return NEW;
  if (t === watermark.maxTarget) {
    if (rootMatches(watermark.targetRoot, vote.signingRoot)) return SAME_DATA;
    return refused(
      "double_vote",
      watermark.targetRoot === null
        ? `target epoch ${t} is the highest target epoch signed or imported, whose root is unknown (minimal strategy: only targets above it can be signed)`
        : `already signed an attestation for target epoch ${t} (signing root ${bytesToHex(watermark.targetRoot)})`,
    );
  }
  if (t < watermark.maxTarget) {
    return refused(
      "attestation_target_below_low_watermark",
      `target epoch ${t} is below the highest target epoch signed or imported, ${watermark.maxTarget} (minimal strategy)`,
    );
  }
  if (s < watermark.maxSource) {
    return refused(
      "attestation_source_below_low_watermark",
      `source epoch ${s} is below the highest source epoch signed or imported, ${watermark.maxSource} (minimal strategy)`,
    );
  }
  return NEW;
}

/** The watermark after signing `block` (call only when the decision was "new"). */
export function raisedBlockWatermark(block: NewBlock): BlockWatermark {
  return { maxSlot: block.slot, signingRoot: block.signingRoot };
}

/** The watermark after signing `vote` (call only when the decision was "new"). */
export function raisedAttestationWatermark(vote: NewAttestation): AttestationWatermark {
  return { maxSource: vote.sourceEpoch, maxTarget: vote.targetEpoch, targetRoot: vote.signingRoot };
}

/**
 * Minimal import: max(stored, imported maximum), never lower. Imported roots are dropped: when the
 * import reaches or passes the stored maximum, the watermark's root becomes unknown (null).
 */
export function mergeImportedBlocks(
  watermark: BlockWatermark | null,
  blocks: readonly InterchangeBlock[],
): BlockWatermark | null {
  let result = watermark;
  for (const block of blocks) {
    if (result === null || block.slot >= result.maxSlot) {
      result = { maxSlot: block.slot, signingRoot: null };
    }
  }
  return result;
}

/** Minimal import for attestations; see mergeImportedBlocks. Source and target rise independently. */
export function mergeImportedAttestations(
  watermark: AttestationWatermark | null,
  attestations: readonly InterchangeAttestation[],
): AttestationWatermark | null {
  let result = watermark;
  for (const a of attestations) {
    if (result === null) {
      result = { maxSource: a.sourceEpoch, maxTarget: a.targetEpoch, targetRoot: null };
      continue;
    }
    const maxSource = a.sourceEpoch > result.maxSource ? a.sourceEpoch : result.maxSource;
    const targetReached = a.targetEpoch >= result.maxTarget;
    result = {
      maxSource,
      maxTarget: targetReached ? a.targetEpoch : result.maxTarget,
      targetRoot: targetReached ? null : result.targetRoot,
    };
  }
  return result;
}
