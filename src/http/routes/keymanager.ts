import { writeCutoff } from "../../keys/batch";
import type { deleteRequest, importRequest } from "../../keys/import-request";
import type { KeyService } from "../../keys/key-service";
import type { JobLimiter } from "../../signing/limiter";
import { keyRule, route } from "../route";

export const KEYSTORES_PATH = "/eth/v1/keystores";

export interface KeyManagerRouteSettings {
  readonly reads: JobLimiter;
  readonly writes: JobLimiter;
  /** key_sources.key_manager_api.request_timeout_seconds, in ms. */
  readonly timeoutMs: number;
  /** key_sources.key_manager_api.max_request_body_bytes. */
  readonly maxBodyBytes: number;
  /** The bodies, for key_sources.key_manager_api.max_items_per_request. */
  readonly requests: {
    readonly import: ReturnType<typeof importRequest>;
    readonly delete: ReturnType<typeof deleteRequest>;
  };
}

/**
 * The Key Manager API's keystore routes, over the key service: imports go to the filesystem
 * source's keystore files; a delete takes the key out of every source that holds it. GET and
 * DELETE share the read limit and POST has the write limit, as the spec's
 * max_concurrent_reads / max_concurrent_writes say. The key rule applies to every key of every
 * route: a key the caller may not list, it may not delete or import over.
 */
export function keyManagerRoutes(service: KeyService, settings: KeyManagerRouteSettings) {
  const { reads, writes, timeoutMs, maxBodyBytes, requests } = settings;
  const limits = { servedWhileSealed: false, timeoutMs, maxBodyBytes } as const;
  return [
    route({
      method: "GET",
      path: KEYSTORES_PATH,
      access: { kind: "keys", scope: "list_keys", list: "list_keys" },
      ...limits,
      handle: ({ meta }, caller) =>
        reads.run(() => ({ data: service.list(keyRule(caller)) }), meta.deadline),
    }),
    route({
      method: "POST",
      path: KEYSTORES_PATH,
      access: { kind: "keys", scope: "import_keystores", list: "list_keys" },
      ...limits,
      body: requests.import,
      handle: ({ body, meta }, caller) => {
        const cutoff = writeCutoff(meta.deadline, timeoutMs);
        return writes.run(
          () => service.import("filesystem", body, keyRule(caller), { cutoff }),
          meta.deadline,
        );
      },
    }),
    route({
      method: "DELETE",
      path: KEYSTORES_PATH,
      access: { kind: "keys", scope: "delete_keys", list: "list_keys" },
      ...limits,
      body: requests.delete,
      handle: ({ body, meta }, caller) =>
        reads.run(() => service.delete("every_source", body, keyRule(caller)), meta.deadline),
    }),
  ];
}
