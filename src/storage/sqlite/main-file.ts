/**
 * The writer's hold on the main file of a sqlite database, by the file itself rather than by its
 * name: an exclusive flock(2) on a descriptor of the main file, kept open until the database is
 * closed. A lock on `<path>.lock` is a lock on a name: a hard link, a second bind mount of the
 * file (two containers mounting one host file) or another symlink reaches the same database under
 * another name, with a lock file, a -wal and a -shm of its own, and two writers would each sign
 * without the other's records. A flock belongs to the inode, so every name meets it.
 *
 * flock and SQLite's own locks do not meet on Linux: SQLite's unix VFS locks byte ranges with
 * fcntl(2) (POSIX locks), a separate kind the kernel keeps apart from flock locks
 * (test/antislashing/sqlite-file-lock.test.ts shows a second connection reading and writing the
 * file while the flock is held, and SQLite's write lock still refusing it meanwhile). On NFS, where
 * Linux emulates flock with fcntl locks, they would meet; sqlite databases do not belong on NFS.
 *
 * The descriptor must stay open while any connection of this process has the file open: closing
 * ANY descriptor of a file drops every POSIX lock the process holds on it, SQLite's included. So it
 * is closed only after the database (release()), and it is also the one descriptor through which
 * the file's header and size are read while the database is open (check()).
 *
 * A main file with more than one hard link is refused outright: its other names would each have
 * their own -wal, into which SQLite would write records that no other name sees.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { tryFlock } from "./lock";

/** Another process holds the main file's lock (under this name or another). */
export class SqliteFileLockedError extends Error {
  override readonly name = "SqliteFileLockedError";
  constructor(readonly path: string) {
    super(`${path} is locked by another process`);
  }
}

/** The main file has other names: `links` hard links in all. */
export class SqliteHardLinkError extends Error {
  override readonly name = "SqliteHardLinkError";
  constructor(
    readonly path: string,
    readonly links: number,
  ) {
    super(`${path} has ${links} hard links`);
  }
}

export interface MainFileLock {
  /** `dev:ino` of the file locked. */
  readonly identity: string;
  /**
   * Notes the database's size as the header now states it, when the file holds that much: from
   * then on the file must never be smaller. Call once the database is open, and again whenever
   * it may have grown (check() does).
   */
  confirm(): void;
  /**
   * Why the file no longer holds the database, or null: it lost SQLite's header (overwritten),
   * changed page size, or is smaller than the database it held (truncated in place, same inode).
   * A database in WAL mode never shrinks without a VACUUM, which sigil never runs on it.
   */
  check(): string | null;
  /** Closes the descriptor, which drops the lock. Only after every connection has closed. */
  release(): void;
}

/** "SQLite format 3\0": the first 16 bytes of every SQLite database file. */
export const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");
const HEADER_BYTES = 100;

interface Header {
  readonly magic: boolean;
  /** Bytes per page (offset 16; 1 stands for 65,536). */
  readonly pageSize: number;
  /** Pages, as the header states them (offset 28). */
  readonly pages: number;
}

function readHeader(fd: number): Header | null {
  const buffer = Buffer.alloc(HEADER_BYTES);
  const read = readSync(fd, buffer, 0, HEADER_BYTES, 0);
  if (read < HEADER_BYTES) return null;
  const rawPageSize = buffer.readUInt16BE(16);
  return {
    magic: buffer.subarray(0, 16).equals(SQLITE_MAGIC),
    pageSize: rawPageSize === 1 ? 65_536 : rawPageSize,
    pages: buffer.readUInt32BE(28),
  };
}

/** Whether the file at `path` starts with SQLite's header (false for a short or other file). */
export function hasSqliteHeader(path: string): boolean {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    const header = readHeader(fd);
    return header?.magic === true;
  } finally {
    closeSync(fd);
  }
}

/**
 * Takes the lock on the main file at `path` (created empty, 0600, with `create` when missing) or
 * throws SqliteFileLockedError, SqliteHardLinkError, or the open's own error (EACCES, EPERM...).
 */
export function lockMainFile(path: string, options: { create: boolean }): MainFileLock {
  const flags = constants.O_RDWR | (options.create ? constants.O_CREAT : 0);
  const fd = openSync(path, flags, 0o600);
  let held = false;
  try {
    if (!tryFlock(fd)) throw new SqliteFileLockedError(path);
    const stats = fstatSync(fd, { bigint: true });
    if (stats.nlink > 1n) throw new SqliteHardLinkError(path, Number(stats.nlink));
    held = true;
    return mainFileLock(fd, path, `${stats.dev}:${stats.ino}`);
  } finally {
    if (!held) closeSync(fd);
  }
}

function mainFileLock(fd: number, path: string, identity: string): MainFileLock {
  /** Bytes of database the file was seen to hold; it must never hold fewer. */
  let confirmedBytes = 0;
  let pageSize = 0;
  let released = false;
  /** Raises the confirmed size to what `header` states, once the file holds that much. */
  const note = (header: Header, size: number) => {
    const bytes = header.pages * header.pageSize;
    // A checkpoint writes page 1 (with the new page count) before the pages beyond the old end:
    // a count the file does not hold yet is confirmed at a later look.
    if (bytes > confirmedBytes && size >= bytes) confirmedBytes = bytes;
  };
  const lock: MainFileLock = {
    identity,
    confirm() {
      const header = readHeader(fd);
      if (header === null || !header.magic) return;
      pageSize ||= header.pageSize;
      note(header, fstatSync(fd).size);
    },
    check() {
      const size = fstatSync(fd).size;
      if (size < confirmedBytes) {
        return `${path} holds ${size} bytes, fewer than the ${confirmedBytes} bytes of database it held (it was truncated or overwritten in place)`;
      }
      if (confirmedBytes === 0) return null;
      const header = readHeader(fd);
      if (header === null || !header.magic || header.pageSize !== pageSize) {
        return `${path} no longer starts with the database's SQLite header (it was overwritten in place)`;
      }
      note(header, size);
      return null;
    },
    release() {
      if (released) return;
      released = true;
      closeSync(fd);
    },
  };
  return lock;
}
