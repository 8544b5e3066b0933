import type { AuthMode } from "../auth/authenticator";
import type { Config } from "../config/schema";
import type { Route } from "../http/route";
import { keyManagerRoutes } from "../http/routes/keymanager";
import { deleteRequest, importRequest } from "../keys/import-request";
import type { KeyService } from "../keys/key-service";
import type { Logger } from "../observability/log";
import { JobLimiter } from "../signing/limiter";

/** The Key Manager API's routes, each with its limits, or none when it is disabled. */
export interface KeyManagerWiring {
  routes: Route[];
}

const LIMIT = "key_manager_api.max_items_per_request";

export function wireKeyManager(
  config: Config,
  deps: { service: KeyService; logger: Logger; authMode: AuthMode },
): KeyManagerWiring {
  const km = config.key_sources.key_manager_api;
  if (!km.enabled) return { routes: [] };
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
  return {
    routes: keyManagerRoutes(deps.service, {
      reads,
      writes,
      timeoutMs: km.request_timeout_seconds * 1000,
      maxBodyBytes: km.max_request_body_bytes,
      requests: {
        import: importRequest(km.max_items_per_request, LIMIT),
        delete: deleteRequest(km.max_items_per_request, LIMIT),
      },
    }),
  };
}
