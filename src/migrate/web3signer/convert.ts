/**
 * Web3Signer's slashing protection data in sigil's terms: pure, no IO.
 *
 * Web3Signer keeps, per validator, a low watermark apart from its records (`low_watermarks`: a
 * slot and a source/target epoch pair) and refuses strictly below it: a block slot below the slot,
 * a source below the source epoch, a target below the target epoch. Its pruning moves the
 * watermark up and deletes the records below it, so the watermark may sit where no record is, and
 * its import may raise it above records it keeps. sigil compares "at or below" for slots and
 * targets and "below" for sources (rules.ts), so the watermark becomes floors one below it for
 * slot and target and equal to it for the source (ValidatorFloors in the store); with every
 * record migrated as well (below the watermark without its root, see toInterchangeValidator),
 * sigil refuses whatever Web3Signer refuses by watermark, double vote or surround, and signs what
 * it signs: a floor is the validator's watermark in sigil too, also where Web3Signer's pruning left
 * it below the oldest record it kept. It refuses more in one place, `unvouchedHistory` below.
 */
import { isUint64 } from "../../antislashing/encoding";
import type {
  InterchangeAttestation,
  InterchangeBlock,
  InterchangeValidator,
  PubkeyHex,
  ValidatorFloors,
} from "../../antislashing/store";

/** One row of `low_watermarks`; a column is null when Web3Signer has not set it. */
export interface Web3SignerLowWatermark {
  readonly slot: bigint | null;
  readonly sourceEpoch: bigint | null;
  readonly targetEpoch: bigint | null;
}

/** One validator of a Web3Signer database with all its records. */
export interface Web3SignerValidator {
  readonly pubkey: PubkeyHex;
  /** `validators.enabled` (Web3Signer refuses to sign for a disabled validator). */
  readonly enabled: boolean;
  readonly lowWatermark: Web3SignerLowWatermark | null;
  readonly blocks: readonly InterchangeBlock[];
  readonly attestations: readonly InterchangeAttestation[];
}

/** Web3Signer's database-wide ceiling: it refuses every slot / epoch at or beyond it. */
export interface Web3SignerHighWatermark {
  readonly slot: bigint | null;
  readonly epoch: bigint | null;
}

/** The sigil floors that refuse exactly what a Web3Signer low watermark refuses; none if nothing. */
export function floorsOf(watermark: Web3SignerLowWatermark | null): ValidatorFloors | undefined {
  if (watermark === null) return undefined;
  const floors: { blockSlot?: bigint; sourceEpoch?: bigint; targetEpoch?: bigint } = {};
  // "slot < L" is "slot <= L - 1"; at L = 0 nothing is below, so there is no floor.
  if (watermark.slot !== null && watermark.slot > 0n) floors.blockSlot = watermark.slot - 1n;
  if (watermark.sourceEpoch !== null && watermark.sourceEpoch > 0n) {
    floors.sourceEpoch = watermark.sourceEpoch;
  }
  if (watermark.targetEpoch !== null && watermark.targetEpoch > 0n) {
    floors.targetEpoch = watermark.targetEpoch - 1n;
  }
  return Object.keys(floors).length === 0 ? undefined : floors;
}

/**
 * The validator as sigil imports it: the low watermark as floors, every record, and a record below
 * the watermark without its signing root. Web3Signer checks its watermark before it recognises a
 * repeat, so it never signs such a record again (its own export leaves them out altogether), while
 * sigil would re-sign a repeat; without a root the record still counts for double and surround
 * votes and matches nothing.
 */
export function toInterchangeValidator(validator: Web3SignerValidator): InterchangeValidator {
  const mark = validator.lowWatermark;
  const floors = floorsOf(mark);
  const below = (value: bigint, watermark: bigint | null | undefined) =>
    watermark != null && value < watermark;
  return {
    pubkey: validator.pubkey,
    blocks: validator.blocks.map((b) => (below(b.slot, mark?.slot) ? { slot: b.slot } : b)),
    attestations: validator.attestations.map((a) =>
      below(a.sourceEpoch, mark?.sourceEpoch) || below(a.targetEpoch, mark?.targetEpoch)
        ? { sourceEpoch: a.sourceEpoch, targetEpoch: a.targetEpoch }
        : a,
    ),
    ...(floors === undefined ? {} : { floors }),
  };
}

/**
 * Whether Web3Signer would sign messages older than the validator's oldest record that sigil
 * refuses, given the validator as converted (toInterchangeValidator): a side (blocks,
 * attestations) with records above 0 and no floor, i.e. no Web3Signer watermark above 0 to vouch
 * for the history below them. Web3Signer sets a watermark with the first record it writes, so this
 * is legacy data from before it kept watermarks (2020) for a side not signed since. Without a
 * floor sigil applies EIP-3076 conditions 2, 4, 5: nothing older than the oldest record.
 */
export function unvouchedHistory(validator: InterchangeValidator): boolean {
  const floors = validator.floors;
  const lowest = (values: readonly bigint[]) =>
    values.reduce<bigint | null>((low, v) => (low === null || v < low ? v : low), null);
  const above0 = (value: bigint | null) => value !== null && value > 0n;
  const { blocks, attestations } = validator;
  return (
    (floors?.blockSlot === undefined && above0(lowest(blocks.map((b) => b.slot)))) ||
    (floors?.sourceEpoch === undefined && above0(lowest(attestations.map((a) => a.sourceEpoch)))) ||
    (floors?.targetEpoch === undefined && above0(lowest(attestations.map((a) => a.targetEpoch))))
  );
}

export function hasHighWatermark(high: Web3SignerHighWatermark | null): boolean {
  return high !== null && (high.slot !== null || high.epoch !== null);
}

/** Parses a numeric(20) column read as text; throws when it is not a uint64. */
export function uint64Column(text: string, where: string): bigint {
  if (!/^[0-9]{1,20}$/.test(text)) throw new RangeError(`${where}: "${text}" is not a uint64`);
  const value = BigInt(text);
  if (!isUint64(value)) throw new RangeError(`${where}: ${text} is above 2^64 - 1`);
  return value;
}
