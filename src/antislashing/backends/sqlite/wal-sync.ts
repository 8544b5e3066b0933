import type { Database } from "bun:sqlite";
import { closeSync, fdatasync, fdatasyncSync, fstatSync, openSync } from "node:fs";
import type { Durability } from "./group-commit";

/**
 * Durability of a `synchronous = NORMAL` WAL database, off the event loop. COMMIT then only
 * write()s its frames to the -wal file; this module makes them durable before anyone acts on them.
 * barrier() resolves once an fdatasync of the -wal file that STARTED after the call has succeeded.
 * Such a sync covers every frame written before it, by any connection of any process (the page
 * cache and fdatasync belong to the file, not to a descriptor), so one sync serves every batch
 * committed before it started. Barriers coalesce: at most one sync is in flight; a barrier asked
 * for meanwhile joins the next one, which starts when the current one ends (N concurrent batches
 * cost about two syncs). node:fs fdatasync runs on Bun's thread pool, not on the event loop
 * (test/antislashing/sqlite-durability.test.ts catches it in another thread); the signer's
 * slashing thread, which serves nothing else, runs it itself (fdatasyncWalOnThisThread).
 *
 * Why a second descriptor on the -wal file is sound:
 * - Locks. SQLite locks the database file (a connection in WAL mode holds SHARED for its whole
 *   life) and the -shm file, never the -wal file. Closing a descriptor drops the process's POSIX
 *   locks on that file only, so closing ours costs SQLite nothing.
 * - Same file for the store's life. Only the last connection to close deletes the -wal file, and
 *   it must first take an EXCLUSIVE lock that our connection's SHARED lock denies. A checkpoint
 *   that restarts the WAL (frames written again from the start) or truncates it
 *   (wal_checkpoint(TRUNCATE), from any process) keeps the inode. A sync finding the file
 *   unlinked anyway fails (nlink check) instead of proving nothing.
 * - Restarts. The WAL is only rewritten from the start once every frame has been checkpointed,
 *   and a NORMAL checkpoint fsyncs the WAL before copying and the database file after: a frame
 *   overwritten before our sync reached it was already durable in the database file. (Another
 *   process checkpointing with synchronous = OFF would void this, as it would with FULL.)
 * - Existence. The file exists once the connection has read the database in WAL mode; it is
 *   opened after such a read. Its path is the one SQLite resolved (symlinks followed), read back
 *   from PRAGMA database_list. ":memory:" has no WAL: the barrier is a no-op.
 *
 * Checkpoints are not part of durability. SQLite's automatic one runs inside the COMMIT that fills
 * the WAL to 1,000 pages and holds the event loop for a copy and two fsyncs; the signer moves them
 * to a worker thread, with SQLite's own kept as a backstop (wal-checkpoint.ts).
 *
 * A failed sync poisons the store: that batch and every later one reject (the signer refuses to
 * sign) and the health check fails, until sigil is restarted. Not just its own batch: Linux
 * reports a writeback error once per open file and leaves the pages clean and unwritten, so a
 * later fdatasync succeeds without the lost frames reaching the disk. Those frames' commits are
 * already visible (a later check may answer same_data from them), and after a power cut recovery
 * stops at the first missing frame, dropping every later commit too. With synchronous = FULL,
 * SQLite would instead have failed that COMMIT and reused its frames. After such an error, check
 * the disk and reboot the host before signing again: a restarted process would read the unwritten
 * frames back from the page cache and trust them.
 */
export interface WalSync extends Durability {
  /**
   * Runs the file watch now (health): throws, and fails every later barrier, once the files at the
   * paths are not the ones open. Throws as assertHealthy does once the store has failed.
   */
  check(): void;
  /** Waits for the sync in flight, then closes the -wal descriptor. */
  close(): Promise<void>;
}

/**
 * The files at the database's paths are no longer the ones the store has open (deleted, renamed,
 * replaced). Like a failed sync, it stops all signing until a restart: whatever the store writes
 * from now on lands in files that a restarted signer would not read.
 */
export class DatabaseFileChangedError extends Error {
  override readonly name = "DatabaseFileChangedError";
}

export interface WalWatch {
  /** The problem with the files at the paths, or null when they are still the ones open. */
  readonly problem: () => DatabaseFileChangedError | null;
  /** Called once, when a problem is first found (log it, save what can be saved). */
  readonly onChanged: (error: DatabaseFileChangedError) => void;
}

/** The IO edge: makes the -wal file behind `fd` durable. */
export type SyncWal = (fd: number) => Promise<void>;

export const fdatasyncWal: SyncWal = (fd) =>
  new Promise<void>((resolve, reject) => {
    fdatasync(fd, (error) => {
      if (error) reject(error);
      else if (fstatSync(fd).nlink === 0)
        reject(new DatabaseFileChangedError("the -wal file was deleted while open"));
      else resolve();
    });
  });

/**
 * The same sync for a thread that does nothing else (the slashing thread, thread-worker.ts): run
 * on that thread itself, in the turn after the barrier was asked for, rather than handed to Bun's
 * thread pool. The hand-off and its completion cost a wake-up of a pool thread and one of this
 * thread per sync (measured: docs/performance.md, "the slashing thread's messages and
 * wake-ups"); this thread has nothing to do meanwhile that cannot wait for the disk (checks that
 * arrive queue, and commit right after, sharing the next sync).
 *
 * Deferred by `setImmediate`, never run inside barrier(): the barrier is asked for right after
 * the COMMIT, and the decisions of that batch are sent to the main thread in the microtasks that
 * follow it, so they leave before the sync starts and the signatures are computed during it. The
 * guarantees are the ones above: the sync starts after the commit it covers, a failure rejects
 * (and CoalescingSync poisons the store), and the watch runs after each sync.
 */
export const fdatasyncWalOnThisThread: SyncWal = (fd) =>
  new Promise<void>((resolve, reject) => {
    setImmediate(() => {
      try {
        fdatasyncSync(fd);
        if (fstatSync(fd).nlink === 0) {
          throw new DatabaseFileChangedError("the -wal file was deleted while open");
        }
        resolve();
      } catch (error) {
        reject(error);
      }
    });
  });

const NO_FILE: WalSync = {
  barrier: async () => {},
  assertHealthy: () => {},
  check: () => {},
  close: async () => {},
};

/** The main database's file as SQLite resolved it (symlinks followed); "" for ":memory:". */
export function mainDatabaseFile(db: Database): string {
  const files = db.query("PRAGMA database_list").all() as { name: string; file: string }[];
  return files.find((d) => d.name === "main")?.file ?? "";
}

/**
 * The connection's WAL, kept open until close(); a no-op for a database without a file. With a
 * `watch`, every sync is followed by a look at the paths (a few stat calls): a barrier resolves
 * only while the files there are still the ones written, so no answer leaves once they are not.
 */
export function openWalSync(
  db: Database,
  syncWal: SyncWal = fdatasyncWal,
  watch?: WalWatch,
): WalSync {
  const file = mainDatabaseFile(db);
  if (file === "") return NO_FILE;
  const mode = db.query("PRAGMA journal_mode").get() as { journal_mode: string } | null;
  if (mode?.journal_mode !== "wal") throw new Error(`${file} is not in WAL mode`);
  db.query("SELECT count(*) FROM sqlite_master").get(); // a read in WAL mode creates the -wal file
  const fd = openSync(`${file}-wal`, "r");
  const syncs = new CoalescingSync(() => syncWal(fd), watch);
  return {
    barrier: () => syncs.wait(),
    assertHealthy: () => syncs.assertHealthy(),
    check: () => syncs.check(),
    close: async () => {
      await syncs.close();
      closeSync(fd);
    },
  };
}

export class WalSyncError extends Error {
  override readonly name = "WalSyncError";
}

const ignore = () => {};

/**
 * At most one `sync` in flight; wait() resolves with the first one that starts after the call
 * and, with a watch, only once the watch has found nothing after that sync.
 */
export class CoalescingSync {
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private failure: Error | null = null;

  constructor(
    private readonly sync: () => Promise<void>,
    private readonly watch?: WalWatch,
  ) {}

  wait(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    const queued = this.running.then(ignore, ignore).then(() => {
      this.queued = null;
      return this.start();
    });
    this.queued = queued;
    return queued;
  }

  assertHealthy(): void {
    if (this.failure) throw this.failure;
  }

  /** assertHealthy, then the watch: a problem it finds fails this and every later wait. */
  check(): void {
    this.assertHealthy();
    this.look();
  }

  /** Throws the watch's problem, recorded as the failure (reported once), if there is one. */
  private look(): void {
    const problem = this.watch?.problem() ?? null;
    if (problem === null) return;
    if (this.failure === null) {
      this.failure = problem;
      this.watch?.onChanged(problem);
    }
    throw this.failure;
  }

  /** Lets the syncs asked for finish; later waits fail. */
  async close(): Promise<void> {
    while (this.running || this.queued) await Promise.allSettled([this.running, this.queued]);
    this.failure ??= new WalSyncError("the slashing protection database is closed");
  }

  private start(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    let run: Promise<void>;
    try {
      run = this.sync().then(() => this.look());
    } catch (error) {
      run = Promise.reject(error);
    }
    run = run.catch((error: unknown) => {
      if (this.failure === null && error instanceof DatabaseFileChangedError) {
        // The watch words it better (it names the file) when it sees it too.
        this.failure = this.watch?.problem() ?? error;
        this.watch?.onChanged(this.failure as DatabaseFileChangedError);
      }
      this.failure ??= new WalSyncError(
        `the slashing protection database could not be synced to disk (${String(error)}); ` +
          "refusing to sign: check the disk and reboot the host before starting sigil again",
      );
      throw this.failure;
    });
    this.running = run;
    const clear = () => {
      if (this.running === run) this.running = null;
    };
    run.then(clear, clear);
    return run;
  }
}
