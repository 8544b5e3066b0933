import type { Handlers } from "../table";

export interface SignerStatus {
  version: string;
  auth_mode: string;
  /** uninitialized, sealed, partial_unseal or unsealed; always unsealed without signer_state. */
  seal_state: string;
  keys: Record<string, number>;
}

/** GET /api/v1/signer/status: what monitoring wants to know. */
export function statusHandlers(status: () => Promise<SignerStatus>): Handlers<"status"> {
  return { status: () => status() };
}
