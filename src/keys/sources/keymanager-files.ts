import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "../../observability/log";
import { NOT_CACHED, readWrittenKeystore } from "../filesystem";
import { keystoreFailureReason } from "../keystore";
import type { CacheKeystore, KeystoreCache } from "../keystore-cache";
import { removeFilesDurably, removeLeftoverTemporaries, writeFileAtomic } from "../persist";
import type { KeyWriter, NewKey } from "./source";

/** The keystore and password files `persist` writes: `<pubkey>.json`, `<pubkey>.password`. */
const KEY_MANAGER_FILE = /^0x[0-9a-f]{96}\.(json|password)$/;

export interface KeyManagerFilesOptions {
  /** The first filesystem path: imports are written here. */
  readonly directory: string;
  readonly logger: Logger;
  /** The open keystore cache, if any: deletes are dropped from it. */
  readonly cache: () => KeystoreCache | undefined;
  /**
   * The cache these imported keystores are sealed into, if any: the open one, or one made for
   * them when the cache is enabled and none exists yet.
   */
  readonly cacheFor: (keystores: readonly CacheKeystore[]) => Promise<KeystoreCache | undefined>;
  /** Told the fingerprint of each descriptor written, so that a reload keeps its key. */
  readonly written?: (pubkey: string, fingerprint: string) => void;
}

/**
 * The Key Manager API's keystore files, the writer of the filesystem source
 * (docs/keymanager.md): per key, `<pubkey>.json` (the keystore as given), `<pubkey>.password`
 * (0600) and last `<pubkey>.yaml`, the descriptor. Without its descriptor no load reads a key,
 * so `persist` writes the keystore and password and `commit` the descriptor; a removal takes the
 * descriptor first. Every file is written atomically and fsynced (persist.ts).
 */
export class KeyManagerFiles implements KeyWriter {
  /** File writes are synchronous: one key at a time. */
  readonly concurrency = 1;
  readonly readonlyReason = undefined;
  readonly directory: string;
  /** The files each persisted key's write put in place, descriptor first once committed. */
  readonly #written = new WeakMap<NewKey, string[]>();

  constructor(private readonly options: KeyManagerFilesOptions) {
    this.directory = resolve(options.directory);
  }

  /** Whether `file` is the descriptor this writer would write for `pubkey`. */
  manages(file: string, pubkey: string): boolean {
    return resolve(file) === this.#files(pubkey).descriptor;
  }

  async persist(key: NewKey): Promise<"written"> {
    if (!key.keystore) throw new Error("the Key Manager API's files hold imported keystores only");
    const files = this.#files(key.pubkey);
    const written: string[] = [];
    this.#written.set(key, written);
    writeFileAtomic(files.keystore, key.keystore.text);
    written.push(files.keystore);
    writeFileAtomic(files.password, key.keystore.password);
    written.push(files.password);
    return "written";
  }

  async commit(key: NewKey): Promise<void> {
    const { descriptor } = this.#files(key.pubkey);
    writeFileAtomic(
      descriptor,
      [
        "# Imported through the Key Manager API; deleting the key through the API removes these files.",
        "type: file-keystore",
        "keyType: BLS",
        `keystoreFile: ${key.pubkey}.json`,
        `keystorePasswordFile: ${key.pubkey}.password`,
        "",
      ].join("\n"),
    );
    this.#written.get(key)?.unshift(descriptor);
  }

  /**
   * The descriptor first (once it is gone the key cannot load again), then the keystore and the
   * password file; a failure on those two is only logged, since the key is already gone. Undoing
   * a write (`written`) removes exactly the files that write wrote, descriptor first.
   */
  async remove(pubkey: string, written?: NewKey): Promise<"removed" | "absent"> {
    if (written) {
      const files = this.#written.get(written) ?? [];
      if (files.length === 0) return "absent";
      removeFilesDurably(files);
      return "removed";
    }
    const files = this.#files(pubkey);
    const all = [files.descriptor, files.keystore, files.password];
    if (!all.some((file) => existsSync(file))) return "absent";
    removeFilesDurably([files.descriptor]);
    try {
      removeFilesDurably([files.keystore, files.password]);
    } catch (error) {
      this.options.logger.warn("key removed, but its keystore files remain", {
        pubkey,
        error: keystoreFailureReason(error),
      });
    }
    return "removed";
  }

  /**
   * Seals the imported keys into the keystore cache, identified as the next start-up will read
   * their files, so that start-up needs no KDF for them. Never fails: the keys are imported.
   */
  async committed(keys: readonly NewKey[]): Promise<void> {
    const { logger, written } = this.options;
    const reads: { pubkey: string; secret: Uint8Array; cache: CacheKeystore }[] = [];
    for (const { pubkey, secret } of keys) {
      const files = this.#files(pubkey);
      try {
        const read = await readWrittenKeystore(files.descriptor, files.keystore, files.password);
        written?.(pubkey, read.fingerprint);
        reads.push({ pubkey, secret, cache: read.cache });
      } catch (error) {
        if (this.options.cache())
          logger.warn(
            "imported keystore not in the keystore cache: the next start-up decrypts it",
            {
              pubkey,
              reason: keystoreFailureReason(error),
            },
          );
      }
    }
    try {
      const cache = await this.options.cacheFor(reads.map((r) => r.cache));
      for (const { pubkey, secret, cache: keystore } of reads) {
        const result = cache?.add(keystore, pubkey, secret);
        if (result !== undefined && result !== "sealed")
          logger.warn(
            "imported keystore not in the keystore cache: the next start-up decrypts every keystore to rebuild it",
            { pubkey, reason: NOT_CACHED[result] },
          );
      }
      // One write of the cache for the whole request.
      cache?.flush();
    } catch (error) {
      logger.warn("imported keystores not in the keystore cache: the next start-up decrypts them", {
        reason: keystoreFailureReason(error),
      });
    } finally {
      for (const read of reads) read.cache.password.fill(0);
    }
  }

  removed(pubkeys: readonly string[]): void {
    const cache = this.options.cache();
    if (!cache) return;
    for (const pubkey of pubkeys) cache.drop(pubkey);
    cache.flush();
  }

  /**
   * After a crash mid-import: temporaries are removed (they may hold a password); a keystore or
   * password file of ours without its descriptor (the descriptor is written last) is named in a
   * warning but kept, since an operator's own descriptor might point at it. A re-import of the
   * key overwrites it.
   */
  recoverInterruptedImports(): void {
    const { logger } = this.options;
    const directory = this.directory;
    const removed = removeLeftoverTemporaries(directory);
    if (removed.length > 0)
      logger.warn("removed files left by an interrupted write", {
        directory,
        files: removed.join(", "),
      });
    let names: Set<string>;
    try {
      names = new Set(readdirSync(directory));
    } catch {
      return;
    }
    const orphans = [...names]
      .filter((name) => KEY_MANAGER_FILE.test(name))
      .filter((name) => !names.has(`${name.slice(0, name.lastIndexOf("."))}.yaml`))
      .sort();
    if (orphans.length > 0)
      logger.warn("keystore files without their descriptor (an import was interrupted?)", {
        directory,
        files: orphans.join(", "),
      });
  }

  #files(pubkey: string) {
    const base = join(this.directory, pubkey);
    return { descriptor: `${base}.yaml`, keystore: `${base}.json`, password: `${base}.password` };
  }
}
