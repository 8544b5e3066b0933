import { readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import type { SlashingStore } from "../antislashing/store";
import { type Principal, visibleKeys } from "../auth/authenticator";
import type { BlsBackend } from "../bls/backend";
import type { Logger } from "../observability/log";
import { readCacheKeystore } from "./filesystem";
import {
  checkPasswords,
  type DeleteCommand,
  type DeleteStatus,
  deletedPubkeys,
  deleteRequest,
  type ImportCommand,
  type ImportStatus,
  type ItemResult,
  importRequest,
} from "./import-request";
import type { KeyStore } from "./key-store";
import { KeyedLock } from "./keyed-lock";
import { keystoreFailureReason } from "./keystore";
import type { KeystoreCache } from "./keystore-cache";
import { openImportedKeystore } from "./keystore-import";
import { removeFilesDurably, removeLeftoverTemporaries, writeFileAtomic } from "./persist";
import { createSemaphore } from "./semaphore";
import { deleteWithHistory, importHistory } from "./slashing-history";

/** The keystore and password files persist() writes: `<pubkey>.json`, `<pubkey>.password`. */
const KEY_MANAGER_FILE = /^0x[0-9a-f]{96}\.(json|password)$/;

export interface KeyManagerDeps {
  keys: KeyStore;
  bls: BlsBackend;
  slashing: SlashingStore;
  /** The first filesystem path: imports are written here, and only keys from here may be deleted. */
  directory: string;
  maxItemsPerRequest: number;
  logger: Logger;
  /** The open keystore cache: imports are sealed into it and deletes dropped from it. */
  cache?: Pick<KeystoreCache, "add" | "drop" | "flush">;
}

/** Why an imported keystore stays out of the cache until the next start-up rebuilds it. */
const NOT_CACHED = {
  new_password: "its password is not one the cache was made with",
  costlier_kdf: "its scrypt costs more than the cache's",
} as const;

const LIMIT = "key_manager_api.max_items_per_request";

/** The Ethereum Key Manager API's keystore operations over the key store and slashing database. */
export class KeyManagerService {
  // Imports and deletes of the same key never interleave.
  readonly #lock = new KeyedLock();
  readonly #decryption = createSemaphore(availableParallelism());
  /** The bodies import and delete take, for this signer's item limit (the routes declare them). */
  readonly requests: {
    readonly import: ReturnType<typeof importRequest>;
    readonly delete: ReturnType<typeof deleteRequest>;
  };

  constructor(private readonly deps: KeyManagerDeps) {
    this.requests = {
      import: importRequest(deps.maxItemsPerRequest, LIMIT),
      delete: deleteRequest(deps.maxItemsPerRequest, LIMIT),
    };
  }

  /**
   * After a crash mid-import: temporaries are removed (they may hold a password); a keystore or
   * password file of ours without its descriptor (the descriptor is written last) is named in a
   * warning but kept, since an operator's own descriptor might point at it. A re-import of the
   * key overwrites it.
   */
  recoverInterruptedImports(): void {
    const { directory, logger } = this.deps;
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

  /** The keys the caller may see (list_keys is evaluated per key). */
  list(
    principal: Principal,
  ): { validating_pubkey: string; derivation_path?: string; readonly: boolean }[] {
    return visibleKeys(principal, "list_keys", this.deps.keys.pubkeys()).map((pubkey) => {
      const entry = this.deps.keys.get(pubkey);
      return { validating_pubkey: pubkey, readonly: entry?.readonly ?? true };
    });
  }

  async import(request: ImportCommand): Promise<{ data: ItemResult<ImportStatus>[] }> {
    checkPasswords(request);
    // Slashing history first: no key may become active before its history is in the database.
    if (typeof request.slashing_protection === "string")
      await importHistory(this.deps.slashing, request.slashing_protection);
    const seen = new Set<string>();
    const data = await Promise.all(
      request.keystores.map((text, i) => this.importOne(text, request.passwords[i] ?? "", seen)),
    );
    // One write of the cache for the whole request.
    this.deps.cache?.flush();
    return { data };
  }

  async delete(
    request: DeleteCommand,
  ): Promise<{ data: ItemResult<DeleteStatus>[]; slashing_protection: string }> {
    const pubkeys = deletedPubkeys(request);
    try {
      return await deleteWithHistory(this.deps.slashing, pubkeys, (pubkey) =>
        this.#lock.run(pubkey, () => this.deleteOne(pubkey)),
      );
    } finally {
      this.deps.cache?.flush();
    }
  }

  private async importOne(
    text: string,
    password: string,
    seen: Set<string>,
  ): Promise<ItemResult<ImportStatus>> {
    const opened = await openImportedKeystore(text, password, {
      keys: this.deps.keys,
      bls: this.deps.bls,
      decryption: this.#decryption,
      seen,
    });
    if (!opened.ok) return opened.result;
    const { pubkey, key, secret } = opened;
    try {
      return await this.#lock.run(pubkey, async () => {
        if (this.deps.keys.get(pubkey)) return { status: "duplicate" as const };
        try {
          this.persist(pubkey, text, password);
        } catch (error) {
          this.deps.logger.error("could not write an imported keystore", {
            pubkey,
            error: keystoreFailureReason(error),
          });
          return {
            status: "error" as const,
            message: `could not write the keystore to ${this.deps.directory}`,
          };
        }
        this.deps.keys.add({ pubkey, key, source: "filesystem", readonly: false });
        this.deps.logger.info("keystore imported", { pubkey });
        await this.sealIntoCache(pubkey, secret);
        return { status: "imported" as const };
      });
    } finally {
      // Past this point the files on disk hold the keystore; the decrypted secret is not needed.
      secret.fill(0);
    }
  }

  /**
   * Seals the imported key into the keystore cache, identified as the next start-up will read its
   * files, so that start-up needs no KDF for it. Never fails the import: the key is imported.
   */
  private async sealIntoCache(pubkey: string, secret: Uint8Array): Promise<void> {
    const { cache, logger } = this.deps;
    if (cache === undefined) return;
    const files = this.filesOf(pubkey);
    try {
      const keystore = await readCacheKeystore(files.keystore, files.password);
      try {
        const result = cache.add(keystore, pubkey, secret);
        if (result !== "sealed")
          logger.warn(
            "imported keystore not in the keystore cache: the next start-up decrypts every keystore to rebuild it",
            { pubkey, reason: NOT_CACHED[result] },
          );
      } finally {
        keystore.password.fill(0);
      }
    } catch (error) {
      logger.warn("imported keystore not in the keystore cache: the next start-up decrypts it", {
        pubkey,
        reason: keystoreFailureReason(error),
      });
    }
  }

  /** Keystore and password first, the descriptor last: without a descriptor nothing is loaded. */
  private persist(pubkey: string, keystoreText: string, password: string): void {
    const paths = this.filesOf(pubkey);
    writeFileAtomic(paths.keystore, keystoreText);
    writeFileAtomic(paths.password, password);
    writeFileAtomic(
      paths.descriptor,
      [
        "# Imported through the Key Manager API; deleting the key through the API removes these files.",
        "type: file-keystore",
        "keyType: BLS",
        `keystoreFile: ${pubkey}.json`,
        `keystorePasswordFile: ${pubkey}.password`,
        "",
      ].join("\n"),
    );
  }

  private filesOf(pubkey: string) {
    const base = join(this.deps.directory, pubkey);
    return { descriptor: `${base}.yaml`, keystore: `${base}.json`, password: `${base}.password` };
  }

  private async deleteOne(pubkey: string): Promise<ItemResult<DeleteStatus>> {
    const entry = this.deps.keys.get(pubkey);
    if (!entry) return { status: "not_found" };
    if (entry.readonly)
      return {
        status: "error",
        message:
          "key is read-only: its descriptor is not a Key Manager file (<pubkey>.yaml in the first key directory)",
      };
    const files = this.filesOf(pubkey);
    try {
      // The descriptor goes first, so the key cannot come back at the next start-up.
      removeFilesDurably([files.descriptor]);
    } catch (error) {
      this.deps.logger.error("could not delete a key descriptor", {
        pubkey,
        error: keystoreFailureReason(error),
      });
      return { status: "error", message: "could not delete the key's files; the key stays active" };
    }
    this.deps.keys.remove(pubkey);
    this.deps.cache?.drop(pubkey);
    try {
      removeFilesDurably([files.keystore, files.password]);
    } catch (error) {
      this.deps.logger.warn("key deleted, but its keystore files remain", {
        pubkey,
        error: keystoreFailureReason(error),
      });
    }
    this.deps.logger.info("key deleted", { pubkey });
    return { status: "deleted" };
  }
}
