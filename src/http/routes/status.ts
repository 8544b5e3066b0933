import { route } from "../route";

export interface SignerStatus {
  version: string;
  auth_mode: string;
  /** uninitialized, sealed, partial_unseal or unsealed; always unsealed without signer_state. */
  seal_state: string;
  keys: Record<string, number>;
}

/** GET /api/v1/signer/status (scope signer_status): what monitoring wants to know. */
export function statusRoutes(status: () => Promise<SignerStatus>) {
  return [
    route({
      method: "GET",
      path: "/api/v1/signer/status",
      access: { kind: "scope", scope: "signer_status" },
      servedWhileSealed: true,
      handle: () => status(),
    }),
  ];
}
