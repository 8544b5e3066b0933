import { Elysia } from "elysia";
import { requireManagement } from "../../auth/authenticator";
import { presentedToken } from "../../auth/tokens";
import { SigilError } from "../../errors";
import type { SealService } from "../../seal/service";
import type { Authenticate } from "../access";

const SYS = "/api/v1/signer/sys";

/**
 * The seal lifecycle routes (DESIGN §8). Setup and registration tokens travel in the body (they
 * are spent, not presented); operator credentials and the management token in Authorization.
 */
export function sealRoutes(seal: SealService, authenticate: Authenticate) {
  const asManager = async (request: Request) => requireManagement(await authenticate(request));
  return new Elysia()
    .get(`${SYS}/seal-status`, () => seal.status())
    .post(`${SYS}/init`, ({ body }) => seal.init(body))
    .post(`${SYS}/register`, ({ body }) => seal.register(body))
    .get(`${SYS}/share`, ({ request }) => seal.share(operatorCredential(request)))
    .post(`${SYS}/unseal`, ({ body, request }) =>
      seal.submit("unseal", operatorCredential(request), body),
    )
    .post(`${SYS}/generate-root`, ({ body, request }) =>
      seal.submit("generate-root", operatorCredential(request), body),
    )
    .post(`${SYS}/seal`, async ({ request }) => {
      await asManager(request);
      seal.seal();
      return { state: "sealed" };
    })
    .post(`${SYS}/rotate-quorum`, async ({ body, request }) => {
      await asManager(request);
      return Response.json({ progress: await seal.startRotation(body) }, { status: 202 });
    })
    .delete(`${SYS}/rotate-quorum`, async ({ request }) => {
      await asManager(request);
      seal.cancelRotation();
      return new Response(null, { status: 204 });
    })
    .post(`${SYS}/rotate-quorum/share`, ({ body, request }) =>
      seal.submit("rotate-quorum", operatorCredential(request), body),
    );
}

function operatorCredential(request: Request): string {
  const presented = presentedToken(request.headers.get("authorization"));
  if (presented.kind === "token") return presented.value;
  throw new SigilError(
    "unauthorized",
    presented.kind === "none"
      ? "this route needs an operator credential (Authorization: Bearer sgo_…)"
      : presented.reason,
  );
}

/** Paths that answer while sealed: liveness, health, status and the seal lifecycle itself. */
export function servedWhileSealed(path: string): boolean {
  return (
    path === "/upcheck" ||
    path === "/healthcheck" ||
    path === "/api/v1/signer/status" ||
    path.startsWith(`${SYS}/`)
  );
}
