// One writer per sqlite FILE, whatever its name (a hard link, a symlink), and a main file that
// still holds the database: the writer's flock on the main file itself, how it sits beside
// SQLite's own locks, and the size and header check at the durability barrier.
// Bind mounts (two containers on one host file): test/e2e/slashing-one-writer.test.ts.
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import {
  closeSync,
  linkSync,
  openSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { SlashingDatabaseError, type SlashingStore } from "../../src/antislashing/store";
import { lockMainFile, SqliteFileLockedError } from "../../src/storage/sqlite/main-file";
import { TempDir } from "../support/cli";
import { GVR_A, pubkey, root, vote } from "./support";

const dir = new TempDir();
afterAll(() => dir.remove());
let counter = 0;
const freshPath = () => join(dir.path, `file-lock-${++counter}.sqlite`);

async function refusal(path: string): Promise<SlashingDatabaseError> {
  const error = await openSqliteStore(path, { create: false }).then(
    async (store) => {
      await store.close();
      return new Error("opened");
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SlashingDatabaseError);
  return error as SlashingDatabaseError;
}

describe("the writer's lock is on the main file", () => {
  test("SQLite's own locks are not affected: another process reads and writes, and its write lock still excludes", async () => {
    const path = freshPath();
    const db = new Database(path, { create: true });
    db.run("PRAGMA journal_mode = WAL");
    db.run("CREATE TABLE t (x INTEGER)");
    const lock = lockMainFile(path, { create: false });
    const child = (sql: string) =>
      Bun.spawnSync([
        process.execPath,
        "-e",
        `const { Database } = require("bun:sqlite");
         const db = new Database(${JSON.stringify(path)});
         db.run("PRAGMA busy_timeout = 100");
         try { db.run(${JSON.stringify(sql)}); console.log("wrote", db.query("SELECT count(*) AS n FROM t").get().n); }
         catch (e) { console.log(String(e)); }`,
      ]).stdout.toString();
    try {
      db.run("INSERT INTO t VALUES (1)");
      expect(child("INSERT INTO t VALUES (2)").trim()).toBe("wrote 2");
      // While this process holds SQLite's write lock, the other is refused by SQLite, as ever.
      db.run("BEGIN IMMEDIATE");
      db.run("INSERT INTO t VALUES (3)");
      expect(child("INSERT INTO t VALUES (4)").trim()).toBe("SQLiteError: database is locked");
      db.run("COMMIT");
      expect(db.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 3 });
      // And the flock is still held: a second lock on the file is refused.
      expect(() => lockMainFile(path, { create: false })).toThrow(SqliteFileLockedError);
    } finally {
      db.close();
      lock.release();
    }
  });

  test("a hard link: a second writer through it is refused while the first runs, and the file is refused while it has two names", async () => {
    const path = freshPath();
    const link = join(dir.path, "hard-link.sqlite");
    const writer = await openSqliteStore(path, { create: true });
    try {
      expect(
        await writer.checkAndInsertAttestation(GVR_A, vote(pubkey(1), 10, 11, root("A"))),
      ).toEqual({ outcome: "new" });
      linkSync(path, link);
      const second = await refusal(link);
      expect(second.problem).toBe("in_use");
      expect(second.message).toBe(
        `slashing protection database ${link} is in use by another process that opened the same file under another name (a hard link, a bind mount, another container's path): one process at a time writes a sqlite database; stop it first`,
      );
    } finally {
      await writer.close();
    }
    for (const name of [link, path]) {
      const refused = await refusal(name);
      expect(refused.problem).toBe("linked");
      expect(refused.message).toContain(`slashing protection database ${name} has 2 hard links`);
      expect(refused.message).toContain(`find / -xdev -samefile ${name}`);
    }
    rmSync(link);
    const again = await openSqliteStore(path, { create: false });
    try {
      expect(
        await again.checkAndInsertAttestation(GVR_A, vote(pubkey(1), 10, 11, root("B"))),
      ).toMatchObject({ outcome: "refused", reason: "double_vote" });
    } finally {
      await again.close();
    }
  });

  test("a symlink: the second writer meets the first one's lock, named with its pid", async () => {
    const path = freshPath();
    const link = join(dir.path, "sym-link.sqlite");
    symlinkSync(path, link);
    const writer = await openSqliteStore(path, { create: true });
    try {
      const second = await refusal(link);
      expect(second.problem).toBe("in_use");
      expect(second.message).toContain(`in use by process ${process.pid}`);
    } finally {
      await writer.close();
    }
  });
});

describe("the main file still holds the database", () => {
  async function signOne(store: SlashingStore, target: number) {
    return store.checkAndInsertAttestation(
      GVR_A,
      vote(pubkey(2), target - 1, target, root("t", target)),
    );
  }

  const TAMPERS: [string, (path: string) => void][] = [
    ["truncated to 0 bytes (same inode)", (path) => truncateSync(path, 0)],
    ["truncated to its first page", (path) => truncateSync(path, 4096)],
    [
      "its header overwritten in place",
      (path) => {
        const fd = openSync(path, "r+");
        writeSync(fd, Buffer.alloc(100, 0x41), 0, 100, 0);
        closeSync(fd);
      },
    ],
  ];

  test.each(TAMPERS)("%s: the next check and the health check fail", async (_, tamper) => {
    const path = freshPath();
    const errors: string[] = [];
    const store = await openSqliteStore(path, {
      create: true,
      logger: { warn: () => {}, info: () => {}, error: (message) => errors.push(message) },
    });
    try {
      // Enough records that a checkpoint grows the file past its first page.
      for (let target = 1; target <= 300; target++)
        expect(await signOne(store, target)).toEqual({ outcome: "new" });
      const db = new Database(path);
      db.run("PRAGMA wal_checkpoint(FULL)");
      db.close();
      await store.ping();
      const inode = statSync(path).ino;
      tamper(path);
      expect(statSync(path).ino).toBe(inode);
      await expect(signOne(store, 301)).rejects.toThrow("in place");
      await expect(store.ping()).rejects.toThrow("in place");
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`file changed while open: ${path}`);
    } finally {
      await store.close();
    }
  });

  test("a database that only grows is never taken for a truncated one (checkpoints in a worker)", async () => {
    const path = freshPath();
    const store = await openSqliteStore(path, { create: true, checkpoints: "background" });
    try {
      const size = statSync(path).size;
      for (let target = 1; target <= 3000; target++) await signOne(store, target);
      await store.ping();
      expect(statSync(path).size).toBeGreaterThan(size);
    } finally {
      await store.close();
    }
  });
});
