import { resolve } from "node:path";
import type { BlsBackend } from "../../bls/backend";
import type { Logger } from "../../observability/log";
import { type KeystoreDecrypt, loadFilesystemKeys } from "../filesystem";
import { type CacheKeystore, type KeystoreCache, openKeystoreCache } from "../keystore-cache";
import { PubkeyCache } from "../pubkey-cache";
import { KeyManagerFiles } from "./keymanager-files";
import type { KeySource, SnapshotKey, SourceSnapshot } from "./source";

export interface FilesystemSourceOptions {
  readonly paths: readonly string[];
  readonly keystoreConcurrency: number;
  readonly rawConcurrency: number;
  readonly bls: BlsBackend;
  readonly logger: Logger;
  /**
   * The keystore cache file (key_sources.filesystem.cache), if enabled; the raw keys' public-key
   * cache is the file beside it, PUBKEY_CACHE_SUFFIX appended.
   */
  readonly cachePath?: string;
  /** With the Key Manager API: its keystore files live in the first path. */
  readonly keyManager?: boolean;
  /** Defaults to `decryptKeystore` (tests count calls). */
  readonly decrypt?: KeystoreDecrypt;
}

/** The public-key cache's file is the keystore cache's path with this appended. */
export const PUBKEY_CACHE_SUFFIX = ".pubkeys";

const NOT_A_KEY_MANAGER_FILE =
  "its descriptor is not a Key Manager file (<pubkey>.yaml in the first key directory)";

/**
 * The key descriptors of `key_sources.filesystem.paths` (docs/keys.md). Every load reads every
 * directory; a reload keeps, without opening it again, each key whose descriptor, keystore and
 * password are byte for byte what the last load read, so reloading costs file reads and the
 * KDFs of what changed. The keystore cache, when enabled, is opened by the first load and kept
 * open: keystores decrypted later (reloads, imports) are sealed into it, and keys that leave
 * leave it.
 *
 * With the Key Manager API the source is writable through its keystore files (`writer`), and a
 * key is deletable exactly when that writer could have written its descriptor: `<pubkey>.yaml`
 * in the first directory, holding that one key, and no other descriptor describing it (deleting
 * would not stop it loading again otherwise). Every other key is read-only.
 */
export class FilesystemSource implements KeySource {
  readonly name = "filesystem" as const;
  readonly writer?: KeyManagerFiles;
  #cache: KeystoreCache | undefined;
  /**
   * True when the cache is enabled but the first load opened none (it had no keystore to derive
   * the cache's key from): the first import makes it from its own keystores' passwords.
   */
  #cacheDeferred = false;
  #opening: Promise<KeystoreCache | undefined> | undefined;
  #pubkeys: PubkeyCache | undefined;
  #loaded = false;
  /** Fingerprint → pubkey of what the last load (and the writes since) read. */
  #fingerprints = new Map<string, string>();

  constructor(private readonly options: FilesystemSourceOptions) {
    const first = options.paths[0];
    if (options.keyManager && first !== undefined)
      this.writer = new KeyManagerFiles({
        directory: first,
        logger: options.logger,
        cache: () => this.#cache,
        cacheFor: (keystores) => this.#cacheFor(keystores),
        written: (pubkey, fingerprint) => this.#fingerprints.set(fingerprint, pubkey),
      });
  }

  ready(): boolean {
    return true;
  }

  async load(present: (pubkey: string) => "this" | "other" | undefined): Promise<SourceSnapshot> {
    const { options } = this;
    if (options.paths.length === 0) return { keys: [], failures: [] };
    const known = this.#fingerprints;
    const first = !this.#loaded;
    const cache = first
      ? options.cachePath === undefined
        ? undefined
        : { path: options.cachePath, keepOpen: true }
      : this.#cache && { open: this.#cache };
    if (first && options.cachePath !== undefined) {
      this.#pubkeys = await PubkeyCache.open(
        options.cachePath + PUBKEY_CACHE_SUFFIX,
        options.logger,
      );
    }
    const pubkeys = this.#pubkeys;
    const result = await loadFilesystemKeys({
      paths: [...options.paths],
      keystoreConcurrency: options.keystoreConcurrency,
      rawConcurrency: options.rawConcurrency,
      bls: options.bls,
      logger: options.logger,
      ...(cache ? { cache } : {}),
      ...(options.decrypt ? { decrypt: options.decrypt } : {}),
      ...(pubkeys ? { pubkeyCache: { cache: pubkeys, prune: first } } : {}),
      // The first load runs before the signer serves requests; reloads never hold the loop.
      syncReads: first,
      ...(first ? { collect: () => Bun.gc(true) } : {}),
      ...(first
        ? {}
        : {
            reuse: (fingerprint: string) => {
              const pubkey = known.get(fingerprint);
              return pubkey !== undefined && present(pubkey) === "this" ? pubkey : undefined;
            },
          }),
    });
    if (first) {
      this.#cache = result.cache;
      this.#cacheDeferred = options.cachePath !== undefined && result.cache === undefined;
      this.#loaded = true;
    }
    const all = [...result.keys, ...result.reused];
    // Keys per descriptor file: only asked for with a writer (and then made once).
    let perFile: Map<string, number> | undefined;
    const keysIn = (file: string): number => {
      if (perFile === undefined) {
        perFile = new Map();
        for (const { file } of all) {
          const path = resolve(file);
          perFile.set(path, (perFile.get(path) ?? 0) + 1);
        }
      }
      return perFile.get(resolve(file)) ?? 0;
    };
    const elsewhere = new Map<string, string>();
    for (const failure of result.failures)
      if (failure.pubkey) elsewhere.set(failure.pubkey, failure.file);
    const readonly = (pubkey: string, file: string): string | undefined => {
      if (!this.writer?.manages(file, pubkey)) return NOT_A_KEY_MANAGER_FILE;
      if (keysIn(file) > 1) return "its descriptor file holds other keys too";
      const other = elsewhere.get(pubkey);
      if (other !== undefined) return `another descriptor describes it too (${other})`;
      return undefined;
    };
    const keys: SnapshotKey[] = [
      ...result.keys.map(({ pubkey, key, file }) => ({
        pubkey,
        key,
        readonly: readonly(pubkey, file),
      })),
      ...result.reused.map(({ pubkey, file }) => ({ pubkey, readonly: readonly(pubkey, file) })),
    ];
    const next = new Map<string, string>();
    for (const { fingerprint, pubkey } of all) next.set(fingerprint, pubkey);
    // Keys no descriptor holds any more leave the cache.
    if (!first && this.#cache) {
      const still = new Set(next.values());
      for (const pubkey of new Set(known.values()))
        if (!still.has(pubkey)) this.#cache.drop(pubkey);
      this.#cache.flush();
    }
    this.#fingerprints = next;
    return {
      keys,
      failures: result.failures.map(({ file, reason }) => ({ where: file, reason })),
    };
  }

  /**
   * The cache imported keystores are sealed into: the open one, or, when the first load had no
   * keystore to make one from, one made now from these keystores' passwords (once: imports that
   * come meanwhile wait for it). What the cache's open says (a file there that is not a cache, a
   * stale one) is logged as at start-up.
   */
  #cacheFor(keystores: readonly CacheKeystore[]): Promise<KeystoreCache | undefined> {
    const path = this.options.cachePath;
    if (this.#cache || !this.#cacheDeferred || path === undefined || keystores.length === 0)
      return this.#opening ?? Promise.resolve(this.#cache);
    this.#opening ??= (async () => {
      const { logger } = this.options;
      try {
        const cache = await openKeystoreCache({ path, keystores, logger });
        cache?.finish({ keepOpen: true });
        if (cache) logger.info("keystore cache", { path, state: cache.state, made_by: "import" });
        this.#cache = cache;
        return cache;
      } finally {
        this.#cacheDeferred = false;
        this.#opening = undefined;
      }
    })();
    return this.#opening;
  }

  /** Wipes the keystore cache's keys (the signer stops). */
  close(): void {
    this.#cache?.close();
  }
}
