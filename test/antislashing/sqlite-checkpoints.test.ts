// WAL checkpoints in a worker thread (src/antislashing/backends/sqlite/wal-checkpoint.ts): the worker
// copies committed records into the database file, the main connection's own threshold is raised
// while it does, and a worker that cannot start or is lost hands checkpoints back to SQLite.
import type { Database } from "bun:sqlite";
import { Database as ReadOnlyCopy } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import {
  BACKSTOP_PAGES,
  INLINE_CHECKPOINTS,
  SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES,
  startBackgroundCheckpoints,
} from "../../src/antislashing/backends/sqlite/wal-checkpoint";
import { openDurableSqlite } from "../../src/storage/sqlite/open";
import { TempDir } from "../support/cli";
import { testLogger } from "../support/log-capture";
import { slashingConformanceSuite } from "./conformance";
import { GVR_A, pubkey, root, vote } from "./support";

const dir = new TempDir();
let counter = 0;
const freshPath = () => join(dir.path, `checkpoints-${++counter}.sqlite`);

afterAll(() => dir.remove());

/** Every decision stays the same with the worker checkpointing underneath. */
slashingConformanceSuite(
  "sqlite, background checkpoints",
  () => openSqliteStore(freshPath(), { create: true, checkpoints: "background" }),
  { strategy: "complete", prunes: true, stages: true },
);

/** Attestations in the database FILE alone (a copy without its -wal): what checkpoints put there. */
function attestationsInDatabaseFile(path: string): number {
  const copy = join(dir.path, `copy-${++counter}.sqlite`);
  copyFileSync(path, copy);
  const db = new ReadOnlyCopy(copy, { readonly: true });
  try {
    const row = db.query("SELECT count(*) AS n FROM signed_attestations").get() as { n: number };
    return row.n;
  } catch {
    return 0; // not even the schema checkpointed yet
  } finally {
    db.close();
  }
}

async function attestationsInFileWithin(path: string, ms: number, atLeast: number) {
  const deadline = Date.now() + ms;
  let found = attestationsInDatabaseFile(path);
  while (found < atLeast && Date.now() < deadline) {
    await Bun.sleep(20);
    found = attestationsInDatabaseFile(path);
  }
  return found;
}

const autocheckpoint = (db: Database) =>
  (db.query("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number })
    .wal_autocheckpoint;

function walDatabase(): Database {
  const db = openDurableSqlite(freshPath(), { synchronous: "NORMAL" });
  db.run("CREATE TABLE t (x INTEGER)");
  return db;
}

/** A worker script that answers every request with a failure. */
function refusingWorker(): Worker {
  const script = dir.file(
    `refusing-${++counter}.ts`,
    'addEventListener("message", () => postMessage({ type: "failed", reason: "test: cannot open" }));',
  );
  return new Worker(script);
}

describe("sqlite WAL checkpoints in a worker thread", () => {
  test("the worker copies committed records into the database file; inline, SQLite has not yet", async () => {
    const lines: string[] = [];
    const backgroundPath = freshPath();
    const background = await openSqliteStore(backgroundPath, {
      create: true,
      checkpoints: "background",
      logger: testLogger("info", lines),
    });
    const inlinePath = freshPath();
    const inline = await openSqliteStore(inlinePath, { create: true });
    try {
      for (const store of [background, inline]) {
        for (let i = 0; i < 3; i++) {
          expect(
            await store.checkAndInsertAttestation(GVR_A, vote(pubkey(i), 1, 2, root(i))),
          ).toEqual({ outcome: "new" });
        }
      }
      expect(await attestationsInFileWithin(backgroundPath, 5_000, 3)).toBe(3);
      // SQLite's own checkpoint waits for 1,000 pages of WAL: three records stay in the WAL.
      expect(attestationsInDatabaseFile(inlinePath)).toBe(0);
      expect(lines.join("\n")).toContain("checkpoints run in a worker thread");
    } finally {
      await background.close();
      await inline.close();
    }
  });

  test("while the worker runs, the main connection only checkpoints past the backstop", async () => {
    const db = walDatabase();
    try {
      expect(autocheckpoint(db)).toBe(SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES);
      const checkpoints = await startBackgroundCheckpoints(db);
      expect(checkpoints).not.toBe(INLINE_CHECKPOINTS);
      expect(autocheckpoint(db)).toBe(BACKSTOP_PAGES);
      await checkpoints.close();
    } finally {
      db.close();
    }
  });

  test("a worker that cannot open the database leaves SQLite's checkpoints in place, with a warning", async () => {
    const lines: string[] = [];
    const db = walDatabase();
    try {
      const checkpoints = await startBackgroundCheckpoints(db, {
        spawn: refusingWorker,
        logger: testLogger("info", lines),
      });
      expect(checkpoints).toBe(INLINE_CHECKPOINTS);
      expect(autocheckpoint(db)).toBe(SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES);
      const log = lines.join("\n");
      expect(log).toContain("back on the event loop");
      expect(log).toContain("test: cannot open");
      expect(log).not.toContain("run in a worker thread");
    } finally {
      db.close();
    }
  });

  test("a worker that cannot even be started leaves SQLite's checkpoints in place, with a warning", async () => {
    const lines: string[] = [];
    const db = walDatabase();
    try {
      const checkpoints = await startBackgroundCheckpoints(db, {
        spawn: () => {
          throw new Error("test: no threads");
        },
        logger: testLogger("info", lines),
      });
      expect(checkpoints).toBe(INLINE_CHECKPOINTS);
      expect(autocheckpoint(db)).toBe(SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES);
      expect(lines.join("\n")).toContain("test: no threads");
    } finally {
      db.close();
    }
  });

  test("a worker lost while running hands checkpoints back to SQLite, with a warning", async () => {
    const lines: string[] = [];
    const db = walDatabase();
    let worker: Worker | undefined;
    try {
      const checkpoints = await startBackgroundCheckpoints(db, {
        spawn: () => {
          worker = new Worker(
            new URL(
              "../../src/antislashing/backends/sqlite/wal-checkpoint-worker.ts",
              import.meta.url,
            ).href,
          );
          return worker;
        },
        logger: testLogger("info", lines),
      });
      expect(autocheckpoint(db)).toBe(BACKSTOP_PAGES);
      await worker?.terminate();
      const deadline = Date.now() + 5_000;
      while (autocheckpoint(db) !== SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES && Date.now() < deadline)
        await Bun.sleep(10);
      expect(autocheckpoint(db)).toBe(SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES);
      expect(lines.join("\n")).toContain("back on the event loop");
      // Commits go on, and closing after the loss is quiet and quick.
      db.run("INSERT INTO t VALUES (1)");
      checkpoints.committed();
      await checkpoints.close();
    } finally {
      db.close();
    }
  });

  // The real failure (the database file made immutable) is in write-health.test.ts, as root; here a
  // worker scripted to fail its first checkpoints shows the retries and the status without root.
  test("failed checkpoints keep the worker: reported in status, retried without commits, said once each way", async () => {
    const lines: string[] = [];
    const db = walDatabase();
    const script = dir.file(
      `failing-${++counter}.ts`,
      `let checkpoints = 0;
       addEventListener("message", (event) => {
         const { type } = event.data;
         if (type === "open") postMessage({ type: "ready" });
         else if (type === "close") postMessage({ type: "closed" });
         else if (++checkpoints <= 3) postMessage({ type: "failed", reason: "test: disk I/O error" });
         else postMessage({ type: "checkpointed", busy: false, walFrames: 1, checkpointedFrames: 1 });
       });`,
    );
    try {
      const checkpoints = await startBackgroundCheckpoints(db, {
        spawn: () => new Worker(script),
        logger: testLogger("info", lines),
        retryFirstMs: 20,
      });
      expect(checkpoints.status()).toEqual({ failing: null, failures: 0 });
      checkpoints.committed(); // one commit; the retries need no more
      const deadline = Date.now() + 5_000;
      while (checkpoints.status().failures < 1 && Date.now() < deadline) await Bun.sleep(5);
      expect(checkpoints.status()).toEqual({ failing: "test: disk I/O error", failures: 1 });
      // The worker stays: SQLite's own checkpoints would fail just as silently.
      expect(autocheckpoint(db)).toBe(BACKSTOP_PAGES);
      while (checkpoints.status().failing !== null && Date.now() < deadline) await Bun.sleep(5);
      expect(checkpoints.status()).toEqual({ failing: null, failures: 3 });
      const log = lines.join("\n");
      expect(log.match(/checkpoints fail/g)).toHaveLength(1);
      expect(log).toContain("test: disk I/O error");
      expect(log.match(/checkpoints succeed again/g)).toHaveLength(1);
      expect(log).not.toContain("back on the event loop");
      await checkpoints.close();
    } finally {
      db.close();
    }
  });
});
