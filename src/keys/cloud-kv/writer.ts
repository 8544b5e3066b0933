import { availableParallelism } from "node:os";
import type { SlashingStore } from "../../antislashing/store";
import type { BlsBackend, BlsSecretKey } from "../../bls/backend";
import { SigilError } from "../../errors";
import type { Logger } from "../../observability/log";
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
} from "../import-request";
import type { KeyStore } from "../key-store";
import { KeyedLock } from "../keyed-lock";
import { keystoreFailureReason } from "../keystore";
import { openImportedKeystore } from "../keystore-import";
import { createSemaphore } from "../semaphore";
import { deleteWithHistory, importHistory } from "../slashing-history";
import { sealSecret } from "./sealed-secret";
import type { CloudKvTable } from "./table";

export interface CloudKvWriterDeps {
  readonly table: CloudKvTable;
  readonly keys: KeyStore;
  readonly bls: BlsBackend;
  readonly slashing: SlashingStore;
  /** The master key while unsealed. */
  readonly masterKey: () => Uint8Array | undefined;
  readonly maxItemsPerRequest: number;
  readonly maxConcurrentWrites: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

const LIMIT = "key_sources.cloud_kv.writable.max_items_per_request";

/**
 * POST and DELETE /api/v1/signer/keys: EIP-2335 keystores into the cloud_kv table (sealed under
 * the master key) and out again with their slashing history. Writes are conditional, so two
 * instances cannot overwrite each other's key; a failed item changes nothing.
 */
export class CloudKvWriter {
  readonly #lock = new KeyedLock();
  readonly #decryption = createSemaphore(availableParallelism());
  readonly #writes: ReturnType<typeof createSemaphore>;
  /** The bodies import and delete take, for this signer's item limit (the routes declare them). */
  readonly requests: {
    readonly import: ReturnType<typeof importRequest>;
    readonly delete: ReturnType<typeof deleteRequest>;
  };

  constructor(private readonly deps: CloudKvWriterDeps) {
    this.#writes = createSemaphore(deps.maxConcurrentWrites);
    this.requests = {
      import: importRequest(deps.maxItemsPerRequest, LIMIT),
      delete: deleteRequest(deps.maxItemsPerRequest, LIMIT),
    };
  }

  async import(request: ImportCommand): Promise<{ data: ItemResult<ImportStatus>[] }> {
    checkPasswords(request);
    this.requireMasterKey();
    // Slashing history first: no key may become active before its history is in the database.
    if (typeof request.slashing_protection === "string")
      await importHistory(this.deps.slashing, request.slashing_protection);
    const seen = new Set<string>();
    const data = await Promise.all(
      request.keystores.map((text, i) => this.importOne(text, request.passwords[i] ?? "", seen)),
    );
    return { data };
  }

  async delete(
    request: DeleteCommand,
  ): Promise<{ data: ItemResult<DeleteStatus>[]; slashing_protection: string }> {
    const pubkeys = deletedPubkeys(request);
    this.requireMasterKey();
    return deleteWithHistory(this.deps.slashing, pubkeys, (pubkey) =>
      this.#lock.run(pubkey, () => this.deleteOne(pubkey)),
    );
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
      const ciphertext = sealSecret(this.requireMasterKey(), pubkey, secret);
      return await this.#lock.run(pubkey, () => this.store(pubkey, key, ciphertext));
    } finally {
      secret.fill(0);
    }
  }

  private async store(
    pubkey: string,
    key: BlsSecretKey,
    ciphertext: string,
  ): Promise<ItemResult<ImportStatus>> {
    if (this.deps.keys.get(pubkey)) return { status: "duplicate" };
    const now = (this.deps.now ?? Date.now)();
    let written: boolean;
    try {
      written = await this.#writes.run(() =>
        this.deps.table.putNew({
          pubkey,
          ciphertext,
          status: "active",
          origin: "imported",
          createdAt: now,
          updatedAt: now,
        }),
      );
    } catch (error) {
      this.deps.logger.error("cloud_kv write failed", {
        pubkey,
        error: keystoreFailureReason(error),
      });
      return {
        status: "error",
        message: "could not write the key to the cloud_kv table; nothing was imported",
      };
    }
    // Already in the table (another instance, or a status outside the filter): left as it is.
    if (!written) return { status: "duplicate" };
    this.deps.keys.add({ pubkey, key, source: "cloud_kv", readonly: false });
    this.deps.logger.info("key imported into cloud_kv", { pubkey });
    return { status: "imported" };
  }

  private async deleteOne(pubkey: string): Promise<ItemResult<DeleteStatus>> {
    const entry = this.deps.keys.get(pubkey);
    if (entry && entry.source !== "cloud_kv") {
      return {
        status: "error",
        message: `key is from the ${entry.source} source, not cloud_kv; nothing was deleted`,
      };
    }
    let deleted: boolean;
    try {
      // The item goes first, so no refresh can bring the key back.
      deleted = await this.#writes.run(() => this.deps.table.delete(pubkey));
    } catch (error) {
      this.deps.logger.error("cloud_kv delete failed", {
        pubkey,
        error: keystoreFailureReason(error),
      });
      return {
        status: "error",
        message: "could not delete the key from the cloud_kv table; the key stays active",
      };
    }
    const wasLoaded = this.deps.keys.remove(pubkey);
    if (!deleted && !wasLoaded) return { status: "not_found" };
    this.deps.logger.info("key deleted from cloud_kv", { pubkey });
    return { status: "deleted" };
  }

  private requireMasterKey(): Uint8Array {
    const key = this.deps.masterKey();
    if (!key)
      throw new SigilError("sealed", "the signer is sealed: cloud_kv keys cannot be written");
    return key;
  }
}
