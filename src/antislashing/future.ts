/**
 * The future-epoch bound (`antislashing.max_future_epochs`): a block or attestation more than that
 * many epochs after the wall-clock epoch of the configured network is refused before the store
 * sees it, so it is never recorded. Recorded, one such message would end its validator's duties:
 * an attestation with target epoch 2^64 - 1 surrounds every honest attestation after it (each has
 * a higher source and a lower target), which is then refused as surrounded; on the minimal
 * strategy (dynamodb) a block at slot 2^64 - 1 raises the watermark past every later block. No
 * honest client signs for an epoch that has not come yet, beyond clock skew; the bound leaves
 * `max_future_epochs` epochs (6.4 minutes each on mainnet) for that.
 *
 * The wall-clock epoch needs the network's genesis time; a custom network whose network_config
 * does not give it has no bound (the application says so at start-up).
 */
import {
  type Decision,
  type InterchangeSource,
  type InterchangeValidator,
  type RefusalReason,
  SlashingImportError,
} from "./store";

/** When the chain started and how fast it goes. */
export interface ChainClock {
  /** Unix seconds of slot 0. */
  readonly genesisTime: bigint;
  readonly secondsPerSlot: bigint;
  readonly slotsPerEpoch: bigint;
}

export interface FutureBound {
  readonly clock: ChainClock;
  readonly maxFutureEpochs: bigint;
  /** Milliseconds since the Unix epoch (tests give their own); default Date.now. */
  readonly now?: () => number;
}

/** The epoch of the wall clock (0 before genesis). */
export function wallClockEpoch(clock: ChainClock, nowMs: number): bigint {
  const seconds = BigInt(Math.floor(nowMs / 1000));
  if (seconds <= clock.genesisTime) return 0n;
  return (seconds - clock.genesisTime) / (clock.secondsPerSlot * clock.slotsPerEpoch);
}

/** The highest epoch a message may be for now. */
export function latestAllowedEpoch(bound: FutureBound): bigint {
  return wallClockEpoch(bound.clock, (bound.now ?? Date.now)()) + bound.maxFutureEpochs;
}

/**
 * A message beyond the bound: the refusal reason, and `limit`, the words for how far is too far
 * ("more than 2 epochs after the current epoch 1000 (antislashing.max_future_epochs)"); null when
 * it is within.
 */
export function beyondBound(
  message:
    | { readonly kind: "block"; readonly slot: bigint }
    | { readonly kind: "attestation"; readonly targetEpoch: bigint },
  bound: FutureBound,
): { reason: Extract<RefusalReason, `${string}_too_far_in_future`>; limit: string } | null {
  const latest = latestAllowedEpoch(bound);
  const epoch =
    message.kind === "block" ? message.slot / bound.clock.slotsPerEpoch : message.targetEpoch;
  if (epoch <= latest) return null;
  // Words only for a refusal: the message is within the bound on every ordinary request.
  const limit = `more than ${bound.maxFutureEpochs} epochs after the current epoch ${latest - bound.maxFutureEpochs} (antislashing.max_future_epochs)`;
  return message.kind === "block"
    ? { reason: "block_slot_too_far_in_future", limit }
    : { reason: "attestation_target_too_far_in_future", limit };
}

/** The refusal for a message beyond the bound, or null when it is within. */
export function futureRefusal(
  message: Parameters<typeof beyondBound>[0],
  bound: FutureBound,
): Extract<Decision, { outcome: "refused" }> | null {
  const beyond = beyondBound(message, bound);
  if (!beyond) return null;
  const what =
    message.kind === "block"
      ? `slot ${message.slot} (epoch ${message.slot / bound.clock.slotsPerEpoch})`
      : `target epoch ${message.targetEpoch}`;
  return {
    outcome: "refused",
    reason: beyond.reason,
    detail: `${what} is ${beyond.limit}; nothing was recorded`,
  };
}

/**
 * The first record of an imported validator beyond the bound, described for a refusal (its
 * validator, block slot or attestation epochs), or undefined when every record is within. An
 * attestation counts by the later of its source and target. An imported record is judged as a
 * signing request for the same message would be: recorded, it would end the validator's duties
 * just the same.
 */
export function firstRecordBeyond(
  validator: InterchangeValidator,
  bound: FutureBound,
): string | undefined {
  const { slotsPerEpoch } = bound.clock;
  for (const { slot } of validator.blocks) {
    const beyond = beyondBound({ kind: "block", slot }, bound);
    if (beyond)
      return `validator ${validator.pubkey}: block slot ${slot} (epoch ${slot / slotsPerEpoch}) is ${beyond.limit}`;
  }
  for (const { sourceEpoch, targetEpoch } of validator.attestations) {
    const latest = sourceEpoch > targetEpoch ? sourceEpoch : targetEpoch;
    const beyond = beyondBound({ kind: "attestation", targetEpoch: latest }, bound);
    if (beyond)
      return `validator ${validator.pubkey}: attestation source epoch ${sourceEpoch}, target epoch ${targetEpoch} is ${beyond.limit}`;
  }
  return undefined;
}

/** An imported record beyond `antislashing.max_future_epochs` (its message says which). */
export class FutureRecordError extends SlashingImportError {}

/**
 * The interchange as it is read, refused at its first record beyond the bound: the iteration
 * throws a SlashingImportError, which every backend's import treats as a failed import that
 * writes nothing (as it does a malformed record).
 */
export function withinBound(source: InterchangeSource, bound: FutureBound): InterchangeSource {
  return {
    metadata: source.metadata,
    async *validators() {
      for await (const validator of source.validators()) {
        const beyond = firstRecordBeyond(validator, bound);
        if (beyond) throw new FutureRecordError(beyond);
        yield validator;
      }
    },
  };
}
