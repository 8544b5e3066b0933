import { Elysia } from "elysia";
import { authorize } from "../../auth/authenticator";
import type { Authenticate } from "../access";

export interface SignerStatus {
  version: string;
  auth_mode: string;
  /** uninitialized, sealed, partial_unseal or unsealed; always unsealed without signer_state. */
  seal_state: string;
  keys: Record<string, number>;
}

/** GET /api/v1/signer/status (scope signer_status): what monitoring wants to know. */
export function statusRoutes(status: () => Promise<SignerStatus>, authenticate: Authenticate) {
  return new Elysia().get("/api/v1/signer/status", async ({ request }) => {
    authorize(await authenticate(request), { scope: "signer_status" });
    return await status();
  });
}
