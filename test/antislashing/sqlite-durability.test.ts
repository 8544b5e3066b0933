import { afterAll, describe, expect, test } from "bun:test";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statfsSync,
  symlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { fdatasyncWal } from "../../src/antislashing/backends/sqlite/wal-sync";
import { TempDir } from "../support/cli";
import { committedBlocks, heldWalSync } from "../support/held-wal-sync";
import { settledFlags, turns } from "../support/settle";
import { block, GVR_A, iBlock, interchange, pubkey, root, vote } from "./support";

/**
 * The sqlite store's durability barrier (src/antislashing/backends/sqlite/wal-sync.ts) on real database
 * files: the WAL sync is injected at the IO edge where the test must hold it or make it fail,
 * and is the real fdatasync everywhere else.
 */

const dir = new TempDir();
let counter = 0;
const freshPath = () => join(dir.path, `durability-${++counter}.sqlite`);
afterAll(() => dir.remove());

describe("sqlite durability barrier", () => {
  test("no check resolves before a WAL sync that started after its commit: new, same_data and refused alike", async () => {
    const path = freshPath();
    const { calls, syncWal } = heldWalSync(path);
    const store = await openSqliteStore(path, { create: true, syncWal });
    try {
      const pk = pubkey(1);
      const a = store.checkAndInsertBlock(GVR_A, block(pk, 10, root("a")));
      await turns();
      expect(calls).toHaveLength(1);
      expect(calls[0]?.blocksAtStart).toBe(1); // started after A's commit
      // While that sync is in flight: decisions resting on A's record (not yet synced), and a new one.
      const later = [
        store.checkAndInsertBlock(GVR_A, block(pk, 10, root("a"))),
        store.checkAndInsertBlock(GVR_A, block(pk, 10, root("conflicts with a"))),
        store.checkAndInsertBlock(GVR_A, block(pk, 11, root("d"))),
      ];
      const flags = settledFlags([a, ...later]);
      await turns();
      expect(committedBlocks(path)).toBe(2); // their batch is committed...
      expect(calls).toHaveLength(1); // ...but only one sync is ever in flight
      expect(flags).toEqual(["pending", "pending", "pending", "pending"]);
      calls[0]?.release();
      await a;
      await turns();
      // A's sync started before their commit: it does not count for them.
      expect(flags).toEqual(["resolved", "pending", "pending", "pending"]);
      expect(calls).toHaveLength(2);
      expect(calls[1]?.blocksAtStart).toBe(2);
      calls[1]?.release();
      expect(await a).toEqual({ outcome: "new" });
      expect(await Promise.all(later)).toEqual([
        { outcome: "same_data" },
        expect.objectContaining({ outcome: "refused", reason: "double_block_proposal" }),
        { outcome: "new" },
      ]);
    } finally {
      await store.close();
    }
  });

  test("a staged check settles at its commit; its durable waits for a sync that started after it", async () => {
    const path = freshPath();
    const { calls, syncWal } = heldWalSync(path);
    const store = await openSqliteStore(path, { create: true, syncWal });
    try {
      const pk = pubkey(3);
      const staged = await store.stageBlock?.(GVR_A, block(pk, 10, root("a")));
      expect(staged?.decision).toEqual({ outcome: "new" });
      await turns();
      expect(calls).toHaveLength(1);
      expect(calls[0]?.blocksAtStart).toBe(1); // this sync was asked for after the commit...
      const durable = settledFlags([staged?.durable as Promise<void>]);
      // ...and a later check already sees the record it has not yet synced.
      const repeat = await store.stageBlock?.(GVR_A, block(pk, 10, root("a")));
      const conflict = await store.stageBlock?.(GVR_A, block(pk, 10, root("b")));
      expect(repeat?.decision).toEqual({ outcome: "same_data" });
      expect(conflict?.decision).toMatchObject({
        outcome: "refused",
        reason: "double_block_proposal",
      });
      expect(durable).toEqual(["pending"]);
      calls[0]?.release();
      await staged?.durable;
      await turns();
      calls[1]?.release();
      await Promise.all([repeat?.durable, conflict?.durable]);
    } finally {
      await store.close();
    }
  });

  test("200 checks committed in 200 batches while one sync is in flight share the next sync", async () => {
    const path = freshPath();
    const first = Promise.withResolvers<void>();
    let syncs = 0;
    const store = await openSqliteStore(path, {
      create: true,
      syncWal: async (fd) => {
        if (++syncs === 1) await first.promise;
        await fdatasyncWal(fd);
      },
    });
    try {
      const checks: Promise<unknown>[] = [];
      for (let i = 0; i < 200; i++) {
        checks.push(store.checkAndInsertBlock(GVR_A, block(pubkey(i), 5, root(i))));
        await turns(1); // each check is committed alone, in its own batch
      }
      expect(committedBlocks(path)).toBe(200);
      expect(syncs).toBe(1);
      first.resolve();
      expect(await Promise.all(checks)).toEqual(Array(200).fill({ outcome: "new" }));
      expect(syncs).toBe(2);
    } finally {
      await store.close();
    }
  });

  test("a failed sync rejects its batch and stops all signing; the records stay for the next start", async () => {
    const path = freshPath();
    let syncs = 0;
    const store = await openSqliteStore(path, {
      create: true,
      syncWal: async (fd) => {
        if (++syncs === 1)
          throw Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
        await fdatasyncWal(fd);
      },
    });
    const pk = pubkey(2);
    try {
      const batch = await Promise.allSettled([
        store.checkAndInsertBlock(GVR_A, block(pk, 20, root("x"))),
        store.checkAndInsertAttestation(GVR_A, vote(pk, 1, 2, root("v"))),
      ]);
      expect(batch.map((o) => o.status)).toEqual(["rejected", "rejected"]);
      expect(String(batch[0]?.status === "rejected" && batch[0].reason)).toContain("EIO");
      // Linux forgets a writeback error once reported: a later sync proves nothing. Refuse all.
      await expect(store.checkAndInsertBlock(GVR_A, block(pk, 21, root("y")))).rejects.toThrow(
        "could not be synced",
      );
      await expect(store.ping()).rejects.toThrow("could not be synced");
      expect(syncs).toBe(1);
    } finally {
      await store.close();
    }
    expect(committedBlocks(path)).toBe(1); // the failed batch's record stayed: refuses more
    const reopened = await openSqliteStore(path, { create: true });
    try {
      expect(await reopened.checkAndInsertBlock(GVR_A, block(pk, 20, root("x")))).toEqual({
        outcome: "same_data",
      });
      expect(await reopened.checkAndInsertBlock(GVR_A, block(pk, 22, root("z")))).toEqual({
        outcome: "new",
      });
    } finally {
      await reopened.close();
    }
  });

  test("an import resolves only after a sync that started after its commit", async () => {
    const path = freshPath();
    const { calls, syncWal } = heldWalSync(path);
    const store = await openSqliteStore(path, { create: true, syncWal });
    try {
      const pk = pubkey(3);
      const importing = store.importInterchange(
        interchange(GVR_A, [{ pubkey: pk, blocks: [iBlock(30, root("i"))], attestations: [] }]),
      );
      const flags = settledFlags([importing]);
      for (let i = 0; i < 1000 && calls.length === 0; i++) await turns(1);
      expect(calls).toHaveLength(1);
      expect(calls[0]?.blocksAtStart).toBe(1);
      await turns();
      expect(flags).toEqual(["pending"]);
      calls[0]?.release();
      expect(await importing).toEqual({ validators: 1, blocks: 1, attestations: 0 });
    } finally {
      await store.close();
    }
  });

  test("the event loop keeps running while a slow sync is pending", async () => {
    const store = await openSqliteStore(freshPath(), {
      create: true,
      syncWal: () => new Promise((resolve) => setTimeout(resolve, 200)),
    });
    try {
      const check = store.checkAndInsertBlock(GVR_A, block(pubkey(4), 1, root("slow")));
      const [flag] = settledFlags([check]);
      const seen: string[] = [];
      await new Promise((r) => setImmediate(r));
      seen.push(`immediate: ${flag}`);
      await new Promise((r) => setTimeout(r, 10));
      await store.ping(); // the database is free meanwhile
      seen.push(`timer and ping: ${settledFlags([check])[0]}`);
      expect(await check).toEqual({ outcome: "new" });
      expect(seen).toEqual(["immediate: pending", "timer and ping: pending"]);
    } finally {
      await store.close();
    }
  });
});

describe("sqlite durability with the real fdatasync", () => {
  /** This process's descriptors on `file`: their open flags, by descriptor. */
  function descriptorsOn(file: string): { fd: string; readOnly: boolean }[] {
    return readdirSync("/proc/self/fd").flatMap((fd) => {
      let target = "";
      try {
        target = readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return [];
      }
      if (target !== file && target !== `${file} (deleted)`) return [];
      const flags = /flags:\s+(\d+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1];
      return [{ fd, readOnly: (Number.parseInt(flags ?? "2", 8) & 3) === 0 }];
    });
  }

  test("records survive close and reopen; the -wal descriptor (of the symlink's target) closes with the store", async () => {
    const realDir = join(dir.path, "real");
    mkdirSync(realDir, { recursive: true });
    const real = join(realDir, "target.sqlite");
    const link = join(dir.path, "link.sqlite");
    const first = await openSqliteStore(real, { create: true });
    await first.close();
    symlinkSync(real, link);

    const store = await openSqliteStore(link, { create: true });
    const pk = pubkey(5);
    try {
      expect(await store.checkAndInsertBlock(GVR_A, block(pk, 50, root("kept")))).toEqual({
        outcome: "new",
      });
      expect(descriptorsOn(`${real}-wal`).filter((d) => d.readOnly)).toHaveLength(1);
      expect(descriptorsOn(`${link}-wal`)).toEqual([]);
    } finally {
      await store.close();
    }
    expect(descriptorsOn(`${real}-wal`)).toEqual([]);

    const reopened = await openSqliteStore(real, { create: true });
    try {
      expect(await reopened.checkAndInsertBlock(GVR_A, block(pk, 50, root("other")))).toMatchObject(
        { outcome: "refused", reason: "double_block_proposal" },
      );
    } finally {
      await reopened.close();
    }
  });

  test("node:fs fdatasync runs on another thread while the event loop's thread goes on", async () => {
    // Real work for the sync: dirty pages on a disk (tmpfs syncs nothing and returns at once).
    const base = statfsSync(dir.path).type === 0x01021994 ? process.cwd() : dir.path;
    const work = mkdtempSync(join(base, ".sigil-fdatasync-"));
    const FDATASYNC = process.arch === "arm64" ? "83" : "75";
    try {
      let seenOn: string | null = null;
      for (let attempt = 0; attempt < 3 && seenOn === null; attempt++) {
        const fd = openSync(join(work, `dirty-${attempt}`), "w");
        try {
          const chunk = Buffer.alloc(1 << 20, attempt + 1);
          for (let i = 0; i < 64; i++) writeSync(fd, chunk);
          let done = false;
          const syncing = fdatasyncWal(fd).finally(() => {
            done = true;
          });
          // Only JavaScript on this thread reads /proc here: whatever thread it finds inside
          // fdatasync(fd) at that moment is not the one running the event loop.
          while (seenOn === null && !done) {
            for (const tid of readdirSync("/proc/self/task")) {
              let syscall = "";
              try {
                syscall = readFileSync(`/proc/self/task/${tid}/syscall`, "utf8");
              } catch {}
              const [nr, firstArg] = syscall.split(" ");
              if (nr === FDATASYNC && Number(firstArg) === fd) seenOn = tid;
            }
            await new Promise((r) => setImmediate(r));
          }
          await syncing;
        } finally {
          closeSync(fd);
        }
      }
      expect(seenOn).not.toBeNull();
      expect(seenOn).not.toBe(String(process.pid)); // the main thread's id is the process id
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
