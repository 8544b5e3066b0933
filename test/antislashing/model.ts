/**
 * A brute-force reference model of EIP-3076 slashing protection, written from the EIP text and the
 * interchange tests' README — deliberately NOT from src/antislashing/rules.ts: it keeps every record
 * in plain arrays and answers each question by scanning them.
 *
 * Roots are hex strings; `null` is an imported record without `signing_root`, which never equals
 * anything. Decisions carry the refusal reason (no detail text); when several reasons apply, the
 * one reported is the first in this documented order:
 *   block:       double_block_proposal, block_slot_below_low_watermark
 *   attestation: source_after_target, double_vote, surrounding_vote, surrounded_vote,
 *                attestation_source_below_low_watermark, attestation_target_below_low_watermark
 * The database-wide bounds of watermark-repair (`boundRefusal`, from Web3Signer's definition:
 * sign only at or above the low watermark and below the high one) come before all of these but
 * source_after_target, for both strategies.
 */
import type { RefusalReason } from "../../src/antislashing/store";

export type ModelDecision =
  | { outcome: "new" }
  | { outcome: "same_data" }
  | { outcome: "refused"; reason: RefusalReason };

export interface ModelBlock {
  slot: bigint;
  root: string | null;
}

export interface ModelAttestation {
  source: bigint;
  target: bigint;
  root: string | null;
}

export interface ModelImport {
  pubkey: string;
  blocks: ModelBlock[];
  attestations: ModelAttestation[];
}

const NEW: ModelDecision = { outcome: "new" };
const SAME: ModelDecision = { outcome: "same_data" };
const no = (reason: RefusalReason): ModelDecision => ({ outcome: "refused", reason });

/** The database-wide watermarks (watermark-repair); absent: none. */
export interface ModelBounds {
  low?: { epoch: bigint; slot: bigint };
  high?: { epoch: bigint; slot: bigint };
}

/** The bounds' refusal of a message, or null when they allow it (or leave it to the rules). */
export function boundRefusal(
  bounds: ModelBounds,
  message: { slot: bigint } | { source: bigint; target: bigint },
): ModelDecision | null {
  const { low, high } = bounds;
  if ("slot" in message) {
    if (high && message.slot >= high.slot) return no("block_slot_at_or_above_high_watermark");
    if (low && message.slot < low.slot) return no("block_slot_below_low_watermark");
    return null;
  }
  const { source, target } = message;
  if (source > target) return null;
  if (high && [source, target].some((e) => e >= high.epoch)) {
    return no("attestation_at_or_above_high_watermark");
  }
  if (low && source < low.epoch) return no("attestation_source_below_low_watermark");
  if (low && target < low.epoch) return no("attestation_target_below_low_watermark");
  return null;
}

function sameRoot(stored: string | null, requested: string): boolean {
  return stored !== null && stored === requested;
}

function min(values: bigint[]): bigint | undefined {
  let out: bigint | undefined;
  for (const v of values) if (out === undefined || v < out) out = v;
  return out;
}

/**
 * EIP-3076 "complete" database: every signed and imported message. Decisions follow the
 * Conditions section: (1) no block slashable w.r.t. a stored one, a missing root making every new
 * block at that slot slashable; (2) slot <= min stored slot refused unless a repeat by root;
 * (3) no attestation slashable w.r.t. a stored one (is_slashable_attestation_data: double vote or
 * surround); (4) source < min stored source refused; (5) target <= min stored target refused unless
 * a repeat by root. A repeat (same slot / same source and target, same non-null root) is allowed.
 */
export class CompleteModel {
  private readonly blocks = new Map<string, ModelBlock[]>();
  private readonly attestations = new Map<string, ModelAttestation[]>();

  private blocksOf(pubkey: string): ModelBlock[] {
    let list = this.blocks.get(pubkey);
    if (list === undefined) {
      list = [];
      this.blocks.set(pubkey, list);
    }
    return list;
  }

  private attestationsOf(pubkey: string): ModelAttestation[] {
    let list = this.attestations.get(pubkey);
    if (list === undefined) {
      list = [];
      this.attestations.set(pubkey, list);
    }
    return list;
  }

  decideBlock(pubkey: string, slot: bigint, root: string): ModelDecision {
    const stored = this.blocks.get(pubkey) ?? [];
    const atSlot = stored.filter((b) => b.slot === slot);
    if (atSlot.length > 0) {
      return atSlot.every((b) => sameRoot(b.root, root)) ? SAME : no("double_block_proposal");
    }
    const lowest = min(stored.map((b) => b.slot));
    if (lowest !== undefined && slot <= lowest) return no("block_slot_below_low_watermark");
    return NEW;
  }

  decideAttestation(pubkey: string, source: bigint, target: bigint, root: string): ModelDecision {
    if (source > target) return no("source_after_target");
    const stored = this.attestations.get(pubkey) ?? [];
    const atTarget = stored.filter((a) => a.target === target);
    if (atTarget.length > 0) {
      return atTarget.every((a) => a.source === source && sameRoot(a.root, root))
        ? SAME
        : no("double_vote");
    }
    if (stored.some((a) => source < a.source && target > a.target)) return no("surrounding_vote");
    if (stored.some((a) => source > a.source && target < a.target)) return no("surrounded_vote");
    const lowestSource = min(stored.map((a) => a.source));
    if (lowestSource !== undefined && source < lowestSource)
      return no("attestation_source_below_low_watermark");
    const lowestTarget = min(stored.map((a) => a.target));
    if (lowestTarget !== undefined && target <= lowestTarget)
      return no("attestation_target_below_low_watermark");
    return NEW;
  }

  /** Decides and, when the decision is "new", records (what a store's checkAndInsert does). */
  block(pubkey: string, slot: bigint, root: string): ModelDecision {
    const decision = this.decideBlock(pubkey, slot, root);
    if (decision.outcome === "new") this.blocksOf(pubkey).push({ slot, root });
    return decision;
  }

  attestation(pubkey: string, source: bigint, target: bigint, root: string): ModelDecision {
    const decision = this.decideAttestation(pubkey, source, target, root);
    if (decision.outcome === "new") this.attestationsOf(pubkey).push({ source, target, root });
    return decision;
  }

  /** Every imported record is kept, slashable or not (exact duplicates make no difference). */
  import(entries: readonly ModelImport[]): void {
    for (const entry of entries) {
      this.blocksOf(entry.pubkey).push(...entry.blocks);
      this.attestationsOf(entry.pubkey).push(...entry.attestations);
    }
  }
}

interface Watermarks {
  maxSlot?: bigint;
  slotRoot: string | null;
  maxSource?: bigint;
  maxTarget?: bigint;
  targetRoot: string | null;
}

/**
 * EIP-3076 "minimal" database (Rationale, and "Advice for Minimal Databases"): per validator only
 * the latest (maximum) block slot and the maximum source and target epochs; sign only above them.
 * Block ok iff slot > max slot; attestation ok iff source >= max source and target > max target.
 * Imports merge by maximum and never lower a value. One extension, for validator clients that
 * retry a lost request: a message identical (by non-null root) to the one THIS signer signed at
 * the watermark is re-signable; imported roots never are (the interchange tests' minimal flags).
 */
export class MinimalModel {
  private readonly marks = new Map<string, Watermarks>();

  private of(pubkey: string): Watermarks {
    let w = this.marks.get(pubkey);
    if (w === undefined) {
      w = { slotRoot: null, targetRoot: null };
      this.marks.set(pubkey, w);
    }
    return w;
  }

  block(pubkey: string, slot: bigint, root: string): ModelDecision {
    const w = this.of(pubkey);
    if (w.maxSlot === undefined || slot > w.maxSlot) {
      w.maxSlot = slot;
      w.slotRoot = root;
      return NEW;
    }
    if (slot === w.maxSlot) return sameRoot(w.slotRoot, root) ? SAME : no("double_block_proposal");
    return no("block_slot_below_low_watermark");
  }

  attestation(pubkey: string, source: bigint, target: bigint, root: string): ModelDecision {
    if (source > target) return no("source_after_target");
    const w = this.of(pubkey);
    if (w.maxTarget !== undefined && w.maxSource !== undefined) {
      if (target === w.maxTarget) return sameRoot(w.targetRoot, root) ? SAME : no("double_vote");
      if (target < w.maxTarget) return no("attestation_target_below_low_watermark");
      if (source < w.maxSource) return no("attestation_source_below_low_watermark");
    }
    w.maxSource = source;
    w.maxTarget = target;
    w.targetRoot = root;
    return NEW;
  }

  import(entries: readonly ModelImport[]): void {
    for (const entry of entries) {
      const w = this.of(entry.pubkey);
      for (const b of entry.blocks) {
        if (w.maxSlot === undefined || b.slot >= w.maxSlot) {
          w.maxSlot = b.slot;
          w.slotRoot = null;
        }
      }
      for (const a of entry.attestations) {
        if (w.maxSource === undefined || a.source > w.maxSource) w.maxSource = a.source;
        if (w.maxTarget === undefined || a.target >= w.maxTarget) {
          w.maxTarget = a.target;
          w.targetRoot = null;
        }
      }
    }
  }

  /** What an export of this validator contains: at most one block and one attestation. */
  watermarks(pubkey: string): { blocks: ModelBlock[]; attestations: ModelAttestation[] } {
    const w = this.marks.get(pubkey);
    if (w === undefined) return { blocks: [], attestations: [] };
    return {
      blocks: w.maxSlot === undefined ? [] : [{ slot: w.maxSlot, root: w.slotRoot }],
      attestations:
        w.maxSource === undefined || w.maxTarget === undefined
          ? []
          : [{ source: w.maxSource, target: w.maxTarget, root: w.targetRoot }],
    };
  }
}
