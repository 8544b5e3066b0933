import type { BlsBackend } from "../../bls/backend";
import { SigilError } from "../../errors";
import type { Logger } from "../../observability/log";
import { type KeygenCommand, keygenRequest } from "../import-request";
import type { KeyStore } from "../key-store";
import { createSemaphore } from "../semaphore";
import { encryptMnemonicBackup } from "./backup";
import { type DerivedValidatorKey, deriveValidatorKeys, newMnemonic } from "./derive";
import { sealSecret } from "./sealed-secret";
import type { CloudKvTable } from "./table";

export interface CloudKvKeygenDeps {
  readonly table: CloudKvTable;
  readonly keys: KeyStore;
  readonly bls: BlsBackend;
  readonly masterKey: () => Uint8Array | undefined;
  readonly maxItemsPerRequest: number;
  readonly maxConcurrentKeygen: number;
  /** Age recipients of the mnemonic backup; undefined = backup disabled (mnemonic discarded). */
  readonly backupRecipients?: readonly string[];
  readonly logger: Logger;
  readonly now?: () => number;
}

export interface GeneratedKeys {
  readonly data: { pubkey: string; derivation_path: string }[];
  /** Armored age file of the mnemonic, when backup is enabled. */
  readonly mnemonic_backup?: string;
}

/** Keys derived per batch; between batches the event loop serves signing requests. */
const DERIVE_BATCH = 32;

/**
 * POST /api/v1/signer/keys/generate: a fresh BIP-39 mnemonic, EIP-2333/2334 keys
 * m/12381/3600/i/0/0 for i = 0 … count-1, each sealed under the master key and written as a new
 * item (origin generated). The mnemonic is never stored or logged: it is returned only as an age
 * backup, or discarded. A failure removes what this request wrote, so it changes nothing.
 */
export class CloudKvKeygen {
  readonly #writes: ReturnType<typeof createSemaphore>;
  /** The body generate takes, for this signer's item limit (the route declares it). */
  readonly request: ReturnType<typeof keygenRequest>;

  constructor(private readonly deps: CloudKvKeygenDeps) {
    this.#writes = createSemaphore(deps.maxConcurrentKeygen);
    this.request = keygenRequest(
      deps.maxItemsPerRequest,
      "key_sources.cloud_kv.keygen.max_items_per_request",
    );
  }

  async generate(command: KeygenCommand): Promise<GeneratedKeys> {
    const { count } = command;
    const masterKey = this.deps.masterKey();
    if (!masterKey)
      throw new SigilError("sealed", "the signer is sealed: keys cannot be generated");
    const mnemonic = newMnemonic();
    // The backup before any key exists: keys nobody could ever recover are not created.
    const backup = this.deps.backupRecipients
      ? await encryptMnemonicBackup(mnemonic, this.deps.backupRecipients)
      : undefined;
    const written: string[] = [];
    try {
      for (let start = 0; start < count; start += DERIVE_BATCH) {
        const batch = deriveValidatorKeys(
          mnemonic,
          start,
          Math.min(DERIVE_BATCH, count - start),
          this.deps.bls,
        );
        try {
          await Promise.all(batch.map((key) => this.store(masterKey, key, written)));
        } finally {
          for (const key of batch) key.secretKey.fill(0);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      await this.rollBack(written);
      if (error instanceof SigilError) throw error;
      this.deps.logger.error("key generation failed; keys written by this request were removed", {
        error: error instanceof Error ? error.message : String(error),
        removed: written.length,
      });
      throw new SigilError(
        "internal_error",
        "key generation failed (see the signer's log); no key was kept",
      );
    }
    this.deps.logger.info("keys generated into cloud_kv", { count, backup: backup !== undefined });
    return {
      data: written.map((pubkey, index) => ({
        pubkey,
        derivation_path: `m/12381/3600/${index}/0/0`,
      })),
      ...(backup === undefined ? {} : { mnemonic_backup: backup }),
    };
  }

  private async store(
    masterKey: Uint8Array,
    derived: DerivedValidatorKey,
    written: string[],
  ): Promise<void> {
    const now = (this.deps.now ?? Date.now)();
    const item = {
      pubkey: derived.pubkey,
      ciphertext: sealSecret(masterKey, derived.pubkey, derived.secretKey),
      status: "active",
      origin: "generated" as const,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await this.#writes.run(() => this.deps.table.putNew(item))))
      throw new Error(`generated pubkey ${derived.pubkey} already exists in the table`);
    written[derived.index] = derived.pubkey;
    this.deps.keys.add({
      pubkey: derived.pubkey,
      key: derived.key,
      source: "cloud_kv",
      readonly: false,
    });
  }

  private async rollBack(written: readonly string[]): Promise<void> {
    for (const pubkey of written) {
      if (!pubkey) continue;
      this.deps.keys.remove(pubkey);
      await this.deps.table.delete(pubkey).catch((error: unknown) => {
        this.deps.logger.error(
          "could not remove a generated key after a failure; delete it by hand",
          {
            pubkey,
            error: error instanceof Error ? error.message : String(error),
          },
        );
      });
    }
  }
}
