/** Serialises tasks per key (a pubkey): an import and a delete of one key never interleave. */
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
}
