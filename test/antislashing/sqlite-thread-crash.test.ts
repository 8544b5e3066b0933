/**
 * The slashing thread (backends/sqlite/thread-store.ts) dying under checks: every check pending
 * and every later one is refused as a failed sync is (503 slashing_db_unavailable, health DOWN),
 * no check's durable barrier resolves unless its record is in the database, and the database
 * read afterwards holds every record whose barrier resolved (a record without its signature is
 * allowed: safe, as after a crash of the whole process).
 *
 * Nothing here rests on how far the thread got before it was stopped: a connection of the test
 * holds SQLite's write lock from before the checks until the database has been read, so the
 * thread cannot commit (let alone sync) any of them, whenever the stop lands.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import {
  openThreadedSqliteStore,
  SlashingThreadError,
  spawnSlashingThread,
} from "../../src/antislashing/backends/sqlite/thread-store";
import { StoreGuard } from "../../src/antislashing/guard";
import { collectInterchange } from "../../src/antislashing/interchange";
import type { StagedDecision } from "../../src/antislashing/store";
import { WriteHealth } from "../../src/antislashing/write-health";
import { slashingHealth } from "../../src/app/slashing";
import { SigilError } from "../../src/errors";
import { TempDir } from "../support/cli";
import { testLogger } from "../support/log-capture";
import { holdWriteLock } from "../support/sqlite-write-lock";
import { GVR_A, pubkey, root, vote } from "./support";

const dir = new TempDir();
afterAll(() => dir.remove());

type Settled =
  | { staged: "rejected"; error: unknown }
  | { staged: "ok"; durable: "resolved" | "rejected" };

async function settle(check: Promise<StagedDecision>): Promise<Settled> {
  try {
    const staged = await check;
    try {
      await staged.durable;
      return { staged: "ok", durable: "resolved" };
    } catch {
      return { staged: "ok", durable: "rejected" };
    }
  } catch (error) {
    return { staged: "rejected", error };
  }
}

describe("the slashing thread stops under checks", () => {
  test("pending and later checks are refused; every durable record is in the database", async () => {
    const path = join(dir.path, "crash.sqlite");
    let worker: Worker | undefined;
    const lines: string[] = [];
    const logger = testLogger("info", lines);
    const store = await openThreadedSqliteStore(path, {
      create: true,
      checkpoints: "background",
      // A check waits for the test's write lock (below) rather than fail: it is still pending,
      // not refused by SQLite, when the thread is stopped, within milliseconds (20 s of margin;
      // much longer waits made the stop itself slow). Nothing is recorded either way.
      busyTimeoutMs: 20_000,
      logger,
      spawn: () => {
        worker = spawnSlashingThread();
        return worker;
      },
    });
    const writes = new WriteHealth();
    const guard = new StoreGuard(store, logger, { writes });
    // The database is bound and answers, before anything goes wrong.
    expect(await store.bindGenesisValidatorsRoot(GVR_A)).toEqual(GVR_A);
    expect((await slashingHealth(store, writes)).status).toBe("UP");

    // No commit from here until the database has been read: the thread's transaction waits.
    const lock = holdWriteLock(path);
    try {
      // 300 validators' votes in one turn, and the thread stopped once they are handed over.
      const N = 300;
      const checks = Array.from({ length: N }, (_, i) =>
        store.stageAttestation?.(GVR_A, vote(pubkey(i), 1, 2, root("crash", i))),
      ) as Promise<StagedDecision>[];
      // The turn's checks are sent (the store's flush is the immediate queued first); the thread
      // takes them into a transaction that cannot start while the test holds the write lock.
      await new Promise((resolve) => setImmediate(resolve));
      await worker?.terminate();
      const outcomes = await Promise.all(checks.map(settle));
      // A check is decided only at its commit, which the lock forbids: every one of them was still
      // pending when the thread stopped, and is refused for that.
      for (const outcome of outcomes) {
        expect(outcome.staged).toBe("rejected");
        if (outcome.staged === "rejected")
          expect(outcome.error).toBeInstanceOf(SlashingThreadError);
      }

      // A later check, and the guard's approval of one, are refused: 503, nothing signed.
      const later = store.stageAttestation?.(GVR_A, vote(pubkey(N), 1, 2, root("later")));
      await expect(later).rejects.toBeInstanceOf(SlashingThreadError);
      const approval = guard.approve(pubkey(N + 1), {
        slashable: { kind: "attestation", sourceEpoch: 1n, targetEpoch: 2n },
        signingRoot: root("guarded"),
        genesisValidatorsRoot: GVR_A,
      });
      const refused = await approval.then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(SigilError);
      expect((refused as SigilError).code).toBe("slashing_db_unavailable");
      // Health is DOWN, and says why: a write failed and the probe fails too; without a failed
      // write, the ping names the thread.
      const health = await slashingHealth(store, writes);
      expect(health.status).toBe("DOWN");
      expect(health.data?.error).toBe("the last write failed, and a new one fails too");
      expect((await slashingHealth(store)).data?.error).toBe(
        "the slashing protection thread stopped; restart required (see the log)",
      );
      // Said once in the log, by the main thread.
      const said = lines
        .map((line) => JSON.parse(line) as { msg: string; level: string })
        .filter((line) => line.msg.startsWith("the slashing protection thread stopped"));
      expect(said.map((line) => line.level)).toEqual(["error"]);
      // The thread's own lines reach the main thread's logger.
      expect(lines.some((line) => line.includes("checkpoints run in a worker thread"))).toBe(true);
      await expect(store.ping()).rejects.toBeInstanceOf(SlashingThreadError);
      await store.close(); // after the thread died: nothing left to wait for

      // What the database holds, read while the lock still bars any commit: every vote whose
      // barrier resolved must be there (the safety invariant); none resolved, and none is there,
      // nor the later ones: no record and no signature, the state a restart starts from.
      const reader = await openSqliteStore(path, { create: false, access: "read" });
      try {
        const exported = await collectInterchange(await reader.exportInterchange());
        expect(exported.validators.map((v) => v.pubkey)).toEqual([]);
      } finally {
        await reader.close();
      }
    } finally {
      lock.release();
    }
  });
});

describe("a graceful close of the slashing thread", () => {
  test("checks handed over before close are made durable first, and recorded", async () => {
    const path = join(dir.path, "drain.sqlite");
    const store = await openThreadedSqliteStore(path, { create: true, checkpoints: "background" });
    const N = 200;
    const checks = Array.from({ length: N }, (_, i) =>
      store.stageAttestation?.(GVR_A, vote(pubkey(i), 3, 4, root("drain", i))),
    ) as Promise<StagedDecision>[];
    // Closed in the same turn as the checks: they have not even left the main thread yet.
    const closed = store.close();
    const outcomes = await Promise.all(checks.map(settle));
    await closed;
    expect(outcomes.every((o) => o.staged === "ok" && o.durable === "resolved")).toBe(true);
    await expect(
      store.stageAttestation?.(GVR_A, vote(pubkey(N), 3, 4, root("after"))),
    ).rejects.toThrow("closed");
    const reader = await openSqliteStore(path, { create: false, access: "read" });
    try {
      const exported = await collectInterchange(await reader.exportInterchange());
      expect(exported.validators.length).toBe(N);
    } finally {
      await reader.close();
    }
  });
});
