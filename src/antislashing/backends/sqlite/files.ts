/**
 * The files of a sqlite slashing protection database, and the checks that the ones sigil reads
 * and writes are the ones that hold its history.
 *
 * A database is `X` (the main file), `X-wal` (recent commits, until a checkpoint copies them into
 * X), `X-shm` (the WAL index) and, from this version on, `X.lock` (storage/sqlite/lock.ts: the
 * writer's flock, and what the last writer had open). The dangers, all of which end in signing
 * without the history and so in a double vote, and what catches each:
 *
 *   - X deleted, renamed or replaced while open. SQLite keeps writing the file it opened, which no
 *     later process will read. The watch (below) compares the device and inode at each path with
 *     the ones opened after every WAL sync, before any answer leaves, and at every health check.
 *   - X-wal deleted, renamed or replaced while open: the same watch. SQLite still has the real WAL
 *     open; a checkpoint then copies its records into X, so that X is whole again.
 *   - A restart on a missing X: sigil never creates a database silently (openSqliteStore).
 *   - A restart on another X (a copy of another database, an older backup moved in): X's database
 *     id is not the one X.lock remembers.
 *   - A restart with a stale X-wal: SQLite replays whatever X-wal it finds into X, even one that
 *     belongs to another file. An X-wal with frames whose inode is not the one X.lock remembers,
 *     or one left beside an X that is not the one it was written with, is refused.
 */
import { existsSync, lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileIdentity, type LockRecord, type WriterLock } from "../../../storage/sqlite/lock";
import type { MainFileLock } from "../../../storage/sqlite/main-file";
import { SlashingDatabaseError } from "../../store";
import { DatabaseFileChangedError, type WalWatch } from "./wal-sync";

export interface DatabaseFiles {
  /** As configured (`antislashing.path`): what operators recognise in messages. */
  readonly configured: string;
  /** Symlinks resolved: where the -wal, -shm and .lock files are. */
  readonly resolved: string;
  readonly wal: string;
  readonly shm: string;
}

/** The files of the database at `path`, the path's symlinks followed (also for a missing file). */
export function databaseFiles(path: string): DatabaseFiles {
  let resolved: string;
  if (existsSync(path)) resolved = realpathSync(path);
  else {
    const parent = dirname(path);
    resolved = existsSync(parent) ? join(realpathSync(parent), basename(path)) : path;
  }
  return { configured: path, resolved, wal: `${resolved}-wal`, shm: `${resolved}-shm` };
}

function sizeOf(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** Copies saved by the watch when the main file went (see saveCopy), newest last. */
export function rescuedCopies(files: DatabaseFiles): string[] {
  const dir = dirname(files.resolved);
  const prefix = `${basename(files.resolved)}.rescued-`;
  try {
    return readdirSync(dir)
      .filter((name) => name.startsWith(prefix))
      .sort()
      .map((name) => join(dir, name));
  } catch {
    return [];
  }
}

/** The refusal for a missing database, naming any copy a watch saved when it went. */
export function missingDatabase(files: DatabaseFiles): SlashingDatabaseError {
  const copies = rescuedCopies(files);
  const leftovers = [files.wal, files.shm].filter((file) => existsSync(file));
  const moveAway =
    leftovers.length > 0
      ? `, and move ${leftovers.join(" and ")} away (they belong to the file that went; the copy holds their records)`
      : "";
  const saved =
    copies.length > 0
      ? ` When it went, sigil saved what it held to ${copies.join(", ")}: put the newest back as ${files.configured}${moveAway}, to keep its history.`
      : "";
  return new SlashingDatabaseError(
    "missing",
    `slashing protection database ${files.configured} does not exist; sigil never creates one ` +
      `silently. If it existed, it was deleted or moved: restore it (a new, empty one would let ` +
      `sigil sign again what it signed before).${saved}`,
  );
}

/**
 * Before a writer opens the database, with its lock held: refuses files that must not be opened
 * (see the module comment). `exists`: whether the main file is there.
 */
export function checkBeforeWriting(
  files: DatabaseFiles,
  exists: boolean,
  previous: LockRecord | null,
): void {
  const walSize = sizeOf(files.wal) ?? 0;
  if (!exists) {
    if (existsSync(files.wal) || existsSync(files.shm)) {
      throw new SlashingDatabaseError(
        "replaced",
        `${files.configured} does not exist, but ${files.wal} or ${files.shm} does: the database ` +
          "was deleted or moved while in use, and its last records may be in the -wal file. " +
          `Restore ${files.configured}; to start with an empty database instead, remove ` +
          `${files.wal} and ${files.shm} first.`,
      );
    }
    return;
  }
  if (lstatSync(files.resolved).size === 0) {
    throw new SlashingDatabaseError(
      "not_a_database",
      `${files.configured} is empty, not a slashing protection database (it was truncated or ` +
        "replaced): restore the database file",
    );
  }
  if (walSize === 0 || previous === null) return;
  const wal = fileIdentity(files.wal);
  if (previous.wal !== undefined && wal !== previous.wal) {
    throw new SlashingDatabaseError(
      "replaced",
      `${files.wal} is not the write-ahead log sigil last wrote (it was replaced): SQLite would ` +
        `replay it into ${files.configured}. If ${files.configured} is the database you mean, ` +
        `move ${files.wal} and ${files.shm} away; otherwise restore the original files.`,
    );
  }
  const main = fileIdentity(files.resolved);
  if (previous.main !== undefined && main !== previous.main) {
    throw new SlashingDatabaseError(
      "replaced",
      `${files.configured} is not the file sigil last wrote, and ${files.wal}, written with that ` +
        `file, is still there: SQLite would replay it into this one. Restore the original file, ` +
        `or move ${files.wal} and ${files.shm} away if this file is the database you mean.`,
    );
  }
}

/** The refusal for a database whose id is not the one the lock file remembers. */
export function replacedDatabase(
  files: DatabaseFiles,
  lockFile: string,
  found: string | null,
  expected: string,
): SlashingDatabaseError {
  const what = found === null ? "has no database id" : `is database ${found}`;
  return new SlashingDatabaseError(
    "replaced",
    `${files.configured} ${what}, but the database last written at this path is ${expected} ` +
      `(${lockFile}): the file was replaced by another database. Put the original back. If this ` +
      `database is the one to use from now on (and holds every record signed with these keys), ` +
      `delete ${lockFile} and start again.`,
  );
}

/** The refusal for a symlinked path that now leads to another database than it had. */
export function repointedPath(
  files: DatabaseFiles,
  lockFile: string,
  found: string | null,
  expected: string,
): SlashingDatabaseError {
  const what = found === null ? "a database with no id" : `database ${found}`;
  return new SlashingDatabaseError(
    "replaced",
    `${files.configured} is a symlink to ${files.resolved}, ${what}, but the database this path ` +
      `had is ${expected} (${lockFile}): the link was re-pointed. Point it back. If the database ` +
      `it leads to now is the one to use from now on (and holds every record signed with these ` +
      `keys), delete ${lockFile} and start again.`,
  );
}

export interface WatchedFile {
  readonly path: string;
  /** `dev:ino` of the file opened. */
  readonly identity: string;
  /** The main file: a change costs the file SQLite writes, not only its log. */
  readonly main: boolean;
}

/** The device and inode now at `path` (following symlinks), for the watch. */
export function watched(path: string, main: boolean): WatchedFile {
  const identity = fileIdentity(path);
  if (identity === undefined) throw new Error(`${path} vanished while opening it`);
  return { path, identity, main };
}

/**
 * Which file a change touched: the main file at the path (deleted, replaced), the main file
 * itself (truncated or overwritten in place: the file open is no longer whole), or another one.
 */
export type ChangedFile = "main" | "main in place" | "other";

/**
 * The watch the WAL sync runs after every sync: the main file, the -wal and the lock file must
 * still be, at their paths, the files opened, and the main file must still hold the database
 * (its header, and at least the size it had: a truncation or overwrite in place keeps the inode).
 * `onChanged` gets the first problem and which file it touched.
 */
export function watchFiles(
  files: readonly WatchedFile[],
  lock: WriterLock,
  mainFile: MainFileLock,
  onChanged: (error: DatabaseFileChangedError, changed: ChangedFile) => void,
): WalWatch {
  let changed: ChangedFile = "other";
  return {
    problem() {
      for (const file of files) {
        const now = fileIdentity(file.path);
        if (now === file.identity) continue;
        changed = file.main ? "main" : "other";
        return new DatabaseFileChangedError(
          now === undefined
            ? `${file.path} was deleted or moved away while open`
            : `${file.path} is no longer the file sigil opened (it was replaced)`,
        );
      }
      const content = mainFile.check();
      if (content !== null) {
        changed = "main in place";
        return new DatabaseFileChangedError(content);
      }
      const lockProblem = lock.problem();
      return lockProblem === null
        ? null
        : new DatabaseFileChangedError(
            `${lockProblem} while held: another process could now open the database as its writer`,
          );
    },
    onChanged: (error) => onChanged(error, changed),
  };
}
