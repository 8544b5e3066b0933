/**
 * Database-wide watermarks (`sigil slashing watermark-repair`, Web3Signer's subcommand of that
 * name): pure rules, no IO, no clock of their own. They bound every validator of the database,
 * also one the database has never seen:
 *
 *   low   nothing below it is signed: a block slot below `slot`, an attestation whose source or
 *         target epoch is below `epoch`. "Below", as Web3Signer compares its low watermark: the
 *         slot and epoch themselves are signable. Only ever raised.
 *   high  nothing at or beyond it is signed: a block slot at or above `slot`, an attestation whose
 *         source or target epoch is at or above `epoch` (Web3Signer's high watermark, issue #696).
 *
 * So a database whose high watermark is (E, S) and another whose low watermark is (E, S) never
 * sign the same slot or the same target epoch: the cluster-migration runbook of
 * docs/antislashing.md. A store reads them inside the same atomic step as its other rules (sqlite:
 * the check's transaction, which no change can overlap; postgres: the check's statement;
 * dynamodb: a copy at most WATERMARK_REFRESH_MS old). A check in flight while a change commits
 * (postgres) or within that time after it (dynamodb) may still decide with the old bounds; that is
 * safe because a high watermark must lie a whole epoch beyond the latest epoch any signer may sign
 * when it is set (highWatermarkProblem), and a low watermark is raised before its signers start.
 *
 * They apply before the history rules (rules.ts) and refuse even a repeat of a recorded message:
 * a bound says what this database signs, whatever it signed before.
 */
import { type ChainClock, wallClockEpoch } from "./future";
import { refused } from "./rules";
import type { Decision } from "./store";

/** A slot and an epoch: a low or high watermark. */
export interface Watermark {
  readonly epoch: bigint;
  readonly slot: bigint;
}

export interface DatabaseWatermarks {
  readonly low?: Watermark;
  readonly high?: Watermark;
}

export const NO_WATERMARKS: DatabaseWatermarks = Object.freeze({});

/** What `watermark-repair` does to a database, in one atomic write. */
export type WatermarkChange =
  /** Each of slot and epoch rises to the given one, never lower than it is. */
  | { readonly kind: "raise_low"; readonly low: Watermark }
  | { readonly kind: "set_high"; readonly high: Watermark }
  | { readonly kind: "remove_high" };

/** How long a DynamoDB signer uses the watermarks it read before reading them again. */
export const WATERMARK_REFRESH_MS = 1000;

const REPAIR = "sigil slashing watermark-repair";

/** The refusal of a block by the database's watermarks, or null when they allow it. */
export function blockBoundRefusal(bounds: DatabaseWatermarks, slot: bigint): Decision | null {
  const { high, low } = bounds;
  if (high !== undefined && slot >= high.slot) {
    return refused(
      "block_slot_at_or_above_high_watermark",
      `slot ${slot} is at or above the database's high watermark, slot ${high.slot} (${REPAIR} set it: this database signs nothing from there on)`,
    );
  }
  if (low !== undefined && slot < low.slot) {
    return refused(
      "block_slot_below_low_watermark",
      `slot ${slot} is below the database's low watermark, slot ${low.slot} (${REPAIR} raised it)`,
    );
  }
  return null;
}

/** The refusal of an attestation by the database's watermarks, or null when they allow it. */
export function attestationBoundRefusal(
  bounds: DatabaseWatermarks,
  sourceEpoch: bigint,
  targetEpoch: bigint,
): Decision | null {
  // Malformed (source after target): the history rules refuse it as such, on every backend.
  if (sourceEpoch > targetEpoch) return null;
  const { high, low } = bounds;
  if (high !== undefined && (sourceEpoch >= high.epoch || targetEpoch >= high.epoch)) {
    const which =
      targetEpoch >= high.epoch ? `target epoch ${targetEpoch}` : `source epoch ${sourceEpoch}`;
    return refused(
      "attestation_at_or_above_high_watermark",
      `${which} is at or above the database's high watermark, epoch ${high.epoch} (${REPAIR} set it: this database signs nothing from there on)`,
    );
  }
  if (low !== undefined && sourceEpoch < low.epoch) {
    return refused(
      "attestation_source_below_low_watermark",
      `source epoch ${sourceEpoch} is below the database's low watermark, epoch ${low.epoch} (${REPAIR} raised it)`,
    );
  }
  if (low !== undefined && targetEpoch < low.epoch) {
    return refused(
      "attestation_target_below_low_watermark",
      `target epoch ${targetEpoch} is below the database's low watermark, epoch ${low.epoch} (${REPAIR} raised it)`,
    );
  }
  return null;
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/** The watermarks after `change`: a low watermark only rises, slot and epoch each on its own. */
export function applyWatermarkChange(
  current: DatabaseWatermarks,
  change: WatermarkChange,
): DatabaseWatermarks {
  switch (change.kind) {
    case "raise_low": {
      const before = current.low;
      const low =
        before === undefined
          ? change.low
          : { epoch: max(before.epoch, change.low.epoch), slot: max(before.slot, change.low.slot) };
      return { ...current, low };
    }
    case "set_high":
      return { ...current, high: change.high };
    case "remove_high": {
      const { high: _removed, ...rest } = current;
      return rest;
    }
  }
}

/**
 * Why `high` cannot be set now, or null when it can. A signer may sign up to
 * `antislashing.max_future_epochs` epochs ahead of the clock, so a high watermark at or below the
 * latest epoch it may sign could already have been passed: this database may hold a signature
 * beyond it, and a second database starting there could sign a conflicting one. One epoch more is
 * required, so that every running signer reads the bound before a message at it can reach them
 * (a DynamoDB signer's copy is at most WATERMARK_REFRESH_MS old).
 */
export function highWatermarkProblem(
  high: Watermark,
  clock: ChainClock,
  maxFutureEpochs: bigint,
  nowMs: number,
): string | null {
  const current = wallClockEpoch(clock, nowMs);
  const earliest = current + maxFutureEpochs + 2n;
  const earliestSlot = earliest * clock.slotsPerEpoch;
  if (high.epoch >= earliest && high.slot >= earliestSlot) return null;
  const what =
    high.epoch < earliest
      ? `epoch ${high.epoch}`
      : `slot ${high.slot} (epoch ${high.slot / clock.slotsPerEpoch})`;
  return (
    `the high watermark must lie in the future: ${what} is too close, a signer may sign up to epoch ` +
    `${current + maxFutureEpochs} now (the current epoch ${current} + antislashing.max_future_epochs ` +
    `${maxFutureEpochs}), so this database may already hold a signature there, and one more epoch is ` +
    `left for every signer to read the bound; the earliest is epoch ${earliest}, slot ${earliestSlot}`
  );
}

/**
 * Why `next` cannot replace the stored high watermark, or null when it can: raising one that a
 * signer may already have reached (its epoch at or below the latest epoch a signer may sign now)
 * would let this database sign again what, after a migration, another one signs from there on.
 * Lowering one, or replacing one still ahead, is fine; removing it is the operator's explicit step.
 */
export function highWatermarkRaiseProblem(
  stored: Watermark | undefined,
  next: Watermark,
  latestSignableEpoch: bigint,
): string | null {
  if (stored === undefined) return null;
  if (next.epoch <= stored.epoch && next.slot <= stored.slot) return null;
  if (stored.epoch > latestSignableEpoch) return null;
  return (
    `the high watermark (${describeWatermark(stored)}) has been reached: a signer may sign up to ` +
    `epoch ${latestSignableEpoch} now, and another database may be signing from it on, so it is ` +
    "not raised; remove it with --remove-high-watermark first if this database is to sign beyond it"
  );
}

/**
 * The low watermark `--epoch` / `--slot` ask for: the one given; for the other, the first slot of
 * the given epoch, or the epoch of the given slot rounded up (a whole epoch, never part of one);
 * with neither, the next epoch of the network's clock and its first slot. A string: why there is
 * no default (the clock is unknown).
 */
export function requestedLowWatermark(
  given: { readonly epoch?: bigint; readonly slot?: bigint },
  slotsPerEpoch: bigint,
  currentEpoch: bigint | undefined,
): Watermark | string {
  const { epoch, slot } = given;
  if (epoch !== undefined && slot !== undefined) return { epoch, slot };
  if (epoch !== undefined) return { epoch, slot: epoch * slotsPerEpoch };
  if (slot !== undefined) return { epoch: (slot + slotsPerEpoch - 1n) / slotsPerEpoch, slot };
  if (currentEpoch === undefined) {
    return "the network's genesis time is unknown (network_config.genesis_time), so there is no default: give --epoch or --slot";
  }
  const next = currentEpoch + 1n;
  return { epoch: next, slot: next * slotsPerEpoch };
}

/** `GET /api/v1/eth2/highWatermark`: Web3Signer's body, uint64 as decimal strings; {} when none. */
export function highWatermarkBody(bounds: DatabaseWatermarks): { epoch?: string; slot?: string } {
  const high = bounds.high;
  return high === undefined ? {} : { epoch: high.epoch.toString(), slot: high.slot.toString() };
}

/** "epoch 100, slot 3200". */
export function describeWatermark(mark: Watermark | undefined): string {
  return mark === undefined ? "none" : `epoch ${mark.epoch}, slot ${mark.slot}`;
}
