import { InitRequest, RegisterRequest, RotationRequest, ShareRequest } from "../../seal/requests";
import type { SealService } from "../../seal/service";
import { type Access, type Caller, route } from "../route";

const SYS = "/api/v1/signer/sys";

/** Every seal route answers while sealed: they are how a signer gets unsealed. */
const sys = (access: Access) => ({ access, servedWhileSealed: true }) as const;
const operator = sys({ kind: "operator" });
const manager = sys({ kind: "management" });
const credential = (caller: Caller) => caller.credential ?? "";

/**
 * The seal lifecycle routes (docs/architecture.md, "Seal lifecycle"). Setup and registration tokens
 * travel in the body (they are spent, not presented); operator credentials and the management token
 * in Authorization.
 */
export function sealRoutes(seal: SealService) {
  return [
    route({
      method: "GET",
      path: `${SYS}/seal-status`,
      ...sys({ kind: "public" }),
      handle: () => seal.status(),
    }),
    route({
      method: "POST",
      path: `${SYS}/init`,
      ...sys({ kind: "public" }),
      body: InitRequest,
      handle: ({ body }) => seal.init(body),
    }),
    route({
      method: "POST",
      path: `${SYS}/register`,
      ...sys({ kind: "public" }),
      body: RegisterRequest,
      handle: ({ body }) => seal.register(body),
    }),
    route({
      method: "GET",
      path: `${SYS}/share`,
      ...operator,
      handle: (_input, caller) => seal.share(credential(caller)),
    }),
    route({
      method: "POST",
      path: `${SYS}/unseal`,
      ...operator,
      body: ShareRequest,
      handle: ({ body }, caller) => seal.submit("unseal", credential(caller), body),
    }),
    route({
      method: "POST",
      path: `${SYS}/generate-root`,
      ...operator,
      body: ShareRequest,
      handle: ({ body }, caller) => seal.submit("generate-root", credential(caller), body),
    }),
    route({
      method: "POST",
      path: `${SYS}/seal`,
      ...manager,
      handle: () => {
        seal.seal();
        return { state: "sealed" };
      },
    }),
    route({
      method: "POST",
      path: `${SYS}/rotate-quorum`,
      ...manager,
      body: RotationRequest,
      handle: async ({ body }) =>
        Response.json({ progress: await seal.startRotation(body) }, { status: 202 }),
    }),
    route({
      method: "DELETE",
      path: `${SYS}/rotate-quorum`,
      ...manager,
      handle: () => {
        seal.cancelRotation();
        return new Response(null, { status: 204 });
      },
    }),
    route({
      method: "POST",
      path: `${SYS}/rotate-quorum/share`,
      ...operator,
      body: ShareRequest,
      handle: ({ body }, caller) => seal.submit("rotate-quorum", credential(caller), body),
    }),
  ];
}
