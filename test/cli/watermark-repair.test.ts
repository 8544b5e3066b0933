// `sigil slashing watermark-repair` as operators run it (a separate process), on sqlite; what it
// writes is read back through the store, and a refused command is shown to change nothing.
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import type { DatabaseWatermarks } from "../../src/antislashing/watermarks";
import { runSigil, TempDir } from "../support/cli";
import { INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

const GVR_BYTES = new Uint8Array(32).fill(4);
const GVR = `0x${"04".repeat(32)}`;
const [KEY_A = "", KEY_B = ""] = INTEROP_KEYS;
/** A devnet whose clock is in epoch 100, 10 s in (12 s slots, 32 per epoch: 384 s an epoch). */
const EPOCH_SECONDS = 384;
const GENESIS = Math.floor(Date.now() / 1000) - 100 * EPOCH_SECONDS - 10;

function setup(name: string, networkConfig = `genesis_time: ${GENESIS}`) {
  const database = join(dir.path, `${name}.sqlite`);
  const config = dir.file(
    `${name}.yaml`,
    `network_config: {genesis_validators_root: "${GVR}", ${networkConfig}}\n` +
      `antislashing: {backend: sqlite, path: "${database}"}\n`,
  );
  const created = runSigil(["slashing", "init", "-c", config]);
  expect(created.code, created.stderr).toBe(0);
  const repair = (...args: string[]) =>
    runSigil(["slashing", "watermark-repair", "-c", config, ...args]);
  const stored = async (): Promise<DatabaseWatermarks> => {
    const store = await openSqliteStore(database, { create: false, access: "read" });
    try {
      return await store.databaseWatermarks();
    } finally {
      await store.close();
    }
  };
  return { config, database, repair, stored };
}

const mark = (epoch: number, slot: number) => ({ epoch: BigInt(epoch), slot: BigInt(slot) });

describe("sigil slashing watermark-repair: the low watermark", () => {
  test("defaults to the next epoch of the clock and its first slot, and never goes lower", async () => {
    const { repair, stored } = setup("low");
    const first = repair();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("low watermark epoch 101, slot 3232; high watermark none");
    expect(await stored()).toEqual({ low: mark(101, 3232) });
    const lower = repair("--epoch", "50", "--slot", "4000");
    expect(lower.code, lower.stderr).toBe(0);
    expect(await stored()).toEqual({ low: mark(101, 4000) });
    const epochOnly = repair("--epoch", "120");
    expect(epochOnly.code, epochOnly.stderr).toBe(0);
    expect(epochOnly.stdout).toContain("low watermark epoch 120, slot 4000");
    expect(await stored()).toEqual({ low: mark(120, 4000) });
  });

  test("--validator-ids raises only those validators' floors, not the database's", async () => {
    const { repair, stored, database } = setup("ids");
    const result = repair("--epoch", "200", "--slot", "6400", "--validator-ids", KEY_A);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("low watermark of 1 validator raised to epoch 200, slot 6400");
    expect(await stored()).toEqual({});
    const store = await openSqliteStore(database, { create: false });
    try {
      const at = (pubkey: string, slot: bigint) =>
        store.checkAndInsertBlock(GVR_BYTES, { pubkey, slot, signingRoot: new Uint8Array(32) });
      expect(await at(KEY_A, 6399n)).toMatchObject({ reason: "block_slot_below_low_watermark" });
      expect(await at(KEY_A, 6400n)).toEqual({ outcome: "new" });
      expect(await at(KEY_B, 6399n)).toEqual({ outcome: "new" });
    } finally {
      await store.close();
    }
  });

  test("bad values and a network without a clock are refused, and nothing changes", async () => {
    const { repair, stored } = setup("low-bad");
    for (const args of [["--epoch=-1"], ["--slot", "1e3"], ["--epoch", (2n ** 64n).toString()]]) {
      const result = repair(...args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("is not a decimal uint64");
    }
    expect(repair("--validator-ids", "0x12").stderr).toContain("is not 0x + 96 hex characters");
    expect(await stored()).toEqual({});
    const noClock = setup("no-clock", 'genesis_fork_version: "0x10000910"');
    const result = noClock.repair();
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("the network's genesis time is unknown");
    expect(result.stderr).toContain("nothing was changed");
    expect(await noClock.stored()).toEqual({});
  });
});

describe("sigil slashing watermark-repair: the high watermark", () => {
  test("set when it lies in the future, shown, removed", async () => {
    const { repair, stored } = setup("high");
    const set = repair("--set-high-watermark", "--epoch", "110", "--slot", "3520");
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain("low watermark none; high watermark epoch 110, slot 3520");
    expect(await stored()).toEqual({ high: mark(110, 3520) });
    const removed = repair("--remove-high-watermark");
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain("high watermark none");
    expect(await stored()).toEqual({});
  });

  test("refused, with the reason, unless it lies in the future; nothing changes", async () => {
    const { repair, stored } = setup("high-past");
    // Epoch 100 now, max_future_epochs 2: a signer may sign up to epoch 102; the earliest is 104.
    const close = repair("--set-high-watermark", "--epoch", "103", "--slot", "3328");
    expect(close.code).toBe(2);
    expect(close.stderr).toContain(
      "the high watermark must lie in the future: epoch 103 is too close",
    );
    expect(close.stderr).toContain("a signer may sign up to epoch 102 now");
    expect(close.stderr).toContain("the earliest is epoch 104, slot 3328");
    expect(close.stderr).toContain("nothing was changed");
    const slot = repair("--set-high-watermark", "--epoch", "200", "--slot", "3300");
    expect(slot.code).toBe(2);
    expect(slot.stderr).toContain("slot 3300 (epoch 103) is too close");
    expect(await stored()).toEqual({});
  });

  test("one a signer may have reached is not raised; removed first, a new one is set", async () => {
    const { repair, stored, database } = setup("high-reached");
    // Set as an earlier run would have, when epoch 101 still lay ahead; a signer may now sign to 102.
    const store = await openSqliteStore(database, { create: false });
    await store.changeWatermarks({ kind: "set_high", high: mark(101, 3232) });
    await store.close();
    const raised = repair("--set-high-watermark", "--epoch", "200", "--slot", "6400");
    expect(raised.code).toBe(2);
    expect(raised.stderr).toContain("the high watermark (epoch 101, slot 3232) has been reached");
    expect(raised.stderr).toContain("remove it with --remove-high-watermark first");
    expect(await stored()).toEqual({ high: mark(101, 3232) });
    expect(repair("--remove-high-watermark").code).toBe(0);
    const set = repair("--set-high-watermark", "--epoch", "200", "--slot", "6400");
    expect(set.code, set.stderr).toBe(0);
    expect(await stored()).toEqual({ high: mark(200, 6400) });
  });

  test("usage: both --epoch and --slot; --remove-high-watermark alone; noop has none", () => {
    const { repair } = setup("high-usage");
    const half = repair("--set-high-watermark", "--epoch", "200");
    expect(half.code).toBe(2);
    expect(half.stderr).toContain("--set-high-watermark needs both --epoch and --slot");
    const mixed = repair("--remove-high-watermark", "--epoch", "5");
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain("--remove-high-watermark takes no other option");
    const noop = dir.file(
      "noop.yaml",
      `network_config: {genesis_validators_root: "${GVR}", genesis_time: ${GENESIS}}\n` +
        `antislashing: {backend: noop}\n`,
    );
    const result = runSigil([
      "slashing",
      "watermark-repair",
      "-c",
      noop,
      "--remove-high-watermark",
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("antislashing.backend is noop: it keeps no watermarks");
  });
});
