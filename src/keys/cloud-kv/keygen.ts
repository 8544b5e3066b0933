import type { BlsBackend } from "../../bls/backend";
import { SigilError } from "../../errors";
import type { Logger } from "../../observability/log";
import type { KeygenCommand } from "../import-request";
import type { KeyService } from "../key-service";
import type { NewKey } from "../sources/source";
import { encryptMnemonicBackup } from "./backup";
import { type DerivedValidatorKey, deriveValidatorKeys, newMnemonic } from "./derive";

export interface CloudKvKeygenDeps {
  readonly service: KeyService;
  readonly bls: BlsBackend;
  /** Table writes in flight (keygen.max_concurrent_keygen). */
  readonly maxConcurrentKeygen: number;
  /** Age recipients of the mnemonic backup; undefined = backup disabled (mnemonic discarded). */
  readonly backupRecipients?: readonly string[];
  readonly logger: Logger;
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
 * m/12381/3600/i/0/0 for i = 0 … count-1, written to cloud_kv (origin generated) as one batch by
 * the key service: all of them, or none (a failed write undoes the batch and the answer says
 * so). The mnemonic is never stored or logged: it is returned only as an age backup, or
 * discarded.
 */
export class CloudKvKeygen {
  constructor(private readonly deps: CloudKvKeygenDeps) {}

  async generate(command: KeygenCommand, cutoff: AbortSignal): Promise<GeneratedKeys> {
    const { count } = command;
    if (!this.deps.service.source("cloud_kv")?.ready())
      throw new SigilError("sealed", "the signer is sealed: keys cannot be generated");
    const mnemonic = newMnemonic();
    // The backup before any key exists: keys nobody could ever recover are not created.
    const backup = this.deps.backupRecipients
      ? await encryptMnemonicBackup(mnemonic, this.deps.backupRecipients)
      : undefined;
    const derived: DerivedValidatorKey[] = [];
    let handedOver = false;
    try {
      for (let start = 0; start < count; start += DERIVE_BATCH) {
        const size = Math.min(DERIVE_BATCH, count - start);
        derived.push(...deriveValidatorKeys(mnemonic, start, size, this.deps.bls));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const keys: NewKey[] = derived.map((d) => ({
        pubkey: d.pubkey,
        key: d.key,
        secret: d.secretKey,
        origin: "generated",
      }));
      handedOver = true;
      await this.deps.service.generate("cloud_kv", keys, {
        cutoff,
        concurrency: this.deps.maxConcurrentKeygen,
      });
    } catch (error) {
      // The key service lets go of the keys it was handed; the others are let go of here.
      if (!handedOver) for (const d of derived) this.deps.bls.forget?.(d.key);
      if (error instanceof SigilError) throw error;
      this.deps.logger.error("key generation failed", {
        error: error instanceof Error ? error.message : String(error),
      });
      throw new SigilError("internal_error", "key generation failed (see the signer's log)");
    } finally {
      for (const key of derived) key.secretKey.fill(0);
    }
    this.deps.logger.info("keys generated into cloud_kv", { count, backup: backup !== undefined });
    return {
      data: derived.map((d) => ({ pubkey: d.pubkey, derivation_path: d.path })),
      ...(backup === undefined ? {} : { mnemonic_backup: backup }),
    };
  }
}
