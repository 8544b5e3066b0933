import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { type HistogramSeries, TalliedHistogram } from "./tallied-histogram";

interface SignedTally {
  pending: number;
  readonly queue: HistogramSeries;
  readonly sign: HistogramSeries;
}

/**
 * Every metric sigil exports, in one registry served on the metrics listener. Label values come
 * from small fixed sets (operations, error codes, sources, refusal reasons): never a pubkey, a
 * token or a request id, so cardinality stays bounded and nothing secret is exported.
 */
export class SignerMetrics {
  readonly registry = new Registry();

  /** Signed requests, by operation, not yet added to `signingRequests` (added at scrape time). */
  readonly #signed = new Map<string, SignedTally>();

  readonly signingRequests = new Counter({
    name: "signer_signing_requests_total",
    help: "Sign requests by operation and outcome (signed, or the error code).",
    labelNames: ["operation", "status"] as const,
    registers: [this.registry],
    collect: () => this.#foldSigned(),
  });

  readonly signingDuration = new TalliedHistogram({
    name: "signer_signing_duration_seconds",
    help: "Time of signed requests: phase=queue is the wait for a signing slot, phase=sign the slashing check and BLS signature.",
    labelNames: ["operation", "phase"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly signingRejected = new Counter({
    name: "signer_signing_rejected_total",
    help: "Sign requests turned away before signing: queue_full or timeout.",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly slashingRefusals = new Counter({
    name: "signer_slashing_refusals_total",
    help: "Messages refused by slashing protection, by operation and reason.",
    labelNames: ["operation", "reason"] as const,
    registers: [this.registry],
  });

  readonly keyLoadFailures = new Counter({
    name: "signer_key_load_failures_total",
    help: "Keys that failed to load, by source and reason class.",
    labelNames: ["source", "reason"] as const,
    registers: [this.registry],
  });

  readonly authDenied = new Counter({
    name: "signer_auth_denied_total",
    help: "Requests refused by access control: unauthorized, invalid_token or forbidden.",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly sealShareRejections = new Counter({
    name: "signer_seal_share_rejections_total",
    help: "Seal shares refused as not their operator's (wrong key, corrupted, or another operator's), by operation.",
    labelNames: ["operation"] as const,
    registers: [this.registry],
  });

  readonly canarySigning = new Counter({
    name: "signer_canary_signing_total",
    help: "Signatures made with a canary key (a key that should never sign).",
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /**
   * One signed request: every sign request a validator client makes. The counter's label set
   * and the histogram's series are looked up once per operation, not hashed per request; the
   * count reaches `signer_signing_requests_total` when Prometheus scrapes.
   */
  signed(operation: string, queueSeconds: number, signSeconds: number): void {
    let tally = this.#signed.get(operation);
    if (tally === undefined) {
      tally = {
        pending: 0,
        queue: this.signingDuration.series({ operation, phase: "queue" }),
        sign: this.signingDuration.series({ operation, phase: "sign" }),
      };
      this.#signed.set(operation, tally);
    }
    tally.pending++;
    tally.queue.observe(queueSeconds);
    tally.sign.observe(signSeconds);
  }

  #foldSigned(): void {
    for (const [operation, tally] of this.#signed) {
      if (tally.pending === 0) continue;
      this.signingRequests.inc({ operation, status: "signed" }, tally.pending);
      tally.pending = 0;
    }
  }

  /** A gauge whose value is read when Prometheus scrapes, from memory only. */
  gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  /** A labelled gauge read at scrape time. */
  labelledGauge(
    name: string,
    help: string,
    label: string,
    read: () => Record<string, number>,
  ): void {
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      collect() {
        for (const [value, count] of Object.entries(read())) this.set({ [label]: value }, count);
      },
    });
  }
}
