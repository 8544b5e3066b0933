import type { FutureBound } from "../antislashing/future";
import {
  missingSqliteDatabase,
  type OpenedDatabase,
  openSlashingDatabase,
} from "../antislashing/registry";
import type { SlashingDatabaseError, SlashingStore } from "../antislashing/store";
import type { WriteHealth } from "../antislashing/write-health";
import type { Config } from "../config/schema";
import type { CheckResult } from "../observability/health";
import type { Logger } from "../observability/log";
import type { NetworkConstants } from "../signing/network";
import { configuredNetworkOf } from "../signing/spec-config";
import { namingOption } from "./database-file";

export interface SlashingOpenOptions {
  /** "write": serve, import, migrate. "read": export, dry runs (antislashing/registry.ts). */
  readonly access: "write" | "read";
  /** `sigil slashing init`, `--init-slashing-protection`: create a missing database, bind it. */
  readonly initialize: boolean;
  /** sqlite: "background" moves WAL checkpoints off the event loop (the signer's choice). */
  readonly sqliteCheckpoints?: "inline" | "background";
  /** sqlite: the database on a thread of its own (antislashing/registry.ts; the signer's choice). */
  readonly sqliteThread?: boolean;
}

/**
 * The configured network, as slashing protection and signing see it: a named one, or a devnet's
 * spec config (read here; `config check` and loading report its problems first, config/validate.ts).
 */
export function configuredNetwork(config: Config): NetworkConstants {
  const resolved = configuredNetworkOf(config.network, config.network_config);
  if (!resolved.ok) {
    const problems = resolved.problems.map((p) => `${p.where}: ${p.message}`);
    throw new Error(`network configuration invalid: ${problems.join("; ")}`);
  }
  return resolved.network;
}

/**
 * Opens the configured slashing protection database through the checks of
 * antislashing/registry.ts (it exists, it is the file last written, it belongs to the configured
 * network); rejects with SlashingDatabaseError when one fails, and with DatabaseFileError (naming
 * antislashing.path and why) when the sqlite files cannot be opened.
 */
export async function openSlashingStore(
  config: Config,
  logger: Logger,
  options: SlashingOpenOptions,
): Promise<OpenedDatabase> {
  const network = configuredNetwork(config);
  try {
    return await openSlashingDatabase(config.antislashing, {
      logger,
      access: options.access,
      initialize: options.initialize,
      sqliteCheckpoints: options.sqliteCheckpoints,
      sqliteThread: options.sqliteThread,
      chain: { network: network.name, genesisValidatorsRoot: network.genesisValidatorsRoot },
    });
  } catch (error) {
    throw namingOption(error, "slashing protection database", "antislashing.path");
  }
}

/**
 * What serve, started on `config` without --init-slashing-protection, would refuse before opening
 * anything: a sqlite database that does not exist (the same error). The network backends are not
 * contacted here; `config check` reports this.
 */
export function missingSlashingDatabase(config: Config): SlashingDatabaseError | undefined {
  if (config.antislashing.backend !== "sqlite") return undefined;
  return missingSqliteDatabase(config.antislashing.path);
}

/**
 * The future-epoch bound of `antislashing.max_future_epochs` on the network's clock, or none (with
 * a start-up line saying so) when the genesis time is unknown.
 */
export function futureBound(
  config: Config,
  network: NetworkConstants,
  logger: Logger,
): FutureBound | undefined {
  const log = logger.child("antislashing");
  if (config.antislashing.backend === "noop") return undefined;
  if (network.genesisTime === undefined) {
    log.warn(
      "future-epoch bound OFF: network_config sets no genesis_time (nor the spec config a MIN_GENESIS_TIME), so the wall-clock epoch is unknown; blocks and attestations for any future epoch are recorded (set network_config.genesis_time)",
    );
    return undefined;
  }
  const bound: FutureBound = {
    clock: {
      genesisTime: network.genesisTime,
      secondsPerSlot: network.secondsPerSlot,
      slotsPerEpoch: BigInt(network.preset.SLOTS_PER_EPOCH),
    },
    maxFutureEpochs: BigInt(config.antislashing.max_future_epochs),
  };
  log.info("future-epoch bound", {
    max_future_epochs: config.antislashing.max_future_epochs,
    genesis_time: Number(network.genesisTime),
    seconds_per_slot: Number(network.secondsPerSlot),
    slots_per_epoch: network.preset.SLOTS_PER_EPOCH,
    ...(network.genesisTimeIsLowerBound
      ? {
          genesis_time_from:
            "MIN_GENESIS_TIME of the spec config: the earliest genesis, so the bound may be looser than max_future_epochs (set network_config.genesis_time for the exact one)",
        }
      : {}),
  });
  return bound;
}

/** The noop backend, in the start-up log and the health check. */
export const NOOP_WARNING =
  "antislashing.backend is noop: NOTHING protects these keys from double votes or surround votes; testing only";

/**
 * UP when the database answers and the last durable write did not fail. After a failed write it
 * stays DOWN until a write succeeds: a signature's record, or the probe made here (a write that
 * changes nothing, through the same path as a check's).
 */
export async function slashingHealth(
  store: SlashingStore,
  writes?: WriteHealth,
): Promise<CheckResult> {
  if (store.backend === "noop") {
    // Up, as nothing can fail; but a monitor reading this check should see that it protects nothing.
    return { status: "UP", data: { backend: "noop", warning: NOOP_WARNING } };
  }
  const started = performance.now();
  const failure = writes?.lastFailure ?? null;
  if (failure !== null) {
    try {
      await store.probeWrite();
      writes?.succeeded();
    } catch {
      return {
        status: "DOWN",
        data: { backend: store.backend, error: "the last write failed, and a new one fails too" },
      };
    }
  }
  try {
    await store.ping();
    const latency = Math.round((performance.now() - started) * 100) / 100;
    // Records are safe in the -wal meanwhile, but it grows without bound: someone must look.
    const upkeep = store.maintenance?.();
    if (upkeep?.checkpointFailing) {
      return {
        status: "DOWN",
        data: {
          backend: store.backend,
          error: `WAL checkpoints fail (${upkeep.checkpointFailing}): records are safe in the -wal file, which grows until one succeeds; check the database file's permissions and attributes (lsattr) and the disk`,
          wal_bytes: upkeep.walBytes,
        },
      };
    }
    return { status: "UP", data: { backend: store.backend, latency_ms: latency } };
  } catch (error) {
    return {
      status: "DOWN",
      data: { backend: store.backend, error: unavailableReason(error) },
    };
  }
}

/** What the health data says, in a few words: no paths beyond the database's own, no secrets. */
function unavailableReason(error: unknown): string {
  const name = error instanceof Error ? error.name : "";
  if (name === "DatabaseFileChangedError") {
    return "the database files changed on disk while open; restart required (see the log)";
  }
  if (name === "WalSyncError") return "a sync to disk failed; check the disk, then reboot";
  if (name === "SlashingThreadError") {
    return "the slashing protection thread stopped; restart required (see the log)";
  }
  return "database unreachable";
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
