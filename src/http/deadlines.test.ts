import { describe, expect, test } from "bun:test";
import { Deadlines } from "./deadlines";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits for `count` firings however loaded the machine is; the deadlines' times are asserted. */
async function until(fired: readonly unknown[], count: number): Promise<void> {
  const limit = performance.now() + 10_000;
  while (fired.length < count && performance.now() < limit) await sleep(5);
}

describe("Deadlines", () => {
  test("each fires once its full duration has passed, in the order they were set", async () => {
    const deadlines = new Deadlines();
    const fired: [string, number][] = [];
    const start = performance.now();
    deadlines.add(40, () => fired.push(["a", performance.now() - start]));
    await sleep(10);
    deadlines.add(40, () => fired.push(["b", performance.now() - start]));
    deadlines.add(15, () => fired.push(["short", performance.now() - start]));
    await until(fired, 3);
    expect(fired.map(([name]) => name)).toEqual(["short", "a", "b"]);
    const at = Object.fromEntries(fired);
    expect(at.short).toBeGreaterThanOrEqual(25 - 1);
    expect(at.a).toBeGreaterThanOrEqual(40 - 1);
    expect(at.b).toBeGreaterThanOrEqual(50 - 1);
    expect(deadlines.pending).toBe(0);
  });

  test("a cancelled one never fires; the ones behind it still fire on time", async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const first = deadlines.add(20, () => fired.push("first"));
    await sleep(5);
    const start = performance.now();
    deadlines.add(20, () => fired.push(`second after ${Math.round(performance.now() - start)}`));
    const third = deadlines.add(20, () => fired.push("third"));
    first.cancel();
    third.cancel();
    third.cancel(); // twice is a no-op
    expect(deadlines.pending).toBe(1);
    await until(fired, 1);
    await sleep(30);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatch(/^second after \d+$/);
    expect(Number(fired[0]?.split(" ")[2])).toBeGreaterThanOrEqual(19);
    first.cancel(); // after the others fired: still a no-op
    expect(deadlines.pending).toBe(0);
  });

  test("a deadline set after the list emptied is timed again", async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    deadlines.add(10, () => fired.push("one")).cancel();
    await sleep(25);
    deadlines.add(10, () => fired.push("two"));
    await until(fired, 1);
    expect(fired).toEqual(["two"]);
  });

  test("one set from inside a firing one is timed on its own", async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    deadlines.add(10, () => {
      fired.push("outer");
      deadlines.add(10, () => fired.push("inner"));
    });
    await until(fired, 2);
    expect(fired).toEqual(["outer", "inner"]);
  });
});
