/** Helpers for tests that check what has settled, and when, without timing anything. */

/** Lets every callback queued so far run (setImmediate, timers and I/O included). */
export async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

export type Settlement = "pending" | "resolved" | "rejected";

/** Live flags: each entry turns "resolved" or "rejected" when its promise settles. */
export function settledFlags(promises: readonly Promise<unknown>[]): Settlement[] {
  const flags = promises.map((): Settlement => "pending");
  for (const [i, p] of promises.entries()) {
    p.then(
      () => {
        flags[i] = "resolved";
      },
      () => {
        flags[i] = "rejected";
      },
    );
  }
  return flags;
}
