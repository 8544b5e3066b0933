import type { BlsBackend } from "../bls/backend";
import type { Config } from "../config/schema";
import type { FeatureLimits } from "../http/route";
import { checkBackupRecipients } from "../keys/cloud-kv/backup";
import { CloudKvKeygen } from "../keys/cloud-kv/keygen";
import { CloudKvTable, WRITING_STATUS } from "../keys/cloud-kv/table";
import type { TableListing } from "../keys/inventory";
import type { KeyService } from "../keys/key-service";
import { CloudKvSource } from "../keys/sources/cloud-kv";
import type { Logger } from "../observability/log";
import type { SealService } from "../seal/service";
import { createDynamoClient } from "../storage/dynamodb/client";

export interface CloudKvWiring {
  readonly source: CloudKvSource;
  /** Every item's pubkey, status and origin, for the inventory. */
  listTable(): Promise<readonly TableListing[]>;
  /**
   * Binds the source to the key service: its keys load at unseal, refresh every
   * key_refresh_interval_minutes while unsealed, and leave memory on seal. Returns the services
   * of the write routes that are enabled, with their limits.
   */
  start(service: KeyService): {
    keygen?: { service: CloudKvKeygen; limits: FeatureLimits };
    writer?: { service: KeyService; limits: FeatureLimits };
  };
  stop(): void;
}

/**
 * The cloud_kv key source (docs/architecture.md, "cloud_kv key source"): the table is checked at
 * start-up, before anything loads; `start` attaches it to the seal once the key service exists.
 */
export async function wireCloudKv(
  config: Config,
  deps: { seal: SealService; bls: BlsBackend; logger: Logger },
): Promise<CloudKvWiring | undefined> {
  const settings = config.key_sources.cloud_kv;
  if (!settings.table) return undefined;
  const log = deps.logger.child("cloud_kv");
  // Endpoint and credentials from the SDK's standard chain (AWS_ENDPOINT_URL_DYNAMODB, profiles…).
  const table = new CloudKvTable(createDynamoClient(), settings.table);
  await table.validate();
  const { keygen: keygenSettings, writable } = settings;
  if (keygenSettings.backup.enabled) checkBackupRecipients(keygenSettings.backup.recipients ?? []);
  if (settings.status_filter.includes(WRITING_STATUS))
    log.warn("status_filter lists a status sigil never loads: items being written have it", {
      status: WRITING_STATUS,
    });
  const writes = keygenSettings.enabled || writable.enabled;
  const source = new CloudKvSource({
    table,
    statusFilter: settings.status_filter,
    maxConcurrentReads: settings.max_concurrent_reads,
    bls: deps.bls,
    masterKey: () => deps.seal.currentMasterKey(),
    logger: log,
    ...(writes
      ? {
          writes: {
            // Imports (keygen passes max_concurrent_keygen with each batch).
            concurrency: writable.max_concurrent_writes,
            deletable: writable.enabled,
          },
        }
      : {}),
  });
  let timer: ReturnType<typeof setInterval> | undefined;
  const stopRefresh = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };

  return {
    source,
    listTable: () => table.listAll(settings.max_concurrent_reads),
    start(service) {
      let refreshing = false;
      const sync = async (why: "unseal" | "refresh") => {
        const started = performance.now();
        const result = await service.load("cloud_kv");
        log.info(why === "unseal" ? "cloud_kv keys loaded" : "cloud_kv keys refreshed", {
          loaded: result.loaded,
          added: result.added,
          removed: result.removed,
          failed: result.failures.length,
          seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
        });
      };
      const refresh = () => {
        // One refresh at a time: a slow scan is not stacked on by the next tick.
        if (!source.ready() || refreshing) return;
        refreshing = true;
        sync("refresh")
          .catch((error: unknown) => {
            log.warn("cloud_kv refresh failed; keys loaded before stay in use", {
              error: error instanceof Error ? error.message : String(error),
            });
          })
          .finally(() => {
            refreshing = false;
          });
      };
      deps.seal.attach({
        async unsealed() {
          await sync("unseal");
          const minutes = settings.key_refresh_interval_minutes;
          if (minutes > 0) {
            stopRefresh();
            timer = setInterval(refresh, minutes * 60_000);
            timer.unref?.();
          }
        },
        sealed() {
          stopRefresh();
          const dropped = service.drop("cloud_kv");
          log.info("cloud_kv keys dropped from memory", { dropped });
        },
      });
      const keygen = keygenSettings.enabled
        ? new CloudKvKeygen({
            service,
            bls: deps.bls,
            maxConcurrentKeygen: keygenSettings.max_concurrent_keygen,
            backupRecipients: keygenSettings.backup.enabled
              ? keygenSettings.backup.recipients
              : undefined,
            logger: log,
          })
        : undefined;
      return {
        ...(keygen && {
          keygen: {
            service: keygen,
            limits: {
              timeoutMs: keygenSettings.request_timeout_seconds * 1000,
              maxItems: keygenSettings.max_items_per_request,
              maxItemsOption: "key_sources.cloud_kv.keygen.max_items_per_request",
            },
          },
        }),
        ...(writable.enabled && {
          writer: {
            service,
            limits: {
              timeoutMs: writable.request_timeout_seconds * 1000,
              maxBodyBytes: writable.max_request_body_bytes,
              maxItems: writable.max_items_per_request,
              maxItemsOption: "key_sources.cloud_kv.writable.max_items_per_request",
            },
          },
        }),
      };
    },
    stop: stopRefresh,
  };
}
