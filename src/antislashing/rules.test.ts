import { describe, expect, test } from "bun:test";
import {
  type AttestationHistory,
  type AttestationWatermark,
  type BlockHistory,
  type BlockWatermark,
  decideAttestation,
  decideAttestationMinimal,
  decideBlock,
  decideBlockMinimal,
  genesisMismatch,
  lowWatermarkSource,
  mergeImportedAttestations,
  mergeImportedBlocks,
  raisedAttestationWatermark,
  raisedBlockWatermark,
  rootMatches,
  type StoredAttestation,
} from "./rules";
import type { Decision, RefusalReason } from "./store";

const R = (n: number) => new Uint8Array(32).fill(n);
const ZERO = new Uint8Array(32);

const noBlocks: BlockHistory = { sameSlot: null, minSlot: null };
const noVotes: AttestationHistory = {
  sameTarget: null,
  surroundedByNew: null,
  surroundingNew: null,
  minSource: null,
  minTarget: null,
};
const att = (s: number, t: number, root: Uint8Array | null = R(s * 16 + t)): StoredAttestation => ({
  sourceEpoch: BigInt(s),
  targetEpoch: BigInt(t),
  signingRoot: root,
});
const newBlock = (slot: number, root: Uint8Array) => ({ slot: BigInt(slot), signingRoot: root });
const newVote = (s: number, t: number, root: Uint8Array) => ({
  sourceEpoch: BigInt(s),
  targetEpoch: BigInt(t),
  signingRoot: root,
});

function reason(decision: Decision): RefusalReason | "new" | "same_data" {
  return decision.outcome === "refused" ? decision.reason : decision.outcome;
}

describe("signing roots", () => {
  test("a missing (imported) root never matches, not even zero", () => {
    expect(rootMatches(null, ZERO)).toBe(false);
    expect(rootMatches(null, R(1))).toBe(false);
  });
  test("a zero root is an ordinary root", () => {
    expect(rootMatches(ZERO, ZERO)).toBe(true);
    expect(rootMatches(ZERO, R(1))).toBe(false);
  });
});

describe("complete strategy: blocks", () => {
  test("a validator's first block is new", () => {
    expect(decideBlock(noBlocks, newBlock(0, R(1)))).toEqual({ outcome: "new" });
  });

  test("condition 1: a different block at a signed slot is a double proposal", () => {
    const history: BlockHistory = { sameSlot: { slot: 10n, signingRoot: R(1) }, minSlot: 5n };
    const decision = decideBlock(history, newBlock(10, R(2)));
    expect(decision).toMatchObject({ outcome: "refused", reason: "double_block_proposal" });
    expect(decision.outcome === "refused" && decision.detail).toContain("slot 10");
  });

  test("condition 1: an imported block without a signing root makes every block at its slot slashable", () => {
    const history: BlockHistory = { sameSlot: { slot: 10n, signingRoot: null }, minSlot: 10n };
    expect(reason(decideBlock(history, newBlock(10, R(1))))).toBe("double_block_proposal");
    expect(reason(decideBlock(history, newBlock(10, ZERO)))).toBe("double_block_proposal");
  });

  test("a repeat signing (same slot, same root) is allowed, even at the low watermark", () => {
    const history: BlockHistory = { sameSlot: { slot: 10n, signingRoot: R(1) }, minSlot: 10n };
    expect(decideBlock(history, newBlock(10, R(1)))).toEqual({ outcome: "same_data" });
  });

  test("condition 2: slot <= the minimum recorded slot is refused", () => {
    const history: BlockHistory = { sameSlot: null, minSlot: 10n };
    expect(reason(decideBlock(history, newBlock(9, R(1))))).toBe("block_slot_below_low_watermark");
    expect(reason(decideBlock(history, newBlock(0, R(1))))).toBe("block_slot_below_low_watermark");
  });

  test("above the minimum, a free slot is signable (complete databases avoid false positives)", () => {
    expect(decideBlock({ sameSlot: null, minSlot: 10n }, newBlock(11, R(1)))).toEqual({
      outcome: "new",
    });
  });

  test("facts inconsistent with the request are a programming error", () => {
    expect(() =>
      decideBlock({ sameSlot: { slot: 3n, signingRoot: R(1) }, minSlot: 3n }, newBlock(4, R(1))),
    ).toThrow();
  });
});

describe("complete strategy: attestations", () => {
  test("a validator's first attestation is new", () => {
    expect(decideAttestation(noVotes, newVote(0, 0, R(1)))).toEqual({ outcome: "new" });
  });

  test("source after target is never signable", () => {
    expect(reason(decideAttestation(noVotes, newVote(5, 4, R(1))))).toBe("source_after_target");
  });

  test("condition 3 (double vote): a different attestation for a signed target", () => {
    const history = { ...noVotes, sameTarget: att(1, 2, R(7)), minSource: 1n, minTarget: 2n };
    expect(reason(decideAttestation(history, newVote(1, 2, R(8))))).toBe("double_vote");
    expect(reason(decideAttestation(history, newVote(0, 2, R(7))))).toBe("double_vote");
  });

  test("condition 3: an imported attestation without root is a double vote for any new one at its target", () => {
    const history = { ...noVotes, sameTarget: att(1, 2, null), minSource: 1n, minTarget: 2n };
    expect(reason(decideAttestation(history, newVote(1, 2, ZERO)))).toBe("double_vote");
  });

  test("a repeat signing (same source, target and root) is allowed, even at the low watermark", () => {
    const history = { ...noVotes, sameTarget: att(1, 2, R(7)), minSource: 1n, minTarget: 2n };
    expect(decideAttestation(history, newVote(1, 2, R(7)))).toEqual({ outcome: "same_data" });
  });

  test("condition 3 (surround): the new vote surrounds a signed one", () => {
    const history = { ...noVotes, surroundedByNew: att(3, 4), minSource: 3n, minTarget: 4n };
    const decision = decideAttestation(history, newVote(2, 5, R(1)));
    expect(reason(decision)).toBe("surrounding_vote");
    expect(decision.outcome === "refused" && decision.detail).toContain("source 3 → target 4");
  });

  test("condition 3 (surround): a signed vote surrounds the new one", () => {
    const history = { ...noVotes, surroundingNew: att(2, 5), minSource: 2n, minTarget: 5n };
    expect(reason(decideAttestation(history, newVote(3, 4, R(1))))).toBe("surrounded_vote");
  });

  test("condition 4: source below the minimum recorded source", () => {
    const history = { ...noVotes, minSource: 5n, minTarget: 10n };
    expect(reason(decideAttestation(history, newVote(4, 11, R(1))))).toBe(
      "attestation_source_below_low_watermark",
    );
  });

  test("condition 5: target at or below the minimum recorded target", () => {
    const history = { ...noVotes, minSource: 5n, minTarget: 10n };
    expect(reason(decideAttestation(history, newVote(5, 10, R(1))))).toBe(
      "attestation_target_below_low_watermark",
    );
    expect(reason(decideAttestation(history, newVote(6, 9, R(1))))).toBe(
      "attestation_target_below_low_watermark",
    );
  });

  test("between the watermarks, a non-conflicting vote is signable", () => {
    const history = { ...noVotes, minSource: 5n, minTarget: 10n };
    expect(decideAttestation(history, newVote(5, 11, R(1)))).toEqual({ outcome: "new" });
  });

  test("precedence: source/target order, then target, then surround, then watermarks", () => {
    const everything: AttestationHistory = {
      sameTarget: att(2, 6, R(9)),
      surroundedByNew: att(4, 5),
      surroundingNew: att(1, 9),
      minSource: 3n,
      minTarget: 7n,
    };
    expect(reason(decideAttestation(everything, newVote(7, 6, R(1))))).toBe("source_after_target");
    expect(reason(decideAttestation(everything, newVote(2, 6, R(1))))).toBe("double_vote");
    const noTarget = { ...everything, sameTarget: null };
    expect(reason(decideAttestation(noTarget, newVote(2, 6, R(1))))).toBe("surrounding_vote");
    expect(
      reason(decideAttestation({ ...noTarget, surroundedByNew: null }, newVote(2, 6, R(1)))),
    ).toBe("surrounded_vote");
  });
});

describe("refusal wording: a record, a floor, or a minimal watermark", () => {
  const detail = (decision: Decision) => (decision.outcome === "refused" ? decision.detail : "");

  test("complete: the lowest record is 'recorded', a floor is a floor and never 'recorded'", () => {
    const byRecord = detail(decideBlock({ sameSlot: null, minSlot: 10n }, newBlock(5, R(1))));
    expect(byRecord).toBe("slot 5 is at or below the lowest recorded block slot 10");
    const byFloor = detail(
      decideBlock({ sameSlot: null, minSlot: 10n, minSlotFrom: "floor" }, newBlock(5, R(1))),
    );
    expect(byFloor).toStartWith("slot 5 is at or below the validator's block slot floor 10 (");
    expect(byFloor).not.toContain("recorded");
    const floors: AttestationHistory = {
      ...noVotes,
      minSource: 5n,
      minTarget: 10n,
      minSourceFrom: "floor",
      minTargetFrom: "floor",
    };
    expect(detail(decideAttestation(floors, newVote(4, 11, R(1))))).toStartWith(
      "source epoch 4 is below the validator's source epoch floor 5 (",
    );
    expect(detail(decideAttestation(floors, newVote(6, 9, R(1))))).toStartWith(
      "target epoch 9 is at or below the validator's target epoch floor 10 (",
    );
  });

  test("which one a store's watermark is: the floor, unless a record sits at it", () => {
    expect(lowWatermarkSource(10n, null, 10n)).toBe("floor");
    expect(lowWatermarkSource(10n, 4n, 10n)).toBe("floor");
    // sqlite hands the floor even below the lowest record: still the floor that refused.
    expect(lowWatermarkSource(3n, 4n, 3n)).toBe("floor");
    // Pruning leaves a record at its floor; postgres's greatest() picks the record above a floor.
    expect(lowWatermarkSource(10n, 10n, 10n)).toBe("record");
    expect(lowWatermarkSource(12n, 12n, 10n)).toBe("record");
    expect(lowWatermarkSource(12n, 12n, null)).toBe("record");
  });

  test("minimal: watermarks fold imports in, so never 'the highest signed'", () => {
    const blockMark: BlockWatermark = { maxSlot: 10n, signingRoot: null };
    const voteMark: AttestationWatermark = { maxSource: 5n, maxTarget: 10n, targetRoot: null };
    expect(detail(decideBlockMinimal(blockMark, newBlock(9, R(1))))).toBe(
      "slot 9 is below the highest block slot signed or imported, 10 (minimal strategy: only slots above it can be signed)",
    );
    expect(detail(decideBlockMinimal(blockMark, newBlock(10, R(1))))).toBe(
      "slot 10 is the highest block slot signed or imported, whose root is unknown (minimal strategy: only slots above it can be signed)",
    );
    expect(detail(decideAttestationMinimal(voteMark, newVote(5, 9, R(1))))).toBe(
      "target epoch 9 is below the highest target epoch signed or imported, 10 (minimal strategy)",
    );
    expect(detail(decideAttestationMinimal(voteMark, newVote(4, 11, R(1))))).toBe(
      "source epoch 4 is below the highest source epoch signed or imported, 5 (minimal strategy)",
    );
    for (const d of [
      decideBlockMinimal(blockMark, newBlock(9, R(1))),
      decideAttestationMinimal(voteMark, newVote(5, 10, R(1))),
    ])
      expect(detail(d)).not.toContain("highest signed");
  });
});

describe("minimal strategy", () => {
  const blockMark: BlockWatermark = { maxSlot: 10n, signingRoot: R(1) };
  const voteMark: AttestationWatermark = { maxSource: 5n, maxTarget: 10n, targetRoot: R(2) };

  test("blocks: only above the highest signed slot, or an exact repeat of it", () => {
    expect(decideBlockMinimal(null, newBlock(0, R(1)))).toEqual({ outcome: "new" });
    expect(decideBlockMinimal(blockMark, newBlock(11, R(3)))).toEqual({ outcome: "new" });
    expect(decideBlockMinimal(blockMark, newBlock(10, R(1)))).toEqual({ outcome: "same_data" });
    expect(reason(decideBlockMinimal(blockMark, newBlock(10, R(3))))).toBe("double_block_proposal");
    expect(reason(decideBlockMinimal(blockMark, newBlock(9, R(3))))).toBe(
      "block_slot_below_low_watermark",
    );
    const unknownRoot = { maxSlot: 10n, signingRoot: null };
    expect(reason(decideBlockMinimal(unknownRoot, newBlock(10, R(1))))).toBe(
      "double_block_proposal",
    );
  });

  test("attestations: source >= highest source and target > highest target, or an exact repeat", () => {
    expect(decideAttestationMinimal(null, newVote(0, 0, R(1)))).toEqual({ outcome: "new" });
    expect(decideAttestationMinimal(voteMark, newVote(5, 11, R(3)))).toEqual({ outcome: "new" });
    expect(decideAttestationMinimal(voteMark, newVote(5, 10, R(2)))).toEqual({
      outcome: "same_data",
    });
    expect(reason(decideAttestationMinimal(voteMark, newVote(5, 10, R(3))))).toBe("double_vote");
    expect(reason(decideAttestationMinimal(voteMark, newVote(6, 9, R(3))))).toBe(
      "attestation_target_below_low_watermark",
    );
    expect(reason(decideAttestationMinimal(voteMark, newVote(4, 11, R(3))))).toBe(
      "attestation_source_below_low_watermark",
    );
    expect(reason(decideAttestationMinimal(voteMark, newVote(12, 11, R(3))))).toBe(
      "source_after_target",
    );
    expect(reason(decideAttestationMinimal(null, newVote(1, 0, R(3))))).toBe("source_after_target");
  });

  test("signing raises the watermark to the new message", () => {
    expect(raisedBlockWatermark(newBlock(12, R(4)))).toEqual({ maxSlot: 12n, signingRoot: R(4) });
    expect(raisedAttestationWatermark(newVote(6, 12, R(4)))).toEqual({
      maxSource: 6n,
      maxTarget: 12n,
      targetRoot: R(4),
    });
  });

  test("import takes the maxima, never lowers, and drops imported roots", () => {
    expect(mergeImportedBlocks(null, [])).toBeNull();
    expect(
      mergeImportedBlocks(null, [{ slot: 4n }, { slot: 243n, signingRoot: R(5) }, { slot: 98n }]),
    ).toEqual({
      maxSlot: 243n,
      signingRoot: null,
    });
    expect(mergeImportedBlocks({ maxSlot: 351n, signingRoot: R(1) }, [{ slot: 243n }])).toEqual({
      maxSlot: 351n,
      signingRoot: R(1),
    });
    expect(
      mergeImportedBlocks({ maxSlot: 351n, signingRoot: R(1) }, [
        { slot: 351n, signingRoot: R(1) },
      ]),
    ).toEqual({
      maxSlot: 351n,
      signingRoot: null,
    });
    expect(
      mergeImportedAttestations(voteMark, [
        { sourceEpoch: 7n, targetEpoch: 8n },
        { sourceEpoch: 1n, targetEpoch: 3n },
      ]),
    ).toEqual({ maxSource: 7n, maxTarget: 10n, targetRoot: R(2) });
    expect(
      mergeImportedAttestations(voteMark, [
        { sourceEpoch: 2n, targetEpoch: 10n, signingRoot: R(2) },
      ]),
    ).toEqual({
      maxSource: 5n,
      maxTarget: 10n,
      targetRoot: null,
    });
  });
});

test("a genesis validators root mismatch names both roots", () => {
  const decision = genesisMismatch(R(1), R(2));
  expect(decision).toMatchObject({
    outcome: "refused",
    reason: "genesis_validators_root_mismatch",
  });
  expect(decision.outcome === "refused" && decision.detail).toContain(`0x${"01".repeat(32)}`);
  expect(decision.outcome === "refused" && decision.detail).toContain(`0x${"02".repeat(32)}`);
});
