/**
 * Serialises tasks per key: an import and a delete of one pubkey never interleave; two loads of
 * one source never overlap.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.catch(() => {});
    this.#tails.set(key, settled);
    try {
      return await next;
    } finally {
      if (this.#tails.get(key) === settled) this.#tails.delete(key);
    }
  }

  /**
   * Runs `task` holding every key's lock. The locks are taken in sorted order, so two batches
   * sharing keys wait for each other instead of each holding a key the other needs.
   */
  runAll<T>(keys: Iterable<string>, task: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const inner = sorted.reduceRight<() => Promise<T>>(
      (next, key) => () => this.run(key, next),
      task,
    );
    return inner();
  }
}
