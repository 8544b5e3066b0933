import { describe, expect, test } from "bun:test";
import { futureRefusal, latestAllowedEpoch, wallClockEpoch } from "./future";

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
