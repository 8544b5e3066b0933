import { resolve } from "node:path";
import type { FutureBound } from "../antislashing/future";
import type { SlashingStore } from "../antislashing/store";
import type { BlsBackend } from "../bls/backend";
import type { Config } from "../config/schema";
import { KeyService, type LoadSummary } from "../keys/key-service";
import type { KeyStore } from "../keys/key-store";
import { KeyReloader } from "../keys/reload";
import { FilesystemSource } from "../keys/sources/filesystem";
import type { KeySource } from "../keys/sources/source";
import type { CheckResult } from "../observability/health";
import type { Logger } from "../observability/log";

export interface KeyWiring {
  readonly service: KeyService;
  readonly filesystem: FilesystemSource;
  /** POST /reload and SIGHUP. */
  readonly reloader: KeyReloader;
  /** Web3Signer's convention: DOWN when any configured key failed to load (at the last load). */
  health(): CheckResult;
  close(): void;
}

/**
 * The key sources and the one key service over them: the filesystem source (with the Key
 * Manager API's keystore files as its writer when the API is enabled), any other source the
 * caller built (cloud_kv), and the first load of the filesystem keys. `onLoad` sees every load
 * of every source (metrics). A reload reads the filesystem paths, and cloud_kv while unsealed.
 */
export async function wireKeys(
  config: Config,
  deps: {
    keys: KeyStore;
    bls: BlsBackend;
    slashing: SlashingStore;
    /** `antislashing.max_future_epochs`, for imported history; absent: no bound. */
    futureBound?: FutureBound;
    logger: Logger;
    /** Sources built elsewhere (cloud_kv), in the order a reload reads them after the filesystem. */
    others: readonly KeySource[];
    onLoad: (summary: LoadSummary) => void;
  },
): Promise<KeyWiring> {
  const settings = config.key_sources.filesystem;
  const log = deps.logger.child("keys");
  const filesystem = new FilesystemSource({
    paths: settings.paths,
    keystoreConcurrency: settings.keystore_load_concurrency,
    rawConcurrency: settings.raw_load_concurrency,
    bls: deps.bls,
    logger: log,
    // Relative to the working directory, like antislashing.path.
    ...(settings.cache.enabled ? { cachePath: resolve(settings.cache.path) } : {}),
    keyManager: config.key_sources.key_manager_api.enabled,
  });
  const service = new KeyService({
    keys: deps.keys,
    bls: deps.bls,
    slashing: deps.slashing,
    ...(deps.futureBound ? { futureBound: deps.futureBound } : {}),
    sources: [filesystem, ...deps.others],
    logger: log,
  });
  const load = async (source: KeySource) => {
    const summary = await service.load(source.name);
    deps.onLoad(summary);
    return summary;
  };
  filesystem.writer?.recoverInterruptedImports();
  await load(filesystem);
  const reloader = new KeyReloader(
    [filesystem, ...deps.others].map((source) => ({
      name: source.name,
      run: async () => {
        // A sealed signer has no cloud_kv to read: the next unseal loads it.
        if (!source.ready()) return undefined;
        const summary = await load(source);
        log.info("key source reloaded", {
          source: source.name,
          loaded: summary.loaded,
          added: summary.added,
          replaced: summary.replaced,
          removed: summary.removed,
          failed: summary.failures.length,
        });
        return { failed: summary.failures.length };
      },
    })),
    log,
    // A reload lets go of keys and of everything it read at once: one full collection right
    // after keeps memory at its steady state instead of a sawtooth until the runtime collects
    // (docs/keys.md#reload has the figures). It blocks the event loop for a few milliseconds.
    () => Bun.gc(true),
  );
  return {
    service,
    filesystem,
    reloader,
    health: () => keysHealth(service, deps.keys, deps.others.length > 0),
    close: () => filesystem.close(),
  };
}

function keysHealth(service: KeyService, keys: KeyStore, cloudKv: boolean): CheckResult {
  const failed = (name: "filesystem" | "cloud_kv") => service.lastLoad(name)?.failures.length ?? 0;
  const cloud: Record<string, number> = cloudKv
    ? { cloud_kv_loaded: keys.count("cloud_kv"), cloud_kv_failed: failed("cloud_kv") }
    : {};
  return {
    status: failed("filesystem") > 0 || (cloudKv && failed("cloud_kv") > 0) ? "DOWN" : "UP",
    data: {
      filesystem_loaded: keys.count("filesystem"),
      filesystem_failed: failed("filesystem"),
      ...cloud,
    },
  };
}
