import { SigilError } from "../errors";
import type { Logger } from "../observability/log";
import type { SigningRequest } from "../signing/request";
import type { Decision, SlashingStore } from "./store";

/**
 * The hook the signing service calls before every signature. An implementation must record the
 * message and refuse a slashable one atomically (throwing a SigilError), so that a signature is
 * only ever produced for a recorded message. Non-slashable operations pass straight through.
 */
export interface SlashingGuard {
  approve(pubkey: string, request: SigningRequest): Promise<void>;
}

/**
 * Guards signing with a slashing protection store. A refusal becomes 412 with the reason; a
 * store that cannot answer becomes 503: without a record there is no signature.
 */
export class StoreGuard implements SlashingGuard {
  constructor(
    private readonly store: SlashingStore,
    private readonly logger: Logger,
  ) {}

  async approve(pubkey: string, request: SigningRequest): Promise<void> {
    const message = request.slashable;
    if (!message) return;
    const gvr = request.genesisValidatorsRoot;
    if (!gvr)
      throw new SigilError("invalid_request", "fork_info.genesis_validators_root is required");
    let decision: Decision;
    try {
      decision =
        message.kind === "block"
          ? await this.store.checkAndInsertBlock(gvr, {
              pubkey,
              slot: message.slot,
              signingRoot: request.signingRoot,
            })
          : await this.store.checkAndInsertAttestation(gvr, {
              pubkey,
              sourceEpoch: message.sourceEpoch,
              targetEpoch: message.targetEpoch,
              signingRoot: request.signingRoot,
            });
    } catch (error) {
      this.logger.error("slashing protection database unavailable", {
        backend: this.store.backend,
        error: error instanceof Error ? error.message : String(error),
      });
      throw new SigilError(
        "slashing_db_unavailable",
        "slashing protection database unavailable; nothing was signed",
        1,
      );
    }
    if (decision.outcome === "refused") {
      throw new SigilError(
        "slashing_protection",
        `${decision.reason}: ${decision.detail}`,
        undefined,
        decision.reason,
      );
    }
  }
}
