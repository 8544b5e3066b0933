import { Database } from "bun:sqlite";
import { chmodSync, existsSync } from "node:fs";

export interface DurableSqliteOptions {
  busyTimeoutMs?: number;
  /** Read INTEGER columns as bigint (uint64 values must not lose precision). */
  safeIntegers?: boolean;
  foreignKeys?: boolean;
  /**
   * FULL (default) fsyncs the WAL inside every COMMIT. NORMAL leaves that fsync to the caller, who
   * must then make a commit durable itself before acting on it (the slashing store: wal-sync.ts).
   */
  synchronous?: "FULL" | "NORMAL";
}

/**
 * Opens (creating if needed, mode 0600) a database whose committed writes must survive a crash
 * or power loss: WAL, synchronous=FULL unless the caller syncs the WAL itself (`synchronous`), and
 * a busy timeout so that a second process waits for the write lock instead of failing. In WAL mode
 * both settings fsync the WAL before and the database after every checkpoint, so a checkpoint never
 * loses a commit; they differ only in whether COMMIT itself waits for an fsync. ":memory:" (tests)
 * skips the file-only steps.
 */
export function openDurableSqlite(path: string, options: DurableSqliteOptions = {}): Database {
  const inMemory = path === ":memory:" || path === "";
  const isNew = !inMemory && !existsSync(path);
  const db = new Database(path, {
    create: true,
    readwrite: true,
    strict: true,
    safeIntegers: options.safeIntegers ?? false,
  });
  try {
    if (isNew) chmodSync(path, 0o600);
    db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    if (!inMemory) {
      const mode = db.query("PRAGMA journal_mode = WAL").get() as Record<string, unknown> | null;
      if (String(mode?.journal_mode).toLowerCase() !== "wal") {
        throw new Error(`could not switch ${path} to WAL mode (got ${String(mode?.journal_mode)})`);
      }
    }
    db.run(`PRAGMA synchronous = ${options.synchronous === "NORMAL" ? "NORMAL" : "FULL"}`);
    if (options.foreignKeys) db.run("PRAGMA foreign_keys = ON");
  } catch (error) {
    db.close(false);
    throw error;
  }
  return db;
}
