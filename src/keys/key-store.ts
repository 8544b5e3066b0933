import type { BlsSecretKey } from "../bls/backend";

export type KeySourceName = "filesystem" | "key_manager_api" | "cloud_kv";

export interface StoredKey {
  /** 0x + 96 lower-case hex. */
  readonly pubkey: string;
  readonly key: BlsSecretKey;
  readonly source: KeySourceName;
  /** Whether the Key Manager API refuses to delete it (the key service decides, per source). */
  readonly readonly: boolean;
}

export interface KeyStoreOptions {
  /**
   * Called with each entry `remove` takes out, so the BLS backend can let go of its secret
   * (a worker pool wipes it in the worker).
   */
  onRemove?: (entry: StoredKey) => void;
}

/**
 * The keys this signer can sign with, in memory, by lower-case pubkey.
 *
 * A signature holds its key from `acquire` to `release`. A key removed (or replaced) meanwhile
 * is gone for every later `acquire` at once, but leaves the BLS backend (`onRemove`) only after
 * its last signature in flight, and `settled` tells when that is: a delete answers only once
 * signing with the key has stopped.
 */
export class KeyStore {
  readonly #keys = new Map<string, StoredKey>();
  readonly #onRemove: ((entry: StoredKey) => void) | undefined;
  /** Signatures in flight, per entry and per pubkey. */
  readonly #inUse = new Map<StoredKey, number>();
  readonly #inFlight = new Map<string, number>();
  /** Entries removed or replaced while in use: `onRemove` runs at their last release. */
  readonly #retired = new Set<StoredKey>();
  /** Per pubkey, who waits for its signatures in flight to end. */
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(options: KeyStoreOptions = {}) {
    this.#onRemove = options.onRemove;
  }

  /** False (and nothing changes) when the pubkey is already present. */
  add(entry: StoredKey): boolean {
    if (this.#keys.has(entry.pubkey)) return false;
    this.#keys.set(entry.pubkey, entry);
    return true;
  }

  /**
   * Puts `entry` in place of the one held for its pubkey (a changed descriptor), or adds it. The
   * old key leaves the BLS backend (`onRemove`) unless it is the same key object.
   */
  replace(entry: StoredKey): void {
    const old = this.#keys.get(entry.pubkey);
    this.#keys.set(entry.pubkey, entry);
    if (old !== undefined && old.key !== entry.key) this.#retire(old);
  }

  get(pubkey: string): StoredKey | undefined {
    return this.#keys.get(pubkey);
  }

  remove(pubkey: string): boolean {
    const entry = this.#keys.get(pubkey);
    if (entry === undefined) return false;
    this.#keys.delete(pubkey);
    this.#retire(entry);
    return true;
  }

  /** The key for one signature, held until `release(entry)`; undefined when none is loaded. */
  acquire(pubkey: string): StoredKey | undefined {
    const entry = this.#keys.get(pubkey);
    if (entry === undefined) return undefined;
    this.#inUse.set(entry, (this.#inUse.get(entry) ?? 0) + 1);
    this.#inFlight.set(pubkey, (this.#inFlight.get(pubkey) ?? 0) + 1);
    return entry;
  }

  /** Ends one `acquire` of `entry` (exactly once per acquire, on every path). */
  release(entry: StoredKey): void {
    const uses = (this.#inUse.get(entry) ?? 1) - 1;
    if (uses > 0) this.#inUse.set(entry, uses);
    else {
      this.#inUse.delete(entry);
      if (this.#retired.delete(entry)) this.#onRemove?.(entry);
    }
    const { pubkey } = entry;
    const inFlight = (this.#inFlight.get(pubkey) ?? 1) - 1;
    if (inFlight > 0) {
      this.#inFlight.set(pubkey, inFlight);
      return;
    }
    this.#inFlight.delete(pubkey);
    const waiting = this.#waiting.get(pubkey);
    this.#waiting.delete(pubkey);
    for (const wake of waiting ?? []) wake();
  }

  /** Signatures with a key of this pubkey in flight now. */
  inFlight(pubkey: string): number {
    return this.#inFlight.get(pubkey) ?? 0;
  }

  /** Resolves once no signature with a key of this pubkey is in flight (at once when none is). */
  settled(pubkey: string): Promise<void> {
    if (!this.#inFlight.has(pubkey)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiting = this.#waiting.get(pubkey);
      if (waiting) waiting.push(resolve);
      else this.#waiting.set(pubkey, [resolve]);
    });
  }

  pubkeys(): string[] {
    return [...this.#keys.keys()];
  }

  count(source?: KeySourceName): number {
    if (!source) return this.#keys.size;
    let n = 0;
    for (const entry of this.#keys.values()) if (entry.source === source) n++;
    return n;
  }

  /** A key out of the store leaves the BLS backend now, or at its last signature in flight. */
  #retire(entry: StoredKey): void {
    if (this.#inUse.has(entry)) this.#retired.add(entry);
    else this.#onRemove?.(entry);
  }
}
