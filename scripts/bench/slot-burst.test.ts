// The slot-burst benchmark's helpers: its committee and its figures (no timing is asserted).
import { describe, expect, test } from "bun:test";
import { burstFigures, committee } from "./slot-burst";

describe("committee", () => {
  test("ceil(N / 32) distinct validators of the set, ascending, the same every time", () => {
    for (const validators of [32, 1000, 10_000]) {
      const members = committee(validators);
      expect(members.length).toBe(Math.ceil(validators / 32));
      expect(new Set(members).size).toBe(members.length);
      expect(members.every((v) => Number.isInteger(v) && v >= 0 && v < validators)).toBe(true);
      expect(members).toEqual([...members].sort((a, b) => a - b));
      expect(committee(validators)).toEqual(members);
    }
  });

  test("spread over the whole set, not one residue class", () => {
    const members = committee(10_000);
    expect(members.some((v) => v >= 9_000)).toBe(true);
    expect(members.some((v) => v < 1_000)).toBe(true);
    expect(new Set(members.map((v) => v % 32)).size).toBeGreaterThan(16);
    expect(committee(10_000, 2)).not.toEqual(members);
  });
});

describe("burstFigures", () => {
  test("the ideal is the burst at the raw rate; the ratios divide by it", () => {
    const done = Array.from({ length: 100 }, (_, i) => i + 1);
    const figures = burstFigures(
      { ok: 100, done_ms: done, latencies_ms: done, first_ms: 1, last_ms: 100 },
      100,
      2000,
    );
    expect(figures.ideal_ms).toBe(50);
    expect(figures.last_over_ideal).toBe(2);
    expect(figures.p99_ms).toBe(99);
    expect(figures.p99_over_ideal).toBe(1.98);
    expect(figures.signatures_per_s).toBe(1000);
  });

  test("no raw rate: no ideal and no ratio", () => {
    const figures = burstFigures(
      { ok: 1, done_ms: [5], latencies_ms: [5], first_ms: 5, last_ms: 5 },
      1,
      0,
    );
    expect(figures.ideal_ms).toBeNull();
    expect(figures.last_over_ideal).toBeNull();
  });
});
