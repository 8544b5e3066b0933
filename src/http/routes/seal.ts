import type { SealService } from "../../seal/service";
import type { Caller } from "../route";
import type { Handlers } from "../table";

const credential = (caller: Caller) => caller.credential ?? "";

type Seal =
  | "sealStatus"
  | "init"
  | "register"
  | "share"
  | "unseal"
  | "generateRoot"
  | "seal"
  | "startRotation"
  | "cancelRotation"
  | "rotationShare";

/**
 * The seal lifecycle routes (docs/architecture.md, "Seal lifecycle"). Setup and registration
 * tokens travel in the body (they are spent,
 * not presented); operator credentials and the management token in Authorization.
 */
export function sealHandlers(seal: SealService): Handlers<Seal> {
  return {
    sealStatus: () => seal.status(),
    init: ({ body }) => seal.init(body),
    register: ({ body }) => seal.register(body),
    share: (_input, caller) => seal.share(credential(caller)),
    unseal: ({ body }, caller) => seal.submit("unseal", credential(caller), body),
    generateRoot: ({ body }, caller) => seal.submit("generate-root", credential(caller), body),
    seal: () => {
      seal.seal();
      return { state: "sealed" };
    },
    startRotation: async ({ body }) =>
      Response.json({ progress: await seal.startRotation(body) }, { status: 202 }),
    cancelRotation: () => {
      seal.cancelRotation();
      return new Response(null, { status: 204 });
    },
    rotationShare: ({ body }, caller) => seal.submit("rotate-quorum", credential(caller), body),
  };
}
