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
import type { Decision } from "./store";

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

/** The refusal for a message beyond the bound, or null when it is within. */
export function futureRefusal(
  message:
    | { readonly kind: "block"; readonly slot: bigint }
    | { readonly kind: "attestation"; readonly targetEpoch: bigint },
  bound: FutureBound,
): Extract<Decision, { outcome: "refused" }> | null {
  const latest = latestAllowedEpoch(bound);
  // Words only for a refusal: the message is within the bound on every ordinary request.
  const limit = () =>
    `more than ${bound.maxFutureEpochs} epochs after the current epoch ${latest - bound.maxFutureEpochs} (antislashing.max_future_epochs)`;
  if (message.kind === "block") {
    const epoch = message.slot / bound.clock.slotsPerEpoch;
    if (epoch <= latest) return null;
    return {
      outcome: "refused",
      reason: "block_slot_too_far_in_future",
      detail: `slot ${message.slot} (epoch ${epoch}) is ${limit()}; nothing was recorded`,
    };
  }
  if (message.targetEpoch <= latest) return null;
  return {
    outcome: "refused",
    reason: "attestation_target_too_far_in_future",
    detail: `target epoch ${message.targetEpoch} is ${limit()}; nothing was recorded`,
  };
}
