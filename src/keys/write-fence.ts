/**
 * Lets a load of a key source leave alone the keys that a write changed while the load read the
 * source. A load reads first and applies what it read to the key store later (in one step); a
 * write (an import or a delete) changes the source, then the store. Without the fence, a load that
 * read a key before a delete removed it would put it back, and one that read the source before an
 * import would take the imported key out again. The write's outcome stands for the keys it names;
 * the next load reads them as they are.
 */
export class WriteFence {
  /** Keys being written now, with how many writes hold each. */
  readonly #writing = new Map<string, number>();
  /** Per running load, the keys written since it started reading. */
  readonly #watches = new Set<Set<string>>();

  /** Marks `pubkeys` as being written; call the returned function when the write is over. */
  begin(pubkeys: Iterable<string>): () => void {
    const marked = [...pubkeys];
    for (const pubkey of marked) {
      this.#writing.set(pubkey, (this.#writing.get(pubkey) ?? 0) + 1);
      for (const touched of this.#watches) touched.add(pubkey);
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      for (const pubkey of marked) {
        const holders = (this.#writing.get(pubkey) ?? 1) - 1;
        if (holders === 0) this.#writing.delete(pubkey);
        else this.#writing.set(pubkey, holders);
      }
    };
  }

  /**
   * Starts a load: `touched` is true for every key a write held at any moment since, including
   * writes already under way now (they may change the source after the load read it).
   */
  watch(): { touched(pubkey: string): boolean; readonly all: ReadonlySet<string>; close(): void } {
    const touched = new Set(this.#writing.keys());
    this.#watches.add(touched);
    return {
      touched: (pubkey) => touched.has(pubkey),
      all: touched,
      close: () => {
        this.#watches.delete(touched);
      },
    };
  }
}
