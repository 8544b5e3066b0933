import { writeFileSync } from "node:fs";

/**
 * Names the calling thread in /proc (Linux, at most 15 bytes), so that `top -H`, `ps -L` and the
 * benchmarks tell the slashing and checkpoint threads from the BLS workers: Bun names every
 * worker thread "Worker" (the benchmarks' signer CPU share counts the BLS workers' CPU by that
 * name). Best effort: elsewhere, or where /proc is not writable, the name stays.
 */
export function nameThisThread(name: string): void {
  try {
    writeFileSync("/proc/thread-self/comm", name.slice(0, 15));
  } catch {
    // Not Linux, or no /proc: nothing depends on the name.
  }
}
