import type { BlsSecretKey } from "../signing/bls/backend";

export type KeySourceName = "filesystem" | "key_manager_api" | "cloud_kv";

export interface StoredKey {
  /** 0x + 96 lower-case hex. */
  readonly pubkey: string;
  readonly key: BlsSecretKey;
  readonly source: KeySourceName;
  /** Keys from read-only sources cannot be deleted through the Key Manager API. */
  readonly readonly: boolean;
}

/** The keys this signer can sign with, in memory, by lower-case pubkey. */
export class KeyStore {
  readonly #keys = new Map<string, StoredKey>();

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
    return this.#keys.delete(pubkey);
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
