import { describe, expect, test } from "bun:test";
import { AuthFailureLimiter } from "./limiter";

function limiter(maxClients = 100) {
  let now = 1_000_000;
  const l = new AuthFailureLimiter({
    limit: 3,
    windowMs: 300_000,
    blockMs: 60_000,
    maxClients,
    now: () => now,
  });
  return { l, advance: (ms: number) => (now += ms) };
}

describe("auth failure limiter", () => {
  test("3 failures within the window block for blockMs after the last one", () => {
    const { l, advance } = limiter();
    expect(l.fail("10.0.0.1")).toBe(false);
    advance(100_000);
    expect(l.fail("10.0.0.1")).toBe(false);
    expect(l.blockedFor("10.0.0.1")).toBe(0);
    advance(100_000);
    expect(l.fail("10.0.0.1")).toBe(true);
    expect(l.blockedFor("10.0.0.1")).toBe(60_000);
    expect(l.blockedFor("10.0.0.2")).toBe(0);
    advance(60_001);
    expect(l.blockedFor("10.0.0.1")).toBe(0);
  });

  test("failures further apart than the window never block", () => {
    const { l, advance } = limiter();
    for (let i = 0; i < 10; i++) {
      expect(l.fail("10.0.0.1")).toBe(false);
      advance(150_001);
    }
  });

  test("memory stays bounded under a flood of addresses", () => {
    const { l } = limiter(1000);
    for (let i = 0; i < 50_000; i++) l.fail(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    expect(l.tracked).toBe(1000);
  });
});
