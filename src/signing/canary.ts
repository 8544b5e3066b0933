import type { Logger } from "../observability/log";
import type { SigningOperation } from "../wire/operations";

/** Where canary signings are counted; the metrics module provides the Prometheus counter. */
export interface CanaryCounter {
  increment(): void;
}

/**
 * Canary keys are public keys that should never sign (honeypots, decommissioned keys). A
 * signature with one still happens, but it is logged as a warning and counted, so that
 * alerting can fire on a leaked token or a misconfigured validator client.
 */
export class CanaryMonitor {
  readonly #canaries: ReadonlySet<string>;

  constructor(
    pubkeys: readonly string[],
    private readonly counter: CanaryCounter,
    private readonly logger: Logger,
  ) {
    this.#canaries = new Set(pubkeys.map((key) => key.toLowerCase()));
  }

  get size(): number {
    return this.#canaries.size;
  }

  observe(pubkey: string, operation: SigningOperation, requestId: string): void {
    if (!this.#canaries.has(pubkey)) return;
    this.counter.increment();
    this.logger.warn("canary key signed", { pubkey, operation, request_id: requestId });
  }
}
