import type { SlashingStore } from "../antislashing/store";
import type { DatabaseWatermarks } from "../antislashing/watermarks";
import type { BlsWorkerStats } from "../bls/pool";
import type { Config } from "../config/schema";
import { errorResponse } from "../http/errors";
import { startHttpServer } from "../http/server";
import type { KeyStore } from "../keys/key-store";
import type { Logger } from "../observability/log";
import { SignerMetrics } from "../observability/metrics";
import type { SealService } from "../seal/service";
import type { CanaryCounter } from "../signing/canary";
import type { JobLimiter } from "../signing/limiter";
import type { SigningObserver } from "../signing/service";
import { openListener } from "./listeners";

export interface MetricsWiring {
  metrics: SignerMetrics;
  observer: SigningObserver;
  canaryCounter: CanaryCounter;
  /** Called for every error response; counts auth denials. */
  onErrorCode(code: string): void;
  recordKeyLoadFailures(reasons: readonly string[], source?: "filesystem" | "cloud_kv"): void;
  readonly url: string;
  stop(): Promise<void>;
}

const AUTH_DENIALS = new Set(["unauthorized", "invalid_token", "forbidden"]);

/** Gauges read memory only at scrape time; nothing here touches a database or the request path. */
export function wireMetrics(
  config: Config,
  deps: {
    limiter: JobLimiter;
    keys: KeyStore;
    logger: Logger;
    isUnsealed: () => boolean;
    /** antislashing.backend as opened: noop protects nothing, and the gauge says so. */
    slashingBackend: SlashingStore["backend"];
    /** sqlite: how the WAL's checkpoints go (absent for other backends). */
    slashingMaintenance?: SlashingStore["maintenance"];
    /** The database-wide watermarks last read (app/watermarks.ts); undefined before the first read. */
    watermarks?: () => DatabaseWatermarks | undefined;
    /** The BLS worker pool's per-worker figures; empty when signing on the main thread. */
    blsWorkers: () => readonly BlsWorkerStats[];
    /** Stateful mode: its refused seal shares are counted. */
    seal?: SealService;
  },
): MetricsWiring {
  const metrics = new SignerMetrics();
  metrics.gauge(
    "signer_signing_queue_depth",
    "Sign requests waiting for a signing slot.",
    () => deps.limiter.queued,
  );
  metrics.labelledGauge("signer_keys_loaded", "Keys loaded, by source.", "source", () => ({
    filesystem: deps.keys.count("filesystem"),
    cloud_kv: deps.keys.count("cloud_kv"),
  }));
  // 0 sealed (or uninitialized), 1 unsealed; a signer without signer_state is always unsealed.
  metrics.gauge(
    "signer_seal_state",
    "1 when the signer is unsealed and can sign, 0 when sealed or uninitialized.",
    () => (deps.isUnsealed() ? 1 : 0),
  );

  // An alert on `== 0` catches a signer started with the noop backend (testing only).
  metrics.labelledGauge(
    "signer_slashing_protection_enabled",
    "1 when a slashing protection database guards signing, 0 for the noop backend; by backend.",
    "backend",
    () => ({ [deps.slashingBackend]: deps.slashingBackend === "noop" ? 0 : 1 }),
  );

  const upkeep = deps.slashingMaintenance;
  if (upkeep) {
    metrics.gauge(
      "signer_slashing_checkpoint_failing",
      "sqlite: 1 while the last WAL checkpoint failed (records stay safe in the -wal, which grows), else 0.",
      () => (upkeep().checkpointFailing === null ? 0 : 1),
    );
    metrics.gauge(
      "signer_slashing_checkpoint_failures",
      "sqlite: WAL checkpoints that failed since the database was opened.",
      () => upkeep().checkpointFailures,
    );
    metrics.gauge(
      "signer_slashing_wal_bytes",
      "sqlite: size of the slashing database's -wal file; it grows while checkpoints fail.",
      () => upkeep().walBytes,
    );
  }
  // -1 while there is none: an alert on `>= 0` shows a signer bounded by watermark-repair.
  const high = () => deps.watermarks?.()?.high;
  metrics.gauge(
    "signer_slashing_high_watermark_epoch",
    "The slashing protection database's high watermark epoch (watermark-repair); -1 when none.",
    () => Number(high()?.epoch ?? -1n),
  );
  metrics.gauge(
    "signer_slashing_high_watermark_slot",
    "The slashing protection database's high watermark slot (watermark-repair); -1 when none.",
    () => Number(high()?.slot ?? -1n),
  );

  // One series per worker thread: a worker whose queue grows while the others idle points at
  // keys unevenly spread or a stuck thread.
  const perWorker = (field: keyof BlsWorkerStats) => () =>
    Object.fromEntries(deps.blsWorkers().map((stats, index) => [String(index), stats[field]]));
  metrics.labelledGauge(
    "signer_bls_worker_keys",
    "Keys held by each BLS worker thread.",
    "worker",
    perWorker("keys"),
  );
  metrics.labelledGauge(
    "signer_bls_worker_queued",
    "Signatures waiting to be sent to each BLS worker thread.",
    "worker",
    perWorker("queued"),
  );
  metrics.labelledGauge(
    "signer_bls_worker_in_flight",
    "Signatures sent to each BLS worker thread and not yet answered.",
    "worker",
    perWorker("inFlight"),
  );

  deps.seal?.onShareRejected((operation) => metrics.sealShareRejections.inc({ operation }));

  const observer: SigningObserver = {
    signed(operation, queueSeconds, signSeconds) {
      metrics.signed(operation, queueSeconds, signSeconds);
    },
    failed(operation, code, reason) {
      metrics.signingRequests.inc({ operation: operation ?? "unknown", status: code });
      if (code === "queue_full") metrics.signingRejected.inc({ reason: "queue_full" });
      if (code === "request_timeout") metrics.signingRejected.inc({ reason: "timeout" });
      if (code === "slashing_protection") {
        metrics.slashingRefusals.inc({
          operation: operation ?? "unknown",
          reason: reason ?? "unknown",
        });
      }
    },
  };

  // The signing listener's connection and Host rules, without its allow-list: Prometheus
  // scrapes by address or by a name of the operator's choosing.
  const { listen_address: address, listen_port: port } = config.metrics;
  const server = openListener("metrics", address, port, () =>
    startHttpServer({
      hostname: address,
      port,
      requestTimeoutMs: config.server.request_timeout_seconds * 1000,
      keepAliveSeconds: config.server.keep_alive_timeout_seconds,
      logger: deps.logger.child("metrics"),
      dispatch: (request) => ({
        route: undefined,
        timeoutMs: undefined,
        async respond() {
          if (new URL(request.url).pathname !== "/metrics" || request.method !== "GET") {
            return errorResponse("not_found", "the metrics listener serves GET /metrics");
          }
          return new Response(await metrics.registry.metrics(), {
            headers: { "content-type": metrics.registry.contentType },
          });
        },
      }),
    }),
  );
  const url = `http://${config.metrics.listen_address}:${server.port}`;
  deps.logger.child("app").info("metrics listening", { url: `${url}/metrics` });

  return {
    metrics,
    observer,
    canaryCounter: { increment: () => metrics.canarySigning.inc() },
    onErrorCode(code) {
      if (AUTH_DENIALS.has(code)) metrics.authDenied.inc({ reason: code });
    },
    recordKeyLoadFailures(reasons, source = "filesystem") {
      for (const reason of reasons)
        metrics.keyLoadFailures.inc({ source, reason: reasonClass(reason) });
    },
    url,
    async stop() {
      await server.shutdown(0);
    },
  };
}

/** Free-text load failures folded into a few stable label values. */
export function reasonClass(reason: string): string {
  const text = reason.toLowerCase();
  if (text.includes("duplicate")) return "duplicate";
  if (text.includes("decrypt")) return "decrypt_failed";
  if (text.includes("malformed item")) return "malformed_item";
  if (text.includes("password") || text.includes("checksum")) return "wrong_password";
  if (text.includes("keystore")) return "invalid_keystore";
  if (
    text.includes("no such file") ||
    text.includes("enoent") ||
    text.includes("cannot read") ||
    text.includes("directory")
  ) {
    return "unreadable";
  }
  return "invalid_descriptor";
}
