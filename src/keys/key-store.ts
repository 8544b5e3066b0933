import type { BlsSecretKey } from "../bls/backend";

export type KeySourceName = "filesystem" | "key_manager_api" | "cloud_kv";

export interface StoredKey {
  /** 0x + 96 lower-case hex. */
  readonly pubkey: string;
  readonly key: BlsSecretKey;
  readonly source: KeySourceName;
  /** Keys from read-only sources cannot be deleted through the Key Manager API. */
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
