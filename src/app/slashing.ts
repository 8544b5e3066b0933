import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SlashingStore } from "../antislashing/store";
import type { Config } from "../config/schema";
import type { CheckResult } from "../observability/health";
import type { Logger } from "../observability/log";

/**
 * Opens the configured slashing protection store. Backends are imported lazily so that a
 * signer on sqlite never loads the PostgreSQL or AWS clients.
 */
export async function openSlashingStore(
  config: Config,
  logger: Logger,
  /** sqlite: "background" moves WAL checkpoints off the event loop (the signer's choice). */
  sqliteCheckpoints: "inline" | "background" = "inline",
): Promise<SlashingStore> {
  const settings = config.antislashing;
  const log = logger.child("antislashing");
  switch (settings.backend) {
    case "sqlite": {
      // The database directory is created (owner-only) so that a fresh install just works.
      mkdirSync(dirname(settings.path), { recursive: true, mode: 0o700 });
      const { openSqliteStore } = await import("../antislashing/backends/sqlite");
      return openSqliteStore(settings.path, { checkpoints: sqliteCheckpoints, logger: log });
    }
    case "postgres": {
      const { openPostgresStore } = await import("../antislashing/backends/postgres");
      return openPostgresStore({
        url: settings.url ?? "",
        poolSize: settings.pool_size,
        forceIpv4: settings.force_ipv4,
        logger: log,
      });
    }
    case "dynamodb": {
      const { openDynamoStore } = await import("../antislashing/backends/dynamodb");
      // Region, credentials and endpoint come from the standard AWS environment
      // (AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL_DYNAMODB, instance roles, …).
      return openDynamoStore({
        table: settings.table ?? "",
        client: new DynamoDBClient({}),
        logger: log,
      });
    }
    case "noop": {
      const { createNoopStore } = await import("../antislashing/backends/noop");
      return createNoopStore();
    }
  }
}

export async function slashingHealth(store: SlashingStore): Promise<CheckResult> {
  const started = performance.now();
  try {
    await store.ping();
    const latency = Math.round((performance.now() - started) * 100) / 100;
    return { status: "UP", data: { backend: store.backend, latency_ms: latency } };
  } catch {
    return { status: "DOWN", data: { backend: store.backend, error: "database unreachable" } };
  }
}

/** Runs pruning at start-up and then every interval, when enabled and the backend keeps history. */
export function schedulePruning(store: SlashingStore, config: Config, logger: Logger): () => void {
  const { pruning_epochs_to_keep: epochs, pruning_interval_hours: hours } = config.antislashing;
  if (epochs === 0 || !store.prune) return () => {};
  const log = logger.child("antislashing");
  const prune = async () => {
    try {
      const removed = await store.prune?.(BigInt(epochs));
      log.info("pruned slashing protection history", { epochs_kept: epochs, ...removed });
    } catch (error) {
      log.warn("pruning failed; will retry at the next interval", { error: String(error) });
    }
  };
  void prune();
  const timer = setInterval(prune, hours * 3_600_000);
  timer.unref();
  return () => clearInterval(timer);
}
