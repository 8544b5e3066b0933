import { describe, expect, test } from "bun:test";
import {
  FutureRecordError,
  firstRecordBeyond,
  futureRefusal,
  latestAllowedEpoch,
  wallClockEpoch,
  withinBound,
} from "./future";
import { interchangeSource } from "./interchange";
import { type InterchangeValidator, SlashingImportError } from "./store";

const clock = { genesisTime: 1000n, secondsPerSlot: 12n, slotsPerEpoch: 32n };
const EPOCH_MS = 12 * 32 * 1000;

describe("wall-clock epoch", () => {
  test("0 up to genesis and through the first epoch; each epoch starts at its first second", () => {
    expect(wallClockEpoch(clock, 0)).toBe(0n);
    expect(wallClockEpoch(clock, 1_000_000)).toBe(0n);
    expect(wallClockEpoch(clock, 1_000_000 + EPOCH_MS - 1)).toBe(0n);
    expect(wallClockEpoch(clock, 1_000_000 + EPOCH_MS)).toBe(1n);
    expect(wallClockEpoch(clock, 1_000_000 + 10 * EPOCH_MS + 999)).toBe(10n);
  });
});

describe("future refusal", () => {
  const bound = { clock, maxFutureEpochs: 2n, now: () => 1_000_000 + 10 * EPOCH_MS };

  test("the limit is current + max_future_epochs", () => {
    expect(latestAllowedEpoch(bound)).toBe(12n);
  });

  test("attestations: target at the limit passes, one more is refused with its reason", () => {
    expect(futureRefusal({ kind: "attestation", targetEpoch: 12n }, bound)).toBeNull();
    expect(futureRefusal({ kind: "attestation", targetEpoch: 13n }, bound)).toMatchObject({
      outcome: "refused",
      reason: "attestation_target_too_far_in_future",
    });
    const huge = futureRefusal({ kind: "attestation", targetEpoch: (1n << 64n) - 1n }, bound);
    expect(huge?.detail).toContain("18446744073709551615");
  });

  test("blocks: the last slot of the limit epoch passes, the next slot is refused", () => {
    expect(futureRefusal({ kind: "block", slot: 13n * 32n - 1n }, bound)).toBeNull();
    expect(futureRefusal({ kind: "block", slot: 13n * 32n }, bound)).toMatchObject({
      outcome: "refused",
      reason: "block_slot_too_far_in_future",
    });
  });
});

describe("imported records against the bound", () => {
  const bound = { clock, maxFutureEpochs: 2n, now: () => 1_000_000 + 10 * EPOCH_MS };
  const pubkey = `0x${"ab".repeat(48)}`;
  const validator = (blocks: bigint[], attestations: [bigint, bigint][]): InterchangeValidator => ({
    pubkey,
    blocks: blocks.map((slot) => ({ slot })),
    attestations: attestations.map(([sourceEpoch, targetEpoch]) => ({ sourceEpoch, targetEpoch })),
  });
  const MAX = (1n << 64n) - 1n;

  test("records up to the limit pass; the first beyond it is named with its validator", () => {
    expect(firstRecordBeyond(validator([13n * 32n - 1n], [[11n, 12n]]), bound)).toBeUndefined();
    expect(firstRecordBeyond(validator([MAX], []), bound)).toBe(
      `validator ${pubkey}: block slot ${MAX} (epoch ${MAX / 32n}) is more than 2 epochs after the current epoch 10 (antislashing.max_future_epochs)`,
    );
    expect(firstRecordBeyond(validator([5n], [[0n, MAX]]), bound)).toBe(
      `validator ${pubkey}: attestation source epoch 0, target epoch ${MAX} is more than 2 epochs after the current epoch 10 (antislashing.max_future_epochs)`,
    );
    // A source past its target counts by the source.
    expect(firstRecordBeyond(validator([], [[13n, 1n]]), bound)).toContain("source epoch 13");
  });

  test("withinBound stops the iteration at the first record beyond, as a malformed file would", async () => {
    const source = interchangeSource(
      { interchange_format_version: "5", genesis_validators_root: `0x${"00".repeat(32)}` },
      [validator([1n], []), validator([], [[0n, MAX]])],
    );
    const read: string[] = [];
    const iterate = async () => {
      for await (const v of withinBound(source, bound).validators()) read.push(v.pubkey);
    };
    await expect(iterate()).rejects.toBeInstanceOf(FutureRecordError);
    await expect(iterate()).rejects.toBeInstanceOf(SlashingImportError);
    expect(read).toEqual([pubkey, pubkey]);
  });
});
