import type { SlashingStore } from "../antislashing/store";
import {
  type DatabaseWatermarks,
  describeWatermark,
  highWatermarkBody,
} from "../antislashing/watermarks";
import { SigilError } from "../errors";
import type { Logger } from "../observability/log";

/** How often the signer reads the watermarks again for its metrics (another instance may change them). */
export const WATERMARK_METRIC_REFRESH_MS = 30_000;

/**
 * The database-wide watermarks (antislashing/watermarks.ts) as the signer shows them: read from
 * the database for `GET /api/v1/eth2/highWatermark`, and kept in memory, refreshed every 30 s,
 * for the gauges (which read memory only). Checks never use this copy: each store applies the
 * stored watermarks in its own atomic step.
 */
export interface WatermarkView {
  /** Last read; undefined before the first read answered. */
  current(): DatabaseWatermarks | undefined;
  /** The high watermark's body, read now; 503 slashing_db_unavailable when it cannot be. */
  highWatermark(): Promise<{ epoch?: string; slot?: string }>;
  stop(): void;
}

export function watchWatermarks(
  store: SlashingStore,
  logger: Logger,
  refreshMs = WATERMARK_METRIC_REFRESH_MS,
): WatermarkView {
  const log = logger.child("antislashing");
  let current: DatabaseWatermarks | undefined;
  const read = async () => {
    current = await store.databaseWatermarks();
    return current;
  };
  const refresh = () =>
    read().catch((error: unknown) =>
      log.debug("could not read the watermarks for the metrics", { error: String(error) }),
    );
  // At start-up, a bound is worth a line: a signer that signs nothing beyond it should say so.
  void read().then(
    (found) => {
      if (found.low === undefined && found.high === undefined) return;
      log.info("slashing protection database watermarks (sigil slashing watermark-repair)", {
        low: describeWatermark(found.low),
        high: describeWatermark(found.high),
      });
    },
    (error: unknown) =>
      log.debug("could not read the watermarks for the metrics", { error: String(error) }),
  );
  const timer = setInterval(refresh, refreshMs);
  timer.unref?.();
  return {
    current: () => current,
    async highWatermark() {
      try {
        return highWatermarkBody(await read());
      } catch (error) {
        log.error("slashing protection database unavailable", {
          backend: store.backend,
          error: error instanceof Error ? error.message : String(error),
        });
        throw new SigilError(
          "slashing_db_unavailable",
          "slashing protection database unavailable: the high watermark cannot be read",
        );
      }
    },
    stop: () => clearInterval(timer),
  };
}
