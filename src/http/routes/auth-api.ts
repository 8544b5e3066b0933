import type { AuthAdminService } from "../../auth/admin";
import { PolicyRequest, PolicyUpdateRequest, TokenRequest } from "../../auth/schema";
import { route } from "../route";

const POLICIES = "/api/v1/signer/auth/policies";
const TOKENS = "/api/v1/signer/auth/tokens";

const manager = { access: { kind: "management" }, servedWhileSealed: false } as const;

/**
 * The Auth API (docs/architecture.md, "Auth"), stateful mode only; every route needs the management
 * token.
 */
export function authApiRoutes(admin: AuthAdminService) {
  return [
    route({
      method: "POST",
      path: POLICIES,
      ...manager,
      body: PolicyRequest,
      handle: async ({ body }) => Response.json(await admin.createPolicy(body), { status: 201 }),
    }),
    route({
      method: "GET",
      path: POLICIES,
      ...manager,
      handle: async () => ({ data: await admin.listPolicies() }),
    }),
    route({
      method: "GET",
      path: `${POLICIES}/:name`,
      ...manager,
      params: { name: "policy name" },
      handle: ({ params }) => admin.getPolicy(params.name ?? ""),
    }),
    route({
      method: "PUT",
      path: `${POLICIES}/:name`,
      ...manager,
      params: { name: "policy name" },
      body: PolicyUpdateRequest,
      handle: ({ params, body }) => admin.updatePolicy(params.name ?? "", body),
    }),
    route({
      method: "DELETE",
      path: `${POLICIES}/:name`,
      ...manager,
      params: { name: "policy name" },
      handle: async ({ params }) => {
        await admin.deletePolicy(params.name ?? "");
        return new Response(null, { status: 204 });
      },
    }),
    route({
      method: "POST",
      path: TOKENS,
      ...manager,
      body: TokenRequest,
      handle: async ({ body }) => Response.json(await admin.createToken(body), { status: 201 }),
    }),
    route({
      method: "GET",
      path: TOKENS,
      ...manager,
      handle: async () => ({ data: await admin.listTokens() }),
    }),
    route({
      method: "DELETE",
      path: `${TOKENS}/:accessor`,
      ...manager,
      params: { accessor: "accessor" },
      handle: async ({ params }) => {
        await admin.revokeToken(params.accessor ?? "");
        return new Response(null, { status: 204 });
      },
    }),
  ];
}
