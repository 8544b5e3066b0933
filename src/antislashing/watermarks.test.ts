import { describe, expect, test } from "bun:test";
import type { Decision } from "./store";
import {
  applyWatermarkChange,
  attestationBoundRefusal,
  blockBoundRefusal,
  highWatermarkBody,
  highWatermarkProblem,
  highWatermarkRaiseProblem,
  requestedLowWatermark,
} from "./watermarks";

const reason = (d: Decision | null) =>
  d === null ? null : d.outcome === "refused" ? d.reason : d.outcome;
const mark = (epoch: number, slot: number) => ({ epoch: BigInt(epoch), slot: BigInt(slot) });
/** 12 s slots, 32 per epoch: an epoch is 384 s. */
const clock = { genesisTime: 1_000_000n, secondsPerSlot: 12n, slotsPerEpoch: 32n };
const atEpoch = (epoch: number, secondsInto = 0) => (1_000_000 + epoch * 384 + secondsInto) * 1000;

describe("bounds", () => {
  const bounds = { low: mark(5, 160), high: mark(10, 320) };
  test("blocks: from the low slot up to, not including, the high slot", () => {
    expect(reason(blockBoundRefusal(bounds, 159n))).toBe("block_slot_below_low_watermark");
    expect(blockBoundRefusal(bounds, 160n)).toBeNull();
    expect(blockBoundRefusal(bounds, 319n)).toBeNull();
    expect(reason(blockBoundRefusal(bounds, 320n))).toBe("block_slot_at_or_above_high_watermark");
  });
  test("attestations: source and target in [low epoch, high epoch)", () => {
    expect(reason(attestationBoundRefusal(bounds, 4n, 6n))).toBe(
      "attestation_source_below_low_watermark",
    );
    expect(attestationBoundRefusal(bounds, 5n, 9n)).toBeNull();
    expect(reason(attestationBoundRefusal(bounds, 9n, 10n))).toBe(
      "attestation_at_or_above_high_watermark",
    );
    // Malformed (source after target): left to the history rules' source_after_target.
    expect(attestationBoundRefusal(bounds, 11n, 9n)).toBeNull();
    expect(attestationBoundRefusal({ low: mark(5, 0) }, 6n, 4n)).toBeNull();
  });
  test("refusals name the bound and the command", () => {
    const refusal = blockBoundRefusal(bounds, 400n);
    expect(refusal?.outcome === "refused" && refusal.detail).toContain(
      "slot 400 is at or above the database's high watermark, slot 320",
    );
  });
  test("none: nothing refused", () => {
    expect(blockBoundRefusal({}, 0n)).toBeNull();
    expect(attestationBoundRefusal({}, 0n, 2n ** 64n - 1n)).toBeNull();
  });
});

describe("changes", () => {
  test("a low watermark only rises, slot and epoch each on its own", () => {
    const first = applyWatermarkChange({}, { kind: "raise_low", low: mark(5, 160) });
    expect(first).toEqual({ low: mark(5, 160) });
    expect(applyWatermarkChange(first, { kind: "raise_low", low: mark(3, 200) })).toEqual({
      low: mark(5, 200),
    });
  });
  test("the high watermark is set, replaced and removed; the low one stays", () => {
    const both = applyWatermarkChange(
      { low: mark(1, 32) },
      { kind: "set_high", high: mark(9, 288) },
    );
    expect(both).toEqual({ low: mark(1, 32), high: mark(9, 288) });
    expect(applyWatermarkChange(both, { kind: "remove_high" })).toEqual({ low: mark(1, 32) });
    expect(highWatermarkBody(both)).toEqual({ epoch: "9", slot: "288" });
    expect(highWatermarkBody({ low: mark(1, 32) })).toEqual({});
  });
});

describe("a high watermark must lie in the future", () => {
  // Epoch 100, max_future_epochs 2: a signer may sign up to epoch 102; the earliest bound is 104.
  test("one whole epoch beyond the latest epoch a signer may sign", () => {
    expect(highWatermarkProblem(mark(104, 104 * 32), clock, 2n, atEpoch(100, 383))).toBeNull();
    const problem = highWatermarkProblem(mark(103, 103 * 32), clock, 2n, atEpoch(100));
    expect(problem).toContain("must lie in the future: epoch 103 is too close");
    expect(problem).toContain("a signer may sign up to epoch 102 now");
    expect(problem).toContain("the earliest is epoch 104, slot 3328");
  });
  test("the slot too", () => {
    expect(highWatermarkProblem(mark(200, 3327), clock, 2n, atEpoch(100))).toContain(
      "slot 3327 (epoch 103) is too close",
    );
  });
  test("a bound in the past is refused", () => {
    expect(highWatermarkProblem(mark(1, 32), clock, 2n, atEpoch(100))).not.toBeNull();
  });
});

describe("the low watermark asked for", () => {
  test("given both, as given; given one, the other from it (whole epochs)", () => {
    expect(requestedLowWatermark({ epoch: 7n, slot: 5n }, 32n, undefined)).toEqual(mark(7, 5));
    expect(requestedLowWatermark({ epoch: 7n }, 32n, undefined)).toEqual(mark(7, 224));
    expect(requestedLowWatermark({ slot: 225n }, 32n, undefined)).toEqual(mark(8, 225));
    expect(requestedLowWatermark({ slot: 224n }, 32n, undefined)).toEqual(mark(7, 224));
  });
  test("given neither, the next epoch and its first slot; without a clock, a reason", () => {
    expect(requestedLowWatermark({}, 32n, 100n)).toEqual(mark(101, 3232));
    expect(requestedLowWatermark({}, 32n, undefined)).toContain("genesis time is unknown");
  });
});

describe("replacing a high watermark", () => {
  const stored = mark(110, 3520);
  test("lowering it, or replacing one still ahead, is fine", () => {
    expect(highWatermarkRaiseProblem(undefined, mark(200, 6400), 102n)).toBeNull();
    expect(highWatermarkRaiseProblem(stored, mark(105, 3360), 120n)).toBeNull();
    expect(highWatermarkRaiseProblem(stored, mark(200, 6400), 109n)).toBeNull();
  });
  test("raising one a signer may have reached is refused, naming the way out", () => {
    const problem = highWatermarkRaiseProblem(stored, mark(200, 6400), 110n);
    expect(problem).toContain("the high watermark (epoch 110, slot 3520) has been reached");
    expect(problem).toContain("--remove-high-watermark first");
    expect(highWatermarkRaiseProblem(stored, mark(110, 3521), 115n)).not.toBeNull();
  });
});
