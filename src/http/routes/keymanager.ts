import { Elysia } from "elysia";
import type { KeyManagerService } from "../../keys/key-manager";
import type { JobLimiter } from "../../signing/limiter";
import { requestMeta } from "../request-meta";

export const KEYSTORES_PATH = "/eth/v1/keystores";

/**
 * The Key Manager API's keystore routes. GET and DELETE share the read limit and POST has the
 * write limit, as the spec's max_concurrent_reads / max_concurrent_writes say.
 */
export function keyManagerRoutes(
  service: KeyManagerService,
  limits: { reads: JobLimiter; writes: JobLimiter },
) {
  return new Elysia()
    .get(KEYSTORES_PATH, ({ request }) =>
      limits.reads.run(() => ({ data: service.list() }), requestMeta(request).deadline),
    )
    .post(KEYSTORES_PATH, ({ body, request }) =>
      limits.writes.run(() => service.import(body), requestMeta(request).deadline),
    )
    .delete(KEYSTORES_PATH, ({ body, request }) =>
      limits.reads.run(() => service.delete(body), requestMeta(request).deadline),
    );
}
