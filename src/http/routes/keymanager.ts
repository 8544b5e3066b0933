import type { KeyManagerService } from "../../keys/key-manager";
import type { JobLimiter } from "../../signing/limiter";
import { route } from "../route";

export const KEYSTORES_PATH = "/eth/v1/keystores";

export interface KeyManagerRouteSettings {
  readonly reads: JobLimiter;
  readonly writes: JobLimiter;
  /** key_sources.key_manager_api.request_timeout_seconds, in ms. */
  readonly timeoutMs: number;
  /** key_sources.key_manager_api.max_request_body_bytes. */
  readonly maxBodyBytes: number;
}

/**
 * The Key Manager API's keystore routes. GET and DELETE share the read limit and POST has the
 * write limit, as the spec's max_concurrent_reads / max_concurrent_writes say.
 */
export function keyManagerRoutes(service: KeyManagerService, settings: KeyManagerRouteSettings) {
  const { reads, writes, timeoutMs, maxBodyBytes } = settings;
  const limits = { servedWhileSealed: false, timeoutMs, maxBodyBytes } as const;
  return [
    route({
      method: "GET",
      path: KEYSTORES_PATH,
      access: { kind: "per_key", scope: "list_keys" },
      ...limits,
      handle: async ({ meta }, caller) => {
        const principal = await caller.authenticate();
        return reads.run(() => ({ data: service.list(principal) }), meta.deadline);
      },
    }),
    route({
      method: "POST",
      path: KEYSTORES_PATH,
      access: { kind: "scope", scope: "import_keystores" },
      ...limits,
      body: service.requests.import,
      handle: ({ body, meta }) => writes.run(() => service.import(body), meta.deadline),
    }),
    route({
      method: "DELETE",
      path: KEYSTORES_PATH,
      access: { kind: "scope", scope: "delete_keys" },
      ...limits,
      body: service.requests.delete,
      handle: ({ body, meta }) => reads.run(() => service.delete(body), meta.deadline),
    }),
  ];
}
