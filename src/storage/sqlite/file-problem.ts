/**
 * Why a sqlite database file cannot be opened, in the file system's terms: SQLite itself says
 * only "unable to open database file" (or "disk I/O error" for a directory). A database is more
 * than its file: SQLite and sigil create `<file>-wal`, `<file>-shm` and `<file>.lock` beside it,
 * so a writer needs the directory writable too.
 */
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";

/** A database file that cannot be opened, with the reason (the caller names its option). */
export class SqliteFileError extends Error {
  override readonly name = "SqliteFileError";

  constructor(
    /** As configured. */
    readonly path: string,
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`${path}: ${reason}`, { cause });
  }
}

export interface FileProblemOptions {
  /** "write": the file, its -wal and -shm, and the directory must be writable. */
  readonly access: "read" | "write";
  /** The directory may be created (it is, when missing): its nearest parent must be writable. */
  readonly createDirectory?: boolean;
}

/** The reason `path` cannot be opened as `options` asks, or undefined when none is visible. */
export function sqliteFileProblem(path: string, options: FileProblemOptions): string | undefined {
  const file = resolve(path);
  const dir = dirname(file);
  const directory = kind(dir);
  if (directory === "missing") {
    if (!options.createDirectory) return `its directory ${dir} does not exist`;
    const parent = nearestExisting(dir);
    const denied = parent && deniedWrite(parent);
    return denied ? `cannot create its directory ${dir}: ${denied}` : undefined;
  }
  if (directory !== "directory") return `${dir} is not a directory`;
  const target = kind(file);
  if (target === "directory") return "it is a directory, not a database file";
  if (target === "other") return "it is not a regular file";
  const name = basename(file);
  if (options.access === "read") {
    if (target !== "file") return undefined;
    const denied = deniedRead(file);
    if (denied) return denied;
    // Even a reader of a WAL database creates its -shm (the WAL index) when it is missing.
    const deniedDir = kind(`${file}-shm`) === "file" ? undefined : deniedWrite(dir);
    return deniedDir && `${deniedDir}, and SQLite creates ${name}-shm there even to read: ${FIX}`;
  }
  if (target === "file") {
    const denied = deniedReadWrite(file);
    if (denied) return denied;
  }
  for (const companion of [`${file}-wal`, `${file}-shm`, `${file}.lock`]) {
    if (kind(companion) === "file") {
      const denied = deniedReadWrite(companion);
      if (denied) return denied;
    }
  }
  const denied = deniedWrite(dir);
  if (denied) {
    return `${denied}, and SQLite and sigil create ${name}-wal, ${name}-shm and ${name}.lock there: ${FIX}`;
  }
  return undefined;
}

const FIX = "make it writable by the user sigil runs as (chown), or run sigil as its owner";

function kind(path: string): "missing" | "file" | "directory" | "other" {
  try {
    const stats = statSync(path);
    return stats.isDirectory() ? "directory" : stats.isFile() ? "file" : "other";
  } catch {
    return "missing";
  }
}

function nearestExisting(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(at)) return at;
    if (dirname(at) === at) return undefined;
  }
}

/** "uid 998 (owner uid 0, mode 0755)": who tries, and what the path allows. */
function who(path: string): string {
  const uid = process.getuid?.();
  let owner = "";
  try {
    const stats = statSync(path);
    owner = ` (owner uid ${stats.uid}, mode 0${(stats.mode & 0o777).toString(8)})`;
  } catch {}
  return `${uid === undefined ? "this user" : `uid ${uid}`} cannot write ${path}${owner}`;
}

function allowed(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

function deniedWrite(dir: string): string | undefined {
  return allowed(dir, constants.W_OK | constants.X_OK)
    ? undefined
    : `permission denied: ${who(dir)}`;
}

function deniedReadWrite(path: string): string | undefined {
  return allowed(path, constants.R_OK | constants.W_OK)
    ? undefined
    : `permission denied: ${who(path).replace("cannot write", "cannot read and write")}`;
}

function deniedRead(path: string): string | undefined {
  return allowed(path, constants.R_OK)
    ? undefined
    : `permission denied: ${who(path).replace("cannot write", "cannot read")}`;
}
