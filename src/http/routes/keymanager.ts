import { Elysia } from "elysia";
import { authorize } from "../../auth/authenticator";
import type { KeyManagerService } from "../../keys/key-manager";
import type { JobLimiter } from "../../signing/limiter";
import type { Authenticate } from "../access";
import { requestMeta } from "../request-meta";

export const KEYSTORES_PATH = "/eth/v1/keystores";

/**
 * The Key Manager API's keystore routes. GET and DELETE share the read limit and POST has the
 * write limit, as the spec's max_concurrent_reads / max_concurrent_writes say.
 */
export function keyManagerRoutes(
  service: KeyManagerService,
  limits: { reads: JobLimiter; writes: JobLimiter },
  authenticate: Authenticate,
) {
  return new Elysia()
    .get(KEYSTORES_PATH, async ({ request }) => {
      const principal = await authenticate(request);
      return limits.reads.run(
        () => ({ data: service.list(principal) }),
        requestMeta(request).deadline,
      );
    })
    .post(KEYSTORES_PATH, async ({ body, request }) => {
      authorize(await authenticate(request), { scope: "import_keystores" });
      return limits.writes.run(() => service.import(body), requestMeta(request).deadline);
    })
    .delete(KEYSTORES_PATH, async ({ body, request }) => {
      authorize(await authenticate(request), { scope: "delete_keys" });
      return limits.reads.run(() => service.delete(body), requestMeta(request).deadline);
    });
}
