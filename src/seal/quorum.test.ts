import { describe, expect, test } from "bun:test";
import { addShare, isExpired, operationAllowed, startProgress, wipeProgress } from "./quorum";

const share = (byte: number) => new Uint8Array(33).fill(byte);

describe("quorum progress", () => {
  test("distinct operators count once each; the threshold completes with every share", () => {
    let progress = startProgress("unseal", "seal-a", 1_000);
    const first = addShare(progress, "operator-1", share(1), 3);
    expect(first.outcome).toBe("pending");
    if (first.outcome !== "pending") return;
    progress = first.progress;
    expect(addShare(progress, "operator-1", share(9), 3)).toEqual({ outcome: "duplicate" });
    const second = addShare(progress, "operator-2", share(2), 3);
    if (second.outcome !== "pending") throw new Error("expected pending");
    const third = addShare(second.progress, "operator-3", share(3), 3);
    expect(third.outcome).toBe("complete");
    if (third.outcome === "complete") expect(third.shares.map((s) => s[0])).toEqual([1, 2, 3]);
  });

  test("a progress object is never mutated: earlier views keep their count", () => {
    const progress = startProgress("generate-root", "seal-a", 0);
    addShare(progress, "operator-1", share(1), 2);
    expect(progress.shares.size).toBe(0);
  });

  test("threshold 1 completes on the first share", () => {
    expect(addShare(startProgress("unseal", "s", 0), "operator-1", share(1), 1).outcome).toBe(
      "complete",
    );
  });

  test("expiry: at started + timeout, never when the timeout is 0", () => {
    const progress = startProgress("unseal", "s", 10_000);
    expect(isExpired(progress, 69_999, 60_000)).toBe(false);
    expect(isExpired(progress, 70_000, 60_000)).toBe(true);
    expect(isExpired(progress, Number.MAX_SAFE_INTEGER, 0)).toBe(false);
  });

  test("unseal only while sealed; generate-root and rotate-quorum only while unsealed; nothing before init", () => {
    expect(operationAllowed("unseal", "sealed")).toBe(true);
    expect(operationAllowed("unseal", "unsealed")).toBe(false);
    expect(operationAllowed("generate-root", "sealed")).toBe(false);
    expect(operationAllowed("generate-root", "unsealed")).toBe(true);
    expect(operationAllowed("rotate-quorum", "unsealed")).toBe(true);
    for (const op of ["unseal", "generate-root", "rotate-quorum"] as const)
      expect(operationAllowed(op, "uninitialized")).toBe(false);
  });

  test("wiping a progress zeroes its shares", () => {
    const kept = share(7);
    const result = addShare(startProgress("unseal", "s", 0), "operator-1", kept, 2);
    if (result.outcome !== "pending") throw new Error("expected pending");
    wipeProgress(result.progress);
    expect(kept.every((b) => b === 0)).toBe(true);
  });
});
