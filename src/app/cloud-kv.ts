import type { SlashingStore } from "../antislashing/store";
import type { BlsBackend } from "../bls/backend";
import type { Config } from "../config/schema";
import type { WriteLimits } from "../http/routes/signer-keys";
import { checkBackupRecipients } from "../keys/cloud-kv/backup";
import { CloudKvKeygen } from "../keys/cloud-kv/keygen";
import { dropCloudKvKeys, syncCloudKvKeys } from "../keys/cloud-kv/loader";
import { CloudKvTable } from "../keys/cloud-kv/table";
import { CloudKvWriter } from "../keys/cloud-kv/writer";
import type { TableListing } from "../keys/inventory";
import type { KeyStore } from "../keys/key-store";
import type { Logger } from "../observability/log";
import type { SealService } from "../seal/service";
import { createDynamoClient } from "../storage/dynamodb/client";

export interface CloudKvWiring {
  /** Failures of the last load or refresh (no secrets), for health and metrics. */
  lastFailures(): readonly string[];
  /** Every item's pubkey, status and origin, for the inventory. */
  listTable(): Promise<readonly TableListing[]>;
  readonly keygen?: { service: CloudKvKeygen; limits: WriteLimits };
  readonly writer?: { service: CloudKvWriter; limits: WriteLimits };
  stop(): void;
}

/**
 * The cloud_kv key source (DESIGN §9): the table is checked at start-up; its keys are loaded
 * when the seal opens, refreshed every key_refresh_interval_minutes while unsealed, and dropped
 * from memory on seal.
 */
export async function wireCloudKv(
  config: Config,
  deps: {
    seal: SealService;
    keys: KeyStore;
    bls: BlsBackend;
    slashing: SlashingStore;
    logger: Logger;
    onFailures: (reasons: readonly string[]) => void;
  },
): Promise<CloudKvWiring | undefined> {
  const settings = config.key_sources.cloud_kv;
  if (!settings.table) return undefined;
  const log = deps.logger.child("cloud_kv");
  // Endpoint and credentials from the SDK's standard chain (AWS_ENDPOINT_URL_DYNAMODB, profiles…).
  const table = new CloudKvTable(createDynamoClient(), settings.table);
  await table.validate();
  let failures: readonly string[] = [];
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<void> | undefined;

  const sync = async (masterKey: Uint8Array, why: "unseal" | "refresh") => {
    const started = performance.now();
    const result = await syncCloudKvKeys({
      table,
      statusFilter: settings.status_filter,
      maxConcurrentReads: settings.max_concurrent_reads,
      masterKey,
      bls: deps.bls,
      keys: deps.keys,
      logger: log,
    });
    failures = result.reasons;
    deps.onFailures(result.reasons);
    log.info(why === "unseal" ? "cloud_kv keys loaded" : "cloud_kv keys refreshed", {
      loaded: result.loaded,
      added: result.added,
      removed: result.removed,
      failed: result.failed,
      seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
    });
  };

  const refresh = () => {
    const masterKey = deps.seal.currentMasterKey();
    // One refresh at a time: a slow scan is not stacked on by the next tick.
    if (!masterKey || running) return;
    running = sync(masterKey, "refresh")
      .catch((error: unknown) => {
        log.warn("cloud_kv refresh failed; keys loaded before stay in use", {
          error: error instanceof Error ? error.message : String(error),
        });
      })
      .finally(() => {
        running = undefined;
      });
  };

  const stopRefresh = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };

  deps.seal.attach({
    async unsealed(masterKey) {
      await sync(masterKey, "unseal");
      const minutes = settings.key_refresh_interval_minutes;
      if (minutes > 0) {
        stopRefresh();
        timer = setInterval(refresh, minutes * 60_000);
        timer.unref?.();
      }
    },
    sealed() {
      stopRefresh();
      const dropped = dropCloudKvKeys(deps.keys);
      log.info("cloud_kv keys dropped from memory", { dropped });
    },
  });
  const masterKey = () => deps.seal.currentMasterKey();
  const { keygen: keygenSettings, writable } = settings;
  if (keygenSettings.backup.enabled) checkBackupRecipients(keygenSettings.backup.recipients ?? []);
  const keygen = keygenSettings.enabled
    ? new CloudKvKeygen({
        table,
        keys: deps.keys,
        bls: deps.bls,
        masterKey,
        maxItemsPerRequest: keygenSettings.max_items_per_request,
        maxConcurrentKeygen: keygenSettings.max_concurrent_keygen,
        backupRecipients: keygenSettings.backup.enabled
          ? keygenSettings.backup.recipients
          : undefined,
        logger: log,
      })
    : undefined;
  const writer = writable.enabled
    ? new CloudKvWriter({
        table,
        keys: deps.keys,
        bls: deps.bls,
        slashing: deps.slashing,
        masterKey,
        maxItemsPerRequest: writable.max_items_per_request,
        maxConcurrentWrites: writable.max_concurrent_writes,
        logger: log,
      })
    : undefined;
  return {
    lastFailures: () => failures,
    listTable: () => table.listAll(settings.max_concurrent_reads),
    ...(keygen && {
      keygen: {
        service: keygen,
        limits: { timeoutMs: keygenSettings.request_timeout_seconds * 1000 },
      },
    }),
    ...(writer && {
      writer: {
        service: writer,
        limits: {
          timeoutMs: writable.request_timeout_seconds * 1000,
          maxBodyBytes: writable.max_request_body_bytes,
        },
      },
    }),
    stop: stopRefresh,
  };
}
