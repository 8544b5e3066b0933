import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** A cache file as found on disk, before its format is looked at. */
export type CacheFileRead =
  | { kind: "missing" }
  /** Something sigil must leave alone: not a regular file, too large, unreadable. */
  | { kind: "foreign"; reason: string }
  /** `loose`: group or other access, so it is rewritten with 0600 even if nothing else changed. */
  | { kind: "bytes"; bytes: Buffer; loose: boolean };

/** Reads a cache file of at most `maxBytes` (the caches of keys, which sigil writes itself). */
export async function readCacheFile(path: string, maxBytes: number): Promise<CacheFileRead> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return { kind: "foreign", reason: "the path is not a regular file" };
    if (info.size > maxBytes) return { kind: "foreign", reason: "larger than a cache can be" };
    const loose = (info.mode & 0o077) !== 0;
    return { kind: "bytes", bytes: await readFile(path), loose };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === "ENOENT") return { kind: "missing" };
    return {
      kind: "foreign",
      reason: `cannot read it (${typeof code === "string" ? code : "error"})`,
    };
  }
}

/**
 * Writes a file so that a crash at any moment leaves either the old content or the new, never
 * a torn file: write a hidden temporary beside it, fsync, rename over the target, fsync the
 * directory (so the rename itself is durable). Temporaries do not end in .yaml/.json, so the
 * key loader never reads one.
 */
export function writeFileAtomic(path: string, content: string | Uint8Array, mode = 0o600): void {
  const temporary = join(
    dirname(path),
    `.${basename(path)}.${randomBytes(TEMPORARY_SUFFIX_BYTES).toString("hex")}.tmp`,
  );
  const fd = openSync(temporary, "wx", mode);
  try {
    if (typeof content === "string") writeSync(fd, content);
    else for (let at = 0; at < content.length; ) at += writeSync(fd, content, at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  syncDirectory(dirname(path));
}

const TEMPORARY_SUFFIX_BYTES = 6;
/** Exactly the names writeFileAtomic gives its temporaries, and nothing an operator would write. */
const TEMPORARY_NAME = new RegExp(`^\\..+\\.[0-9a-f]{${TEMPORARY_SUFFIX_BYTES * 2}}\\.tmp$`);

export function isAtomicWriteTemporary(name: string): boolean {
  return TEMPORARY_NAME.test(name);
}

/**
 * Removes the temporaries a crash left in `dir` (a write interrupted before its rename); they may
 * hold a keystore password. Returns the names removed. A missing directory has none.
 */
export function removeLeftoverTemporaries(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const leftovers = names.filter(isAtomicWriteTemporary);
  if (leftovers.length > 0) removeFilesDurably(leftovers.map((name) => join(dir, name)));
  return leftovers;
}

/** Removes files and makes the removal durable; missing files are fine. */
export function removeFilesDurably(paths: readonly string[]): void {
  for (const path of paths) rmSync(path, { force: true });
  for (const dir of new Set(paths.map(dirname))) syncDirectory(dir);
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
