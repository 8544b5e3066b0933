import { dirname, resolve } from "node:path";
import type { Config } from "../config/schema";
import { loadFilesystemKeys } from "../keys/filesystem";
import type { KeyStore } from "../keys/key-store";
import type { CheckResult } from "../observability/health";
import type { Logger } from "../observability/log";
import type { BlsBackend } from "../signing/bls/backend";

export interface KeyLoadSummary {
  loaded: number;
  failed: number;
  /** Why each failed key was skipped (no secrets). */
  reasons: string[];
}

/** Loads every configured key source into the store; failures are logged by the source and counted. */
export async function loadConfiguredKeys(
  config: Config,
  store: KeyStore,
  bls: BlsBackend,
  logger: Logger,
): Promise<KeyLoadSummary> {
  const { paths, keystore_load_concurrency, raw_load_concurrency } = config.key_sources.filesystem;
  if (paths.length === 0) return { loaded: 0, failed: 0, reasons: [] };
  const result = await loadFilesystemKeys({
    paths,
    keystoreConcurrency: keystore_load_concurrency,
    rawConcurrency: raw_load_concurrency,
    bls,
    logger: logger.child("keys"),
  });
  // With the Key Manager API on, keys in the first path are the ones it manages (and may delete).
  const managed = config.key_sources.key_manager_api.enabled ? resolve(paths[0] ?? "") : undefined;
  let duplicates = 0;
  for (const { pubkey, key, file } of result.keys) {
    const readonly = dirname(resolve(file)) !== managed;
    if (!store.add({ pubkey, key, source: "filesystem", readonly })) duplicates++;
  }
  const reasons = [
    ...result.failures.map((f) => f.reason),
    ...Array<string>(duplicates).fill("duplicate across sources"),
  ];
  return { loaded: result.keys.length - duplicates, failed: reasons.length, reasons };
}

/** Web3Signer's convention: the key check is DOWN when any configured key failed to load. */
export function keysHealth(summary: KeyLoadSummary, store: KeyStore): CheckResult {
  return {
    status: summary.failed > 0 ? "DOWN" : "UP",
    data: { filesystem_loaded: store.count("filesystem"), filesystem_failed: summary.failed },
  };
}
