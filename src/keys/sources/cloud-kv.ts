import type { BlsBackend } from "../../bls/backend";
import { SigilError } from "../../errors";
import type { Logger } from "../../observability/log";
import { toHex } from "../../wire/hex";
import { openSecret, sealSecret } from "../cloud-kv/sealed-secret";
import { type CloudKvTable, WRITING_STATUS } from "../cloud-kv/table";
import type {
  KeySource,
  KeyWriter,
  LoadFailure,
  NewKey,
  SnapshotKey,
  SourceSnapshot,
} from "./source";

export interface CloudKvSourceOptions {
  readonly table: CloudKvTable;
  readonly statusFilter: readonly string[];
  readonly maxConcurrentReads: number;
  readonly bls: BlsBackend;
  /** The master key while unsealed. */
  readonly masterKey: () => Uint8Array | undefined;
  readonly logger: Logger;
  /** With keygen or writable: how writes run. */
  readonly writes?: {
    readonly concurrency: number;
    /** Whether the Key Manager API may delete cloud_kv keys (`writable.enabled`). */
    readonly deletable: boolean;
    readonly now?: () => number;
  };
}

const NOT_DELETABLE =
  "cloud_kv keys are deleted through the API only with key_sources.cloud_kv.writable.enabled";

/**
 * The cloud_kv table as a key source (docs/cloud-kv.md): items whose status is in status_filter,
 * each secret sealed under the master key, so the source is ready only while unsealed. A load
 * scans the table and opens only the items not held already.
 */
export class CloudKvSource implements KeySource {
  readonly name = "cloud_kv" as const;
  readonly writer?: CloudKvWriter;
  readonly #statuses: readonly string[];

  constructor(private readonly options: CloudKvSourceOptions) {
    // An item being written is never loaded, whatever the filter says.
    this.#statuses = options.statusFilter.filter((status) => status !== WRITING_STATUS);
    if (options.writes) this.writer = new CloudKvWriter(options, options.writes);
  }

  ready(): boolean {
    return this.options.masterKey() !== undefined;
  }

  async load(present: (pubkey: string) => "this" | "other" | undefined): Promise<SourceSnapshot> {
    const { table, logger, bls } = this.options;
    const masterKey = this.options.masterKey();
    if (!masterKey) throw new SigilError("sealed", "the signer is sealed: cloud_kv is closed");
    const readonly = this.options.writes?.deletable ? undefined : NOT_DELETABLE;
    const keys: SnapshotKey[] = [];
    const failures: LoadFailure[] = [];
    if (this.#statuses.length === 0) return { keys, failures };
    await table.scan(this.#statuses, this.options.maxConcurrentReads, (item) => {
      if ("malformed" in item) {
        failures.push({ where: item.malformed.slice(0, 18), reason: "malformed item" });
        logger.warn("cloud_kv item skipped: malformed", { pubkey: item.malformed.slice(0, 18) });
        return;
      }
      const { pubkey } = item;
      // Held already (or by another source: the key service counts the duplicate).
      if (present(pubkey) !== undefined) {
        keys.push({ pubkey, readonly });
        return;
      }
      let secret: Uint8Array | undefined;
      try {
        secret = openSecret(masterKey, pubkey, item.ciphertext);
        const key = bls.importSecretKey(secret);
        if (toHex(key.publicKey) !== pubkey) {
          bls.forget?.(key);
          throw new Error("the secret's pubkey differs from the item's");
        }
        keys.push({ pubkey, key, readonly });
      } catch (error) {
        failures.push({ where: pubkey, reason: "decrypt failed" });
        logger.warn("cloud_kv key skipped: cannot decrypt", {
          pubkey,
          reason: error instanceof Error ? error.message : String(error),
        });
      } finally {
        secret?.fill(0);
      }
    });
    return { keys, failures };
  }
}

/**
 * Writes cloud_kv items. `persist` puts a new item (a conditional write: never over an existing
 * pubkey) with status `sigil_writing`, which no load picks up; `commit` sets it to `active`;
 * undoing a write deletes the item only if it still holds this write's ciphertext.
 */
class CloudKvWriter implements KeyWriter {
  readonly concurrency: number;
  readonly readonlyReason: string | undefined;
  /** The ciphertext each persisted key was written with, to undo exactly that write. */
  readonly #written = new WeakMap<NewKey, string>();

  constructor(
    private readonly options: CloudKvSourceOptions,
    private readonly writes: NonNullable<CloudKvSourceOptions["writes"]>,
  ) {
    this.concurrency = writes.concurrency;
    this.readonlyReason = writes.deletable ? undefined : NOT_DELETABLE;
  }

  async persist(key: NewKey): Promise<"written" | "exists"> {
    const masterKey = this.options.masterKey();
    if (!masterKey)
      throw new SigilError("sealed", "the signer is sealed: cloud_kv keys cannot be written");
    const now = this.#now();
    const ciphertext = sealSecret(masterKey, key.pubkey, key.secret);
    this.#written.set(key, ciphertext);
    const written = await this.options.table.putNew({
      pubkey: key.pubkey,
      ciphertext,
      status: WRITING_STATUS,
      origin: key.origin,
      createdAt: now,
      updatedAt: now,
    });
    return written ? "written" : "exists";
  }

  async commit(key: NewKey): Promise<void> {
    if (!(await this.options.table.setStatus(key.pubkey, WRITING_STATUS, "active", this.#now())))
      throw new Error("the item changed while it was written (deleted, or its status set)");
  }

  async remove(pubkey: string, written?: NewKey): Promise<"removed" | "absent"> {
    const { table } = this.options;
    const ciphertext = written ? this.#written.get(written) : undefined;
    if (written && ciphertext === undefined) return "absent";
    return (await table.delete(pubkey, ciphertext)) ? "removed" : "absent";
  }

  #now(): number {
    return (this.writes.now ?? Date.now)();
  }
}
