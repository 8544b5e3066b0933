import { describe, expect, test } from "bun:test";
import {
  floorsOf,
  toInterchangeValidator,
  uint64Column,
  unvouchedHistory,
  type Web3SignerValidator,
} from "./convert";

const PUBKEY = `0x${"ab".repeat(48)}`;
const ROOT = new Uint8Array(32).fill(7);

describe("Web3Signer low watermark → sigil floors", () => {
  test("strict 'below L' becomes 'at or below L - 1' for slots and targets, 'below L' for sources", () => {
    expect(floorsOf({ slot: 100n, sourceEpoch: 6n, targetEpoch: 6n })).toEqual({
      blockSlot: 99n,
      sourceEpoch: 6n,
      targetEpoch: 5n,
    });
  });

  test("zero refuses nothing, so it is no floor; a missing column is no floor either", () => {
    expect(floorsOf({ slot: 0n, sourceEpoch: 0n, targetEpoch: 0n })).toBeUndefined();
    expect(floorsOf({ slot: 1n, sourceEpoch: 0n, targetEpoch: 1n })).toEqual({
      blockSlot: 0n,
      targetEpoch: 0n,
    });
    expect(floorsOf({ slot: null, sourceEpoch: 3n, targetEpoch: 4n })).toEqual({
      sourceEpoch: 3n,
      targetEpoch: 3n,
    });
    expect(floorsOf({ slot: 7n, sourceEpoch: null, targetEpoch: null })).toEqual({ blockSlot: 6n });
    expect(floorsOf(null)).toBeUndefined();
  });
});

describe("Web3Signer validator → interchange validator", () => {
  const validator = (overrides: Partial<Web3SignerValidator>): Web3SignerValidator => ({
    pubkey: PUBKEY,
    enabled: true,
    lowWatermark: { slot: 20n, sourceEpoch: 5n, targetEpoch: 6n },
    blocks: [
      { slot: 19n, signingRoot: ROOT },
      { slot: 20n, signingRoot: ROOT },
    ],
    attestations: [
      { sourceEpoch: 4n, targetEpoch: 7n, signingRoot: ROOT },
      { sourceEpoch: 5n, targetEpoch: 5n, signingRoot: ROOT },
      { sourceEpoch: 5n, targetEpoch: 6n, signingRoot: ROOT },
      { sourceEpoch: 6n, targetEpoch: 8n },
    ],
    ...overrides,
  });

  test("keeps every record; one below the watermark loses its root (never re-signable there)", () => {
    expect(toInterchangeValidator(validator({}))).toEqual({
      pubkey: PUBKEY,
      blocks: [{ slot: 19n }, { slot: 20n, signingRoot: ROOT }],
      attestations: [
        { sourceEpoch: 4n, targetEpoch: 7n },
        { sourceEpoch: 5n, targetEpoch: 5n },
        { sourceEpoch: 5n, targetEpoch: 6n, signingRoot: ROOT },
        { sourceEpoch: 6n, targetEpoch: 8n },
      ],
      floors: { blockSlot: 19n, sourceEpoch: 5n, targetEpoch: 5n },
    });
  });

  test("without a watermark, records keep their roots and there are no floors", () => {
    const converted = toInterchangeValidator(validator({ lowWatermark: null }));
    expect(converted.floors).toBeUndefined();
    expect(converted.blocks.every((b) => b.signingRoot === ROOT)).toBe(true);
    expect(converted.attestations.filter((a) => a.signingRoot === ROOT)).toHaveLength(3);
  });
});

describe("legacy history: records with no watermark to vouch for what is older", () => {
  const v = (
    lowWatermark: Web3SignerValidator["lowWatermark"],
    blocks: bigint[],
    attestations: [bigint, bigint][],
  ) =>
    toInterchangeValidator({
      pubkey: PUBKEY,
      enabled: true,
      lowWatermark,
      blocks: blocks.map((slot) => ({ slot })),
      attestations: attestations.map(([sourceEpoch, targetEpoch]) => ({
        sourceEpoch,
        targetEpoch,
      })),
    });
  const mark = (slot: bigint | null, source: bigint | null, target: bigint | null) => ({
    slot,
    sourceEpoch: source,
    targetEpoch: target,
  });

  test("a side with records above 0 and no watermark above 0 is unvouched", () => {
    expect(unvouchedHistory(v(null, [8n], []))).toBe(true);
    expect(unvouchedHistory(v(null, [], [[3n, 4n]]))).toBe(true);
    expect(unvouchedHistory(v(mark(5n, null, null), [8n], [[3n, 4n]]))).toBe(true);
    expect(unvouchedHistory(v(mark(null, 2n, 3n), [8n], [[3n, 4n]]))).toBe(true);
    expect(unvouchedHistory(v(mark(0n, 0n, 0n), [3n], [[0n, 1n]]))).toBe(true);
  });

  test("watermarks on every recorded side, no records, or records from 0 are not", () => {
    expect(unvouchedHistory(v(mark(5n, 2n, 3n), [8n], [[3n, 4n]]))).toBe(false);
    expect(unvouchedHistory(v(mark(5n, null, null), [8n], []))).toBe(false);
    expect(unvouchedHistory(v(null, [], []))).toBe(false);
    expect(
      unvouchedHistory(
        v(
          mark(0n, 0n, 0n),
          [0n, 3n],
          [
            [0n, 0n],
            [1n, 2n],
          ],
        ),
      ),
    ).toBe(false);
  });
});

describe("numeric(20) columns", () => {
  test("uint64 text parses; anything else names where it was", () => {
    expect(uint64Column("18446744073709551615", "x")).toBe((1n << 64n) - 1n);
    expect(uint64Column("0", "x")).toBe(0n);
    expect(() => uint64Column("18446744073709551616", "slot of v1")).toThrow(/slot of v1/);
    expect(() => uint64Column("-1", "slot")).toThrow(RangeError);
    expect(() => uint64Column("1.5", "slot")).toThrow(RangeError);
  });
});
