/**
 * SQLite slashing protection (bun:sqlite): the EIP-3076 COMPLETE strategy, one process per file.
 *
 * This file opens it, and checks that the files are the ones that hold its history (open and
 * identity). The store itself, and the checks of the sign path: checks.ts; import and export of
 * interchanges: interchange.ts; pruning: maintenance.ts; the WAL sync and checkpoints: wal-sync.ts
 * and wal-checkpoint.ts; the files and their watch: files.ts.
 */

import { Database } from "bun:sqlite";
import { chmodSync, existsSync, lstatSync, rmSync, statSync } from "node:fs";
import type { Logger } from "../../../observability/log";
import {
  acquireWriterLock,
  fileIdentity,
  SqliteLockedError,
  type WriterLock,
} from "../../../storage/sqlite/lock";
import {
  hasSqliteHeader,
  lockMainFile,
  type MainFileLock,
  SqliteFileLockedError,
  SqliteHardLinkError,
} from "../../../storage/sqlite/main-file";
import { runSqliteMigrations } from "../../../storage/sqlite/migrate";
import { openDurableSqlite } from "../../../storage/sqlite/open";
import { bytesToHex } from "../../encoding";
import { SlashingDatabaseError, type SlashingStore, type StoreMaintenance } from "../../store";
import { SqliteSlashingStore } from "./checks";
import {
  checkBeforeWriting,
  type DatabaseFiles,
  databaseFiles,
  missingDatabase,
  replacedDatabase,
  repointedPath,
  watched,
  watchFiles,
} from "./files";
import { MIGRATIONS, SQLITE_SCHEMA_VERSION } from "./migrations";
import { asRoot, type Row } from "./store-access";
import { INLINE_CHECKPOINTS, startBackgroundCheckpoints } from "./wal-checkpoint";
import { openWalSync, type SyncWal, type WalSync, type WalWatch } from "./wal-sync";
export interface SqliteStoreOptions {
  /**
   * Create the file when it is missing (`sigil slashing init`, --init-slashing-protection). Without
   * it a missing file is refused: a signer must never start on an empty database by accident.
   */
  readonly create: boolean;
  /**
   * "write" (default): the writer lock is taken and held until close. "read": read-only, no lock,
   * nothing written or migrated (export, dry runs), beside a running signer.
   */
  readonly access?: "write" | "read";
  /** How long a check waits for another process's write lock before failing. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /**
   * The sync of the -wal file behind the durability barrier. Default: fdatasync on Bun's thread
   * pool; the slashing thread runs it on itself (fdatasyncWalOnThisThread); tests fake it.
   */
  readonly syncWal?: SyncWal;
  /**
   * "background": WAL checkpoints run in a worker thread instead of inside a COMMIT on the event
   * loop (wal-checkpoint.ts); the signer uses it. Default "inline": SQLite's own, for short-lived
   * processes (CLI commands, tests).
   */
  readonly checkpoints?: "inline" | "background";
  /**
   * Where the background checkpoints say they started, or fell back to inline ones, and where a
   * change of the files while open is reported.
   */
  readonly logger?: Pick<Logger, "warn" | "info" | "error">;
  /** Starts the checkpoint worker (tests). */
  readonly spawnCheckpointWorker?: () => Worker;
  /** The first pause before a failed checkpoint is tried again (tests). */
  readonly checkpointRetryMs?: number;
}

/** The database was written by a newer sigil (or is not a sigil database). */
export class SqliteSchemaError extends Error {
  override readonly name = "SqliteSchemaError";
}

/**
 * Opens the slashing protection database at `path` (":memory:" for tests): WAL,
 * synchronous=NORMAL with the durability barrier (see the module comment), foreign keys, busy
 * timeout, then pending schema migrations. Refuses a database whose schema version is newer than
 * this build knows (SqliteSchemaError).
 *
 * Writers ("write", the default) take the file's writer lock first (storage/sqlite/lock.ts: one
 * writer per file, SlashingDatabaseError "in_use" naming the holder) and hold it until close. A
 * missing file is created only with `create` (`sigil slashing init`); otherwise, and for files
 * that are not the ones last written (files.ts), SlashingDatabaseError. While open, the files at
 * the paths are watched after every WAL sync and at every ping: once they are not the ones open,
 * the store stops (DatabaseFileChangedError), logs it once, and saves what it holds.
 *
 * Readers ("read": export, a dry run) take no lock, open read-only, write nothing and migrate
 * nothing; they work beside a running signer.
 */
export async function openSqliteStore(
  path: string,
  options: SqliteStoreOptions,
): Promise<SlashingStore> {
  if (path === ":memory:" || path === "") return openMigrated(path, options, undefined);
  const files = databaseFiles(path);
  const exists = existsSync(files.resolved);
  if (options.access === "read") {
    if (!exists) throw missingDatabase(files);
    return openReader(files, options);
  }
  if (!exists && !options.create) throw missingDatabase(files);
  const lock = takeWriterLock(files, files.resolved);
  let pathLock: WriterLock | undefined;
  let mainFile: MainFileLock | undefined;
  try {
    // A symlinked path remembers, beside the link, which database it had: a re-pointed link is
    // then refused, where the lock file beside the target would follow the link.
    if (lstatSync(files.configured, { throwIfNoEntry: false })?.isSymbolicLink()) {
      pathLock = pathRecord(files, options.logger);
    }
    checkBeforeWriting(files, exists, lock.previous);
    mainFile = lockDatabaseFile(files, exists);
    if (exists) assertSigilDatabase(files);
    const writer: Writer = { files, lock, pathLock, mainFile, existed: exists };
    return await openMigrated(path, options, writer);
  } catch (error) {
    mainFile?.release();
    pathLock?.release();
    lock.release();
    // A file this open created and left empty would read as "truncated" at the next start.
    if (mainFile && !exists && statSync(files.resolved, { throwIfNoEntry: false })?.size === 0) {
      rmSync(files.resolved, { force: true });
    }
    throw error;
  }
}

/**
 * The lock file beside a symlinked path. Where the link's directory is not writable (a link in
 * /etc to a database under /var/lib), the path cannot remember its database: said at every start,
 * and the start goes on as before this record existed.
 */
function pathRecord(
  files: DatabaseFiles,
  logger: SqliteStoreOptions["logger"],
): WriterLock | undefined {
  try {
    return takeWriterLock(files, files.configured);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") throw error;
    logger?.warn(
      `cannot write ${files.configured}.lock beside the symlink ${files.configured} (${code}): ` +
        "a link re-pointed to another database is not caught at restart; make the link's " +
        "directory writable by sigil, or point antislashing.path at the database itself",
      { file: files.configured },
    );
    return undefined;
  }
}

/** The lock file `<file>.lock` (storage/sqlite/lock.ts), or the refusal naming its holder. */
function takeWriterLock(files: DatabaseFiles, file: string): WriterLock {
  try {
    return acquireWriterLock(file);
  } catch (error) {
    if (error instanceof SqliteLockedError) {
      throw new SlashingDatabaseError(
        "in_use",
        `slashing protection database ${files.configured} is in use by ${error.holderPid === undefined ? "another process" : `process ${error.holderPid}`} ` +
          `(${error.lockFile}): one process at a time writes a sqlite database; stop it first`,
      );
    }
    throw error;
  }
}

/**
 * The writer's lock on the main file itself (storage/sqlite/main-file.ts): it reaches every name
 * of the file, where the lock file reaches one. Created here when missing (`create`).
 */
function lockDatabaseFile(files: DatabaseFiles, exists: boolean): MainFileLock {
  try {
    return lockMainFile(files.resolved, { create: !exists });
  } catch (error) {
    if (error instanceof SqliteFileLockedError) {
      throw new SlashingDatabaseError(
        "in_use",
        `slashing protection database ${files.configured} is in use by another process that ` +
          `opened the same file under another name (a hard link, a bind mount, another container's ` +
          "path): one process at a time writes a sqlite database; stop it first",
      );
    }
    if (error instanceof SqliteHardLinkError) {
      const also = files.resolved === files.configured ? "" : ` (${files.resolved})`;
      throw new SlashingDatabaseError(
        "linked",
        `slashing protection database ${files.configured}${also} has ${error.links} hard links: ` +
          "through another name a second writer would keep a -wal of its own and sign without " +
          `this one's records. Remove the other names (\`find / -xdev -samefile ${files.resolved}\`` +
          " lists them; keep this one) and start again",
      );
    }
    throw error;
  }
}

/**
 * Refuses a file that is not a sigil slashing protection database, before anything writes it. A
 * file that starts with SQLite's header but cannot be opened (a directory sigil cannot write, where
 * SQLite must create the -shm file even to read) is not called "not a database": its open error
 * goes to the caller, which names the file system's reason (registry.ts).
 */
function assertSigilDatabase(files: DatabaseFiles): void {
  if (!hasSqliteHeader(files.resolved)) {
    throw new SlashingDatabaseError(
      "not_a_database",
      `${files.configured} is not a slashing protection database: it is not a SQLite database ` +
        "file (it does not start with SQLite's header). Check antislashing.path; if it is the " +
        "right path, the file was overwritten: restore the database from its backup",
    );
  }
  let tables: string[];
  try {
    const probe = new Database(files.resolved, { readonly: true });
    try {
      tables = (
        probe.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
          name: string;
        }[]
      ).map((row) => row.name);
    } finally {
      probe.close(false);
    }
  } catch (error) {
    if (!isCorrupt(error)) throw error;
    throw new SlashingDatabaseError(
      "not_a_database",
      `${files.configured} is not a slashing protection database (${error instanceof Error ? error.message : String(error)}): restore the database from its backup`,
    );
  }
  // An empty database (no tables yet) is a file init created and a crash interrupted.
  if (tables.length > 0 && !(tables.includes("schema_version") && tables.includes("metadata"))) {
    throw new SlashingDatabaseError(
      "not_a_database",
      `${files.configured} is a SQLite database, but not a sigil slashing protection database`,
    );
  }
}

/** SQLite found the file's content broken (not a permission or an I/O problem). */
function isCorrupt(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT";
}

/** A reader: read-only, no lock, no migration, nothing to make durable. */
function openReader(files: DatabaseFiles, options: SqliteStoreOptions): SlashingStore {
  assertSigilDatabase(files);
  const db = new Database(files.resolved, { readonly: true, strict: true, safeIntegers: true });
  try {
    db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    const row = db.query("SELECT MAX(version) AS version FROM schema_version").get() as {
      version: bigint | null;
    } | null;
    const version = Number(row?.version ?? 0);
    if (version > SQLITE_SCHEMA_VERSION) {
      throw new SqliteSchemaError(
        `slashing protection database has schema version ${version}, newer than this sigil knows (${SQLITE_SCHEMA_VERSION}); refusing to open it (upgrade sigil)`,
      );
    }
  } catch (error) {
    db.close(false);
    throw error;
  }
  return new SqliteSlashingStore(db, READ_ONLY, files.configured);
}

const READ_ONLY: WalSync = {
  barrier: async () => {},
  assertHealthy: () => {},
  check: () => {},
  close: async () => {},
};

const DATABASE_ID_KEY = "database_id";
const NO_LOCK = { release: () => {} };

interface Writer {
  readonly files: DatabaseFiles;
  readonly lock: WriterLock;
  /** When the configured path is a symlink: the lock file beside the link, not its target. */
  readonly pathLock: WriterLock | undefined;
  /** The lock on the main file itself; also how its header and size are watched. */
  readonly mainFile: MainFileLock;
  /** The main file was there before this open (false: `create` made it). */
  readonly existed: boolean;
}

async function openMigrated(
  path: string,
  options: SqliteStoreOptions,
  writer: Writer | undefined,
): Promise<SlashingStore> {
  const db = openDurableSqlite(path, {
    busyTimeoutMs: options.busyTimeoutMs,
    safeIntegers: true,
    foreignKeys: true,
    synchronous: "NORMAL",
  });
  let wal: WalSync;
  const tamper = { inPlace: false };
  try {
    let found: string | null = null;
    if (writer) {
      db.query("SELECT count(*) FROM sqlite_master").get(); // a read in WAL mode creates the -wal
      found = checkDatabaseId(db, writer);
      // Before the first write, so that a crash from here on leaves files the lock file knows.
      recordFiles(writer, found);
    }
    runSqliteMigrations(db, {
      what: "slashing protection",
      versionTable: "schema_version",
      migrations: MIGRATIONS,
      schemaError: (message) => new SqliteSchemaError(message),
    });
    const watch = writer ? watchWriter(db, writer, options.logger, tamper) : undefined;
    wal = openWalSync(db, options.syncWal, watch);
    if (writer) {
      recordFiles(writer, found ?? newDatabaseId(db));
      writer.mainFile.confirm();
    }
  } catch (error) {
    db.close(false);
    throw error;
  }
  const checkpoints =
    options.checkpoints === "background"
      ? await startBackgroundCheckpoints(db, {
          logger: options.logger,
          spawn: options.spawnCheckpointWorker,
          retryFirstMs: options.checkpointRetryMs,
          mayCheckpoint: writer && (() => writer.mainFile.check() === null),
        })
      : INLINE_CHECKPOINTS;
  // Checks and imports pass the barrier after each commit: that is where a checkpoint comes due.
  const durability: WalSync = {
    barrier: () => {
      checkpoints.committed();
      return wal.barrier();
    },
    assertHealthy: () => wal.assertHealthy(),
    check: () => wal.check(),
    close: async () => {
      await checkpoints.close();
      await wal.close();
    },
  };
  const locks = writer ? [writer.mainFile, writer.lock, writer.pathLock ?? NO_LOCK] : [];
  const walFile = writer?.files.wal;
  const maintenance = (): StoreMaintenance => {
    const { failing, failures } = checkpoints.status();
    const walBytes = walFile ? (statSync(walFile, { throwIfNoEntry: false })?.size ?? 0) : 0;
    return { checkpointFailing: failing, checkpointFailures: failures, walBytes };
  };
  return new SqliteSlashingStore(
    db,
    durability,
    writer?.files.configured ?? path,
    locks,
    maintenance,
    () => tamper.inPlace,
  );
}

function readDatabaseId(db: Database): string | null {
  const hasMetadata = db
    .query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'metadata'")
    .get();
  if (!hasMetadata) return null;
  const row = db
    .query("SELECT value FROM metadata WHERE key = $key")
    .get({ key: DATABASE_ID_KEY }) as Row | null;
  const value = asRoot(row?.value ?? null);
  return value === null ? null : bytesToHex(value).slice(2);
}

/**
 * The database's id, checked against the one the lock file remembers: another database at the
 * path is refused, and so is one without an id where the lock file remembers one. A database
 * `create` has just made replaces whatever was remembered: that is what init is for. Null when
 * the database has no id yet (just created, or made before ids existed): it gets one.
 */
function checkDatabaseId(db: Database, writer: Writer): string | null {
  const found = readDatabaseId(db);
  if (!writer.existed) return found;
  const expected = writer.lock.previous?.database_id;
  if (expected !== undefined && found !== expected) {
    throw replacedDatabase(writer.files, writer.lock.path, found, expected);
  }
  const hadThroughPath = writer.pathLock?.previous?.database_id;
  if (writer.pathLock && hadThroughPath !== undefined && found !== hadThroughPath) {
    throw repointedPath(writer.files, writer.pathLock.path, found, hadThroughPath);
  }
  return found;
}

/** A new id, on disk before the lock file names it (a commit with synchronous = FULL, once). */
function newDatabaseId(db: Database): string {
  const id = crypto.getRandomValues(new Uint8Array(16));
  db.run("PRAGMA synchronous = FULL");
  try {
    db.transaction(() => {
      db.query("INSERT INTO metadata (key, value) VALUES ($key, $value)").run({
        key: DATABASE_ID_KEY,
        value: id,
      });
    }).immediate();
  } finally {
    db.run("PRAGMA synchronous = NORMAL");
  }
  return bytesToHex(id).slice(2);
}

/** Writes what this writer has open into the lock file, for the next one to compare. */
function recordFiles(writer: Writer, databaseId: string | null): void {
  const main = fileIdentity(writer.files.resolved);
  const wal = fileIdentity(writer.files.wal);
  writer.lock.write({
    ...(databaseId !== null && { database_id: databaseId }),
    ...(main !== undefined && { main }),
    ...(wal !== undefined && { wal }),
  });
  // Beside a symlinked path: only which database the path had (the files are the target's).
  writer.pathLock?.write(databaseId === null ? {} : { database_id: databaseId });
}

/**
 * The watch of a writer's files (files.ts). On the first change it logs one line naming the file
 * and saves what the connection still holds: a checkpoint puts the log's records into the main
 * file it has open (enough when only the -wal went: the main file at the path is that file), and
 * when the main file itself went, a copy of the whole database is written beside the path. A main
 * file cut or overwritten in place gets no checkpoint: it would write the log's pages into what is
 * left, a file that might then pass for a database at the next start; the copy is still tried.
 */
function watchWriter(
  db: Database,
  writer: Writer,
  logger: SqliteStoreOptions["logger"],
  tamper: { inPlace: boolean },
): WalWatch {
  const files = [watched(writer.files.configured, true), watched(writer.files.wal, false)];
  return watchFiles(files, writer.lock, writer.mainFile, (error, changed) => {
    tamper.inPlace = changed === "main in place";
    const saved: Record<string, string> = {};
    if (changed !== "main in place") {
      try {
        db.query("PRAGMA wal_checkpoint(FULL)").get();
        saved.checkpoint = "done";
      } catch (cause) {
        saved.checkpoint = `failed: ${String(cause)}`;
      }
    }
    if (changed !== "other") {
      const copy = `${writer.files.resolved}.rescued-${new Date().toISOString().replaceAll(":", "")}`;
      try {
        db.run(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
        chmodSync(copy, 0o600);
        saved.copy = copy;
      } catch (cause) {
        rmSync(copy, { force: true }); // a partial copy must not pass for a saved database
        saved.copy = `failed: ${String(cause)}`;
      }
    }
    logger?.error(
      `slashing protection database file changed while open: ${error.message}; signing stopped ` +
        "(503 slashing_db_unavailable, /healthcheck DOWN) until sigil is restarted, and a restart " +
        "refuses files that are not the ones written (docs/antislashing.md)",
      { file: writer.files.configured, ...saved },
    );
  });
}
