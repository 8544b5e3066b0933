import { writeFileSync } from "node:fs";

/** Linux keeps at most 15 bytes of a thread's name (TASK_COMM_LEN less its NUL). */
export const THREAD_NAME_MAX = 15;

/** The names sigil's own threads carry: what `top -H`, `ps -L` and /proc/<pid>/task show. */
export const THREAD_NAMES = {
  bls: "sigil-bls",
  slashing: "sigil-slashing",
  checkpoint: "sigil-checkpnt",
} as const;

/**
 * Names the calling thread (Bun names every worker thread "Worker"), so that an operator, and the
 * benchmarks that split the CPU by thread, can tell the BLS workers from the slashing thread and
 * the checkpoint worker. Best effort: where /proc/thread-self cannot be written (not Linux), the
 * thread keeps its name and nothing else changes.
 */
export function nameThisThread(name: string): boolean {
  if (name.length === 0 || Buffer.byteLength(name) > THREAD_NAME_MAX) {
    throw new RangeError(
      `a thread name has 1 to ${THREAD_NAME_MAX} bytes: ${JSON.stringify(name)}`,
    );
  }
  try {
    writeFileSync("/proc/thread-self/comm", name);
    return true;
  } catch {
    return false;
  }
}
