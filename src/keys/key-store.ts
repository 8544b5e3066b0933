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

/** The keys this signer can sign with, in memory, by lower-case pubkey. */
export class KeyStore {
  readonly #keys = new Map<string, StoredKey>();
  readonly #onRemove: ((entry: StoredKey) => void) | undefined;

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
    if (old !== undefined && old.key !== entry.key) this.#onRemove?.(old);
  }

  get(pubkey: string): StoredKey | undefined {
    return this.#keys.get(pubkey);
  }

  remove(pubkey: string): boolean {
    const entry = this.#keys.get(pubkey);
    if (entry === undefined) return false;
    this.#keys.delete(pubkey);
    this.#onRemove?.(entry);
    return true;
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
}
