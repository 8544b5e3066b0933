import type { SigningRequest } from "../signing/request";

/**
 * The hook the signing service calls before every signature. An implementation must record the
 * message and refuse a slashable one atomically (throwing a SigilError), so that a signature is
 * only ever produced for a recorded message. Non-slashable operations pass straight through.
 */
export interface SlashingGuard {
  approve(pubkey: string, request: SigningRequest): Promise<void>;
}

/** Refuses nothing: stands in until the EIP-3076 engine is wired, and backs `antislashing.backend: noop`. */
export const approveEverything: SlashingGuard = {
  approve: async () => {},
};
