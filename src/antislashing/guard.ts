import { SigilError } from "../errors";
import type { Logger } from "../observability/log";
import { type FutureBound, futureRefusal } from "./future";
import type { SlashingStore, StagedDecision } from "./store";
import type { WriteHealth } from "./write-health";

/** What slashing protection knows of a message: only blocks and attestations carry it. */
export type SlashableMessage =
  | { readonly kind: "block"; readonly slot: bigint }
  | { readonly kind: "attestation"; readonly sourceEpoch: bigint; readonly targetEpoch: bigint };

/** A message about to be signed, as the guard sees it. */
export interface GuardedMessage {
  /** Absent for every operation but blocks and attestations: nothing to record. */
  readonly slashable?: SlashableMessage;
  readonly signingRoot: Uint8Array;
  /** The chain the message is for; required when `slashable` is set. */
  readonly genesisValidatorsRoot?: Uint8Array;
}

/** A message the guard let through: recorded, and on disk once `durable` resolves. */
export interface Approval {
  /**
   * Resolves once the record is on disk; rejects with a `slashing_db_unavailable` SigilError when
   * it cannot be made so. Nothing signed may leave before it resolves. Its rejection is handled
   * by the guard, so dropping it (an error after the approval) is safe.
   */
  readonly durable: Promise<void>;
}

/**
 * The hook the signing service calls before every signature. An implementation must record the
 * message and refuse a slashable one atomically (throwing a SigilError), so that a signature is
 * only ever produced for a recorded message, and released only once that record is durable.
 * Non-slashable operations pass straight through.
 */
export interface SlashingGuard {
  approve(pubkey: string, request: GuardedMessage): Promise<Approval>;
}

const ON_DISK: Approval = Object.freeze({ durable: Promise.resolve() });

/**
 * Guards signing with a slashing protection store. A refusal becomes 412 with the reason; a
 * store that cannot answer becomes 503: without a record there is no signature.
 *
 * With a store that stages its checks (sqlite), the approval comes at the commit, when every
 * later check already sees the record, and `durable` at the WAL sync after it: the signature is
 * computed meanwhile. Refusals and repeats are still answered only once durable, as the store's
 * own checkAndInsert would: they may rest on a record nobody has synced yet.
 */
export interface StoreGuardOptions {
  /** `antislashing.max_future_epochs` against the network's clock; absent: no bound (future.ts). */
  readonly futureBound?: FutureBound;
  /** Told whether each record reached the disk (the health check's write-health.ts). */
  readonly writes?: WriteHealth;
}

export class StoreGuard implements SlashingGuard {
  constructor(
    private readonly store: SlashingStore,
    private readonly logger: Logger,
    private readonly options: StoreGuardOptions = {},
  ) {}

  async approve(pubkey: string, request: GuardedMessage): Promise<Approval> {
    const message = request.slashable;
    if (!message) return ON_DISK;
    const gvr = request.genesisValidatorsRoot;
    if (!gvr)
      throw new SigilError("invalid_request", "fork_info.genesis_validators_root is required");
    // Before the store, so that such a message is never recorded.
    const bound = this.options.futureBound;
    const tooFar = bound ? futureRefusal(message, bound) : null;
    if (tooFar) throw refusal(tooFar.reason, tooFar.detail);
    const writes = this.options.writes;
    let staged: StagedDecision;
    try {
      staged = await this.stage(gvr, pubkey, message, request.signingRoot);
    } catch (error) {
      writes?.failed(error);
      throw this.unavailable(error);
    }
    const decision = staged.decision;
    const durable = staged.durable.then(
      () => {
        // Only a new record is a write; a repeat or a refusal may have written nothing.
        if (decision.outcome === "new") writes?.succeeded();
      },
      (error: unknown) => {
        writes?.failed(error);
        throw this.unavailable(error);
      },
    );
    durable.catch(() => {});
    if (decision.outcome === "refused") {
      await durable;
      throw refusal(decision.reason, decision.detail);
    }
    return { durable };
  }

  private stage(
    gvr: Uint8Array,
    pubkey: string,
    message: SlashableMessage,
    signingRoot: Uint8Array,
  ): Promise<StagedDecision> {
    const store = this.store;
    if (message.kind === "block") {
      const proposal = { pubkey, slot: message.slot, signingRoot };
      if (store.stageBlock) return store.stageBlock(gvr, proposal);
      return store.checkAndInsertBlock(gvr, proposal).then(onDisk);
    }
    const vote = {
      pubkey,
      sourceEpoch: message.sourceEpoch,
      targetEpoch: message.targetEpoch,
      signingRoot,
    };
    if (store.stageAttestation) return store.stageAttestation(gvr, vote);
    return store.checkAndInsertAttestation(gvr, vote).then(onDisk);
  }

  /** Logs why the store failed (never with a secret: stores know none) and answers 503. */
  private unavailable(error: unknown): SigilError {
    this.logger.error("slashing protection database unavailable", {
      backend: this.store.backend,
      error: error instanceof Error ? error.message : String(error),
    });
    return new SigilError(
      "slashing_db_unavailable",
      "slashing protection database unavailable; nothing was signed",
      1,
    );
  }
}

function refusal(reason: string, detail: string): SigilError {
  return new SigilError("slashing_protection", `${reason}: ${detail}`, undefined, reason);
}

const onDisk = (decision: StagedDecision["decision"]): StagedDecision => ({
  decision,
  durable: ON_DISK.durable,
});
