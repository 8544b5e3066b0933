/**
 * Key files (raw-key descriptors, keystores, password files) readable by anyone but their owner
 * are a warning, not an error: refusing them would stop a signer on a restart after an innocent
 * `cp`, and the operator can fix the mode without downtime. One line per file up to a limit,
 * then a count, so that 10,000 loose keystores do not bury the rest of the log.
 */
import type { Logger } from "../observability/log";

/** Group or world permission bits of any kind (read, write or execute). */
const GROUP_OR_OTHER_BITS = 0o077;
/** Files named one by one before the rest are only counted. */
export const LOOSE_FILES_NAMED = 20;

export function isOpenToOthers(mode: number): boolean {
  return (mode & GROUP_OR_OTHER_BITS) !== 0;
}

export function formatMode(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, "0")}`;
}

export interface LooseModeReport {
  /** Records the mode of a key file just read; files open only to their owner are ignored. */
  check(path: string, mode: number): void;
  /** Logs what was found; returns how many files were loose. */
  flush(logger: Logger): number;
}

export function createLooseModeReport(): LooseModeReport {
  const loose = new Map<string, number>();
  return {
    check(path, mode) {
      if (isOpenToOthers(mode)) loose.set(path, mode);
    },
    flush(logger) {
      const files = [...loose.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      for (const [file, mode] of files.slice(0, LOOSE_FILES_NAMED)) {
        logger.warn("key file is readable or writable by group or others; run chmod 600", {
          file,
          mode: formatMode(mode),
        });
      }
      if (files.length > LOOSE_FILES_NAMED) {
        logger.warn("more key files are open to group or others", {
          count: files.length - LOOSE_FILES_NAMED,
          total: files.length,
        });
      }
      loose.clear();
      return files.length;
    },
  };
}
