import { resolve } from "node:path";
import type { SlashingStore } from "../antislashing/store";
import type { AuthMode } from "../auth/authenticator";
import type { BlsBackend } from "../bls/backend";
import type { Config } from "../config/schema";
import type { Route } from "../http/route";
import { keyManagerRoutes } from "../http/routes/keymanager";
import { KeyManagerService } from "../keys/key-manager";
import type { KeyStore } from "../keys/key-store";
import type { KeystoreCache } from "../keys/keystore-cache";
import type { Logger } from "../observability/log";
import { JobLimiter } from "../signing/limiter";

/** The Key Manager API's routes, each with its limits, or none when it is disabled. */
export interface KeyManagerWiring {
  routes: Route[];
}

export function wireKeyManager(
  config: Config,
  deps: {
    keys: KeyStore;
    bls: BlsBackend;
    store: SlashingStore;
    logger: Logger;
    authMode: AuthMode;
    keystoreCache?: KeystoreCache;
  },
): KeyManagerWiring {
  const km = config.key_sources.key_manager_api;
  if (!km.enabled) return { routes: [] };
  const service = new KeyManagerService({
    keys: deps.keys,
    bls: deps.bls,
    slashing: deps.store,
    directory: resolve(config.key_sources.filesystem.paths[0] ?? ""),
    maxItemsPerRequest: km.max_items_per_request,
    logger: deps.logger.child("keymanager"),
    ...(deps.keystoreCache ? { cache: deps.keystoreCache } : {}),
  });
  // Beyond the concurrency limit as many again may wait; more get 503 queue_full.
  const reads = new JobLimiter({
    maxConcurrent: km.max_concurrent_reads,
    maxQueued: km.max_concurrent_reads,
  });
  const writes = new JobLimiter({
    maxConcurrent: km.max_concurrent_writes,
    maxQueued: km.max_concurrent_writes,
  });
  if (deps.authMode === "none")
    deps.logger
      .child("app")
      .warn(
        "Key Manager API enabled without auth: anyone who can reach the signing port can import and delete keys",
      );
  service.recoverInterruptedImports();
  return {
    routes: keyManagerRoutes(service, {
      reads,
      writes,
      timeoutMs: km.request_timeout_seconds * 1000,
      maxBodyBytes: km.max_request_body_bytes,
    }),
  };
}
