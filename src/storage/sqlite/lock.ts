/**
 * One writer per sqlite file: an exclusive flock(2) on `<file>.lock`, beside the database, held
 * until the process ends (the kernel drops it then, however the process ends: no stale lock after
 * a crash). A second writer finds it taken and is told which process holds it.
 *
 * The lock file also remembers, for the next writer, what the last one had open: the database's id
 * and the device and inode of the main file and of its -wal. From that a start-up can tell that
 * the files at the path are no longer the ones signed with (see backends/sqlite/store.ts). It is
 * rewritten in place (never renamed: a lock is on an inode, and a renamed-in file would be a
 * second lock), small enough to be one block.
 *
 * flock comes from the C library through bun:ffi (Node's fs has none). flock, not fcntl locks:
 * fcntl locks belong to the process and are dropped when ANY descriptor of the file closes, and
 * SQLite opens and closes descriptors on its own files.
 */
import { dlopen, FFIType, read } from "bun:ffi";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  statSync,
  writeSync,
} from "node:fs";
import { constants as os } from "node:os";

/** What the holder wrote into the lock file (and the next holder reads back). */
export interface LockRecord {
  readonly pid: number;
  /** The database's own id (its `metadata` row), once known. */
  readonly database_id?: string;
  /** `dev:ino` of the main database file. */
  readonly main?: string;
  /** `dev:ino` of the -wal file. */
  readonly wal?: string;
}

/** Another process holds the lock; `holderPid` is what that process wrote into the lock file. */
export class SqliteLockedError extends Error {
  override readonly name = "SqliteLockedError";
  constructor(
    readonly lockFile: string,
    readonly holderPid: number | undefined,
  ) {
    super(
      `${lockFile} is held by ${holderPid === undefined ? "another process" : `process ${holderPid}`}: ` +
        "one process at a time writes a sqlite slashing protection database",
    );
  }
}

export interface WriterLock {
  /** The lock file. */
  readonly path: string;
  /** What the previous holder wrote, if anything readable. */
  readonly previous: LockRecord | null;
  /** Replaces the file's contents with `record` (this process's pid added) and syncs it. */
  write(record: Omit<LockRecord, "pid">): void;
  /** A problem when the lock file at the path is no longer the one locked (deleted, replaced). */
  problem(): string | null;
  /** Closes the descriptor, which drops the lock. */
  release(): void;
}

const LOCK_EX = 2;
const LOCK_NB = 4;
/** glibc first; musl names its libc after the architecture; macOS last. */
const LIBC_NAMES = [
  "libc.so.6",
  "libc.musl-x86_64.so.1",
  "libc.musl-aarch64.so.1",
  "libSystem.B.dylib",
];

const SYMBOLS = {
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
} as const;

type Libc = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];
let libc: Libc | undefined;

function loadLibc(): Libc {
  if (libc) return libc;
  const failures: string[] = [];
  for (const name of LIBC_NAMES) {
    try {
      libc = dlopen(name, SYMBOLS).symbols;
      return libc;
    } catch (error) {
      failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new Error(`cannot load the C library for flock (${failures.join("; ")})`);
}

function errno(lib: Libc): number {
  const where = lib.__errno_location();
  return where === null ? 0 : read.i32(where, 0);
}

/** Takes the lock or throws; true when taken, false when another process holds it. */
export function tryFlock(fd: number): boolean {
  const lib = loadLibc();
  for (;;) {
    if (lib.flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
    const code = errno(lib);
    if (code === os.errno.EINTR) continue;
    if (code === os.errno.EWOULDBLOCK || code === os.errno.EAGAIN) return false;
    throw new Error(`flock failed (errno ${code})`);
  }
}

function parseRecord(text: string): LockRecord | null {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null) return null;
    const record = value as Record<string, unknown>;
    if (typeof record.pid !== "number") return null;
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    return {
      pid: record.pid,
      ...(str(record.database_id) && { database_id: str(record.database_id) }),
      ...(str(record.main) && { main: str(record.main) }),
      ...(str(record.wal) && { wal: str(record.wal) }),
    };
  } catch {
    return null;
  }
}

/**
 * `dev:ino` of a path (following symlinks) or an open descriptor; undefined when missing. The
 * file watch calls it after every WAL sync, so the usual case skips BigInt: a plain stat's numbers
 * are exact, and print the same digits, while both are safe integers (below 2^53; a number
 * rounded from 2^53 or more is not one). Beyond that, a BigInt stat (same syscall) is exact.
 */
export function fileIdentity(target: string | number): string | undefined {
  try {
    const plain = typeof target === "number" ? fstatSync(target) : statSync(target);
    if (Number.isSafeInteger(plain.dev) && Number.isSafeInteger(plain.ino)) {
      return `${plain.dev}:${plain.ino}`;
    }
    const stats =
      typeof target === "number"
        ? fstatSync(target, { bigint: true })
        : statSync(target, { bigint: true });
    return `${stats.dev}:${stats.ino}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Takes the writer lock of the database at `databaseFile` (`<databaseFile>.lock`, created 0600
 * when missing), or throws SqliteLockedError naming the holder's pid.
 */
export function acquireWriterLock(databaseFile: string): WriterLock {
  const path = `${databaseFile}.lock`;
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  let locked = false;
  try {
    locked = tryFlock(fd);
    if (!locked) {
      const holder = parseRecord(readFileSync(path, "utf8"));
      throw new SqliteLockedError(path, holder?.pid);
    }
  } finally {
    if (!locked) closeSync(fd);
  }
  const previous = parseRecord(readFileSync(fd, "utf8"));
  const identity = fileIdentity(fd);
  let released = false;
  const lock: WriterLock = {
    path,
    previous,
    write(record) {
      const text = `${JSON.stringify({ pid: process.pid, ...record })}\n`;
      ftruncateSync(fd, 0);
      writeSync(fd, text, 0);
      fsyncSync(fd);
    },
    problem() {
      const now = fileIdentity(path);
      if (now === undefined) return `${path} was deleted`;
      if (now !== identity) return `${path} was replaced`;
      return null;
    },
    release() {
      if (released) return;
      released = true;
      closeSync(fd);
    },
  };
  // Who holds it, for a second process to name. The rest stays the previous holder's until the
  // database is open, so that a crash meanwhile loses none of it.
  const { pid: _, ...rest } = previous ?? { pid: 0 };
  lock.write(rest);
  return lock;
}
