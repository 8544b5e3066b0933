import { join, resolve } from "node:path";
import type { BlsBackend } from "../bls/backend";
import type { Config } from "../config/schema";
import { loadFilesystemKeys } from "../keys/filesystem";
import type { KeyStore } from "../keys/key-store";
import type { KeystoreCache } from "../keys/keystore-cache";
import type { CheckResult } from "../observability/health";
import type { Logger } from "../observability/log";

export interface KeyLoadSummary {
  loaded: number;
  failed: number;
  /** Why each failed key was skipped (no secrets). */
  reasons: string[];
  /** The keystore cache, open for the Key Manager API (enabled with both); closed by the caller. */
  keystoreCache?: KeystoreCache;
}

/** Loads every configured key source into the store; failures are logged by the source and counted. */
export async function loadConfiguredKeys(
  config: Config,
  store: KeyStore,
  bls: BlsBackend,
  logger: Logger,
): Promise<KeyLoadSummary> {
  const { paths, keystore_load_concurrency, raw_load_concurrency, cache } =
    config.key_sources.filesystem;
  if (paths.length === 0) return { loaded: 0, failed: 0, reasons: [] };
  const result = await loadFilesystemKeys({
    paths,
    keystoreConcurrency: keystore_load_concurrency,
    rawConcurrency: raw_load_concurrency,
    bls,
    logger: logger.child("keys"),
    // Relative to the working directory, like antislashing.path. Kept open for the Key Manager
    // API, whose imports it then holds too.
    ...(cache.enabled
      ? {
          cache: {
            path: resolve(cache.path),
            keepOpen: config.key_sources.key_manager_api.enabled,
          },
        }
      : {}),
  });
  // With the Key Manager API on, it manages exactly the keys it could have written: a
  // `<pubkey>.yaml` in the first path holding that one key. Deleting means removing that file, so
  // a key described anywhere else (another name, a shared multi-key file) is read-only: deleting
  // it could not keep it from loading again at the next start-up.
  const managed = config.key_sources.key_manager_api.enabled ? resolve(paths[0] ?? "") : undefined;
  const keysPerFile = new Map<string, number>();
  for (const { file } of result.keys)
    keysPerFile.set(resolve(file), (keysPerFile.get(resolve(file)) ?? 0) + 1);
  let duplicates = 0;
  for (const { pubkey, key, file } of result.keys) {
    const path = resolve(file);
    const deletable =
      managed !== undefined &&
      path === join(managed, `${pubkey}.yaml`) &&
      keysPerFile.get(path) === 1;
    if (!store.add({ pubkey, key, source: "filesystem", readonly: !deletable })) duplicates++;
  }
  const reasons = [
    ...result.failures.map((f) => f.reason),
    ...Array<string>(duplicates).fill("duplicate across sources"),
  ];
  return {
    loaded: result.keys.length - duplicates,
    failed: reasons.length,
    reasons,
    ...(result.cache ? { keystoreCache: result.cache } : {}),
  };
}

/** Web3Signer's convention: the key check is DOWN when any configured key failed to load. */
export function keysHealth(
  summary: KeyLoadSummary,
  store: KeyStore,
  cloudKvFailures?: readonly string[],
): CheckResult {
  const cloudKv: Record<string, number> =
    cloudKvFailures === undefined
      ? {}
      : { cloud_kv_loaded: store.count("cloud_kv"), cloud_kv_failed: cloudKvFailures.length };
  return {
    status: summary.failed > 0 || (cloudKvFailures?.length ?? 0) > 0 ? "DOWN" : "UP",
    data: {
      filesystem_loaded: store.count("filesystem"),
      filesystem_failed: summary.failed,
      ...cloudKv,
    },
  };
}
