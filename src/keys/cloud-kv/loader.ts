import type { BlsBackend } from "../../bls/backend";
import type { Logger } from "../../observability/log";
import { toHex } from "../../wire/hex";
import type { KeyStore } from "../key-store";
import { openSecret } from "./sealed-secret";
import type { CloudKvTable } from "./table";

export interface CloudKvSyncResult {
  /** Keys in the table matching the status filter that are now loaded. */
  readonly loaded: number;
  readonly added: number;
  readonly removed: number;
  /** Items skipped: malformed, not decryptable, or a pubkey that does not match its secret. */
  readonly failed: number;
  readonly reasons: readonly string[];
  readonly pages: number;
}

export interface CloudKvSyncOptions {
  readonly table: CloudKvTable;
  readonly statusFilter: readonly string[];
  readonly maxConcurrentReads: number;
  readonly masterKey: Uint8Array;
  readonly bls: BlsBackend;
  readonly keys: KeyStore;
  readonly logger: Logger;
}

/**
 * Makes the key store's cloud_kv keys equal to the table's keys in the status filter: the load at
 * unseal and every refresh. Keys already loaded are not decrypted again; keys that left the
 * filter (or the table) are removed. A key that fails is logged by pubkey and skipped.
 */
export async function syncCloudKvKeys(options: CloudKvSyncOptions): Promise<CloudKvSyncResult> {
  const { keys, logger } = options;
  const seen = new Set<string>();
  const reasons: string[] = [];
  let added = 0;
  const { pages } = await options.table.scan(
    options.statusFilter,
    options.maxConcurrentReads,
    (item) => {
      if ("malformed" in item) {
        reasons.push("malformed item");
        logger.warn("cloud_kv item skipped: malformed", { pubkey: item.malformed.slice(0, 18) });
        return;
      }
      seen.add(item.pubkey);
      const present = keys.get(item.pubkey);
      if (present) {
        if (present.source !== "cloud_kv") {
          reasons.push("duplicate across sources");
          logger.warn("cloud_kv key skipped: already loaded from another source", {
            pubkey: item.pubkey,
            source: present.source,
          });
        }
        return;
      }
      let secret: Uint8Array | undefined;
      try {
        secret = openSecret(options.masterKey, item.pubkey, item.ciphertext);
        const key = options.bls.importSecretKey(secret);
        const derived = toHex(key.publicKey);
        if (derived !== item.pubkey) throw new Error("the secret's pubkey differs from the item's");
        keys.add({ pubkey: item.pubkey, key, source: "cloud_kv", readonly: false });
        added++;
      } catch (error) {
        seen.delete(item.pubkey);
        reasons.push("decrypt failed");
        logger.warn("cloud_kv key skipped: cannot decrypt", {
          pubkey: item.pubkey,
          reason: error instanceof Error ? error.message : String(error),
        });
      } finally {
        secret?.fill(0);
      }
    },
  );
  let removed = 0;
  for (const pubkey of keys.pubkeys()) {
    if (keys.get(pubkey)?.source === "cloud_kv" && !seen.has(pubkey)) {
      keys.remove(pubkey);
      removed++;
    }
  }
  return { loaded: keys.count("cloud_kv"), added, removed, failed: reasons.length, reasons, pages };
}

/** Seal: every cloud_kv key leaves memory with the master key. */
export function dropCloudKvKeys(keys: KeyStore): number {
  let dropped = 0;
  for (const pubkey of keys.pubkeys()) {
    if (keys.get(pubkey)?.source === "cloud_kv" && keys.remove(pubkey)) dropped++;
  }
  return dropped;
}
