import type { AuthAdminService } from "../../auth/admin";
import type { Handlers } from "../table";

type AuthApi =
  | "createPolicy"
  | "listPolicies"
  | "getPolicy"
  | "updatePolicy"
  | "deletePolicy"
  | "createToken"
  | "listTokens"
  | "revokeToken";

/** The Auth API, stateful mode only; the table says every route needs the management token. */
export function authApiHandlers(admin: AuthAdminService): Handlers<AuthApi> {
  return {
    createPolicy: async ({ body }) =>
      Response.json(await admin.createPolicy(body), { status: 201 }),
    listPolicies: async () => ({ data: await admin.listPolicies() }),
    getPolicy: ({ params }) => admin.getPolicy(params.name ?? ""),
    updatePolicy: ({ params, body }) => admin.updatePolicy(params.name ?? "", body),
    deletePolicy: async ({ params }) => {
      await admin.deletePolicy(params.name ?? "");
      return new Response(null, { status: 204 });
    },
    createToken: async ({ body }) => Response.json(await admin.createToken(body), { status: 201 }),
    listTokens: async () => ({ data: await admin.listTokens() }),
    revokeToken: async ({ params }) => {
      await admin.revokeToken(params.accessor ?? "");
      return new Response(null, { status: 204 });
    },
  };
}
