import { openSlashingBackend } from "../antislashing/registry";
import type { SlashingStore } from "../antislashing/store";
import type { Config } from "../config/schema";
import type { CheckResult } from "../observability/health";
import type { Logger } from "../observability/log";

/** Opens the configured slashing protection store (antislashing/registry.ts). */
export function openSlashingStore(
  config: Config,
  logger: Logger,
  /** sqlite: "background" moves WAL checkpoints off the event loop (the signer's choice). */
  sqliteCheckpoints: "inline" | "background" = "inline",
): Promise<SlashingStore> {
  return openSlashingBackend(config.antislashing, logger, sqliteCheckpoints);
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
