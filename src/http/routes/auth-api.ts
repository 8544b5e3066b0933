import { Elysia } from "elysia";
import type { AuthAdminService } from "../../auth/admin";
import { requireManagement } from "../../auth/authenticator";
import type { Authenticate } from "../access";
import { pathParam } from "../params";

const POLICIES = "/api/v1/signer/auth/policies";
const TOKENS = "/api/v1/signer/auth/tokens";

/** The Auth API (DESIGN §7), stateful mode only; every route needs the management token. */
export function authApiRoutes(admin: AuthAdminService, authenticate: Authenticate) {
  const asManager = async (request: Request) => requireManagement(await authenticate(request));
  return new Elysia()
    .post(POLICIES, async ({ body, request }) => {
      await asManager(request);
      return Response.json(await admin.createPolicy(body), { status: 201 });
    })
    .get(POLICIES, async ({ request }) => {
      await asManager(request);
      return { data: await admin.listPolicies() };
    })
    .get(`${POLICIES}/:name`, async ({ params, request }) => {
      await asManager(request);
      return admin.getPolicy(pathParam(params.name, "policy name"));
    })
    .put(`${POLICIES}/:name`, async ({ params, body, request }) => {
      await asManager(request);
      return admin.updatePolicy(pathParam(params.name, "policy name"), body);
    })
    .delete(`${POLICIES}/:name`, async ({ params, request }) => {
      await asManager(request);
      await admin.deletePolicy(pathParam(params.name, "policy name"));
      return new Response(null, { status: 204 });
    })
    .post(TOKENS, async ({ body, request }) => {
      await asManager(request);
      return Response.json(await admin.createToken(body), { status: 201 });
    })
    .get(TOKENS, async ({ request }) => {
      await asManager(request);
      return { data: await admin.listTokens() };
    })
    .delete(`${TOKENS}/:accessor`, async ({ params, request }) => {
      await asManager(request);
      await admin.revokeToken(pathParam(params.accessor, "accessor"));
      return new Response(null, { status: 204 });
    });
}
