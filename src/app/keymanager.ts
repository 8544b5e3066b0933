import type { AuthMode } from "../auth/authenticator";
import type { Config } from "../config/schema";
import type { FeatureLimits } from "../http/route";
import { keyManagerHandlers } from "../http/routes/keymanager";
import type { Handlers } from "../http/table";
import { KeyManagerService } from "../keys/key-manager";
import type { KeyService } from "../keys/key-service";
import type { Logger } from "../observability/log";
import { JobLimiter } from "../signing/limiter";

/** The Key Manager API's handlers and limits, or none when it is disabled. */
export interface KeyManagerWiring {
  handlers?: Handlers<"listKeystores" | "importKeystores" | "deleteKeystores">;
  limits?: FeatureLimits;
}

export function wireKeyManager(
  config: Config,
  deps: { service: KeyService; logger: Logger; authMode: AuthMode },
): KeyManagerWiring {
  const km = config.key_sources.key_manager_api;
  if (!km.enabled) return {};
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
  const timeoutMs = km.request_timeout_seconds * 1000;
  return {
    handlers: keyManagerHandlers(new KeyManagerService(deps.service, { reads, writes, timeoutMs })),
    limits: {
      timeoutMs,
      maxBodyBytes: km.max_request_body_bytes,
      maxItems: km.max_items_per_request,
      maxItemsOption: "key_manager_api.max_items_per_request",
    },
  };
}
