// Start-up opens the slashing database while the BLS worker threads start (src/app/signer.ts):
// whichever way a start ends, no worker thread it started is left behind, and a database that
// must exist is not created.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SlashingDatabaseError } from "../../src/antislashing/store";
import { THREAD_NAMES } from "../../src/os/thread-name";
import { TempDir } from "../support/cli";
import { startInProcessSigner } from "../support/signer";

const WORKER_NAMES = new Set<string>(["Worker", ...Object.values(THREAD_NAMES)]);

const dir = new TempDir();
afterAll(() => dir.remove());

/**
 * This process's worker threads: sigil's own, by the names they give themselves (the BLS pool,
 * the slashing thread, the checkpoint worker), and any other that keeps Bun's name "Worker".
 */
function workerThreads(): number {
  let count = 0;
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      if (WORKER_NAMES.has(readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim())) count++;
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return count;
}

/** Waits until at most `count` worker threads are left (a terminated thread exits shortly). */
async function settlesTo(count: number): Promise<number> {
  const deadline = Date.now() + 5_000;
  while (workerThreads() > count && Date.now() < deadline) await Bun.sleep(20);
  return workerThreads();
}

describe.skipIf(process.platform !== "linux")(
  "start-up with the BLS pool beside the database",
  () => {
    test("a missing database stops the start, creates nothing and stops the workers", async () => {
      const before = workerThreads();
      const path = join(dir.path, "missing.sqlite");
      const started = startInProcessSigner(dir, "missing", {
        yaml: [`antislashing: {backend: sqlite, path: "${path}"}`, "bls: {workers: 2}"],
        initSlashingProtection: false,
        logLevel: "error",
      });
      await expect(started).rejects.toBeInstanceOf(SlashingDatabaseError);
      expect(existsSync(path)).toBe(false);
      // At most as many as before: a worker thread of the test process that was there before
      // (not the start's) may end meanwhile.
      expect(await settlesTo(before)).toBeLessThanOrEqual(before);
    });

    test("a start logs both steps before it listens, and its stop leaves no worker", async () => {
      const before = workerThreads();
      const signer = await startInProcessSigner(dir, "ok", {
        yaml: [
          `antislashing: {backend: sqlite, path: "${join(dir.path, "ok.sqlite")}"}`,
          "bls: {workers: 2}",
        ],
      });
      try {
        const messages = signer.logs.map((line) => (JSON.parse(line) as { msg: string }).msg);
        const listening = messages.indexOf("sigil listening");
        expect(messages.indexOf("slashing protection")).toBeGreaterThanOrEqual(0);
        expect(messages.indexOf("slashing protection")).toBeLessThan(listening);
        expect(messages.indexOf("BLS worker pool")).toBeGreaterThanOrEqual(0);
        expect(messages.indexOf("BLS worker pool")).toBeLessThan(listening);
        expect(workerThreads()).toBeGreaterThanOrEqual(before + 2);
      } finally {
        await signer.stop();
      }
      expect(await settlesTo(before)).toBeLessThanOrEqual(before);
    });
  },
);
