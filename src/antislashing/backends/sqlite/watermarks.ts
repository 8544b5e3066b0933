/**
 * The sqlite store's database-wide watermarks (../../watermarks.ts): the one row of
 * `database_watermarks` (schema 5), read inside every check's transaction and written by
 * `sigil slashing watermark-repair`, which holds the writer lock (no signer runs beside it).
 */
import type { Database } from "bun:sqlite";
import { isUint64 } from "../../encoding";
import {
  applyWatermarkChange,
  type DatabaseWatermarks,
  NO_WATERMARKS,
  type Watermark,
  type WatermarkChange,
} from "../../watermarks";
import type { BatchParticipant } from "./group-commit";

interface Row {
  low_epoch: string | null;
  low_slot: string | null;
  high_epoch: string | null;
  high_slot: string | null;
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

function uint64(value: string, column: string): bigint {
  const parsed = DECIMAL.test(value) ? BigInt(value) : -1n;
  if (!isUint64(parsed)) {
    throw new Error(
      `sqlite: database_watermarks.${column} is not a uint64 (${JSON.stringify(value)})`,
    );
  }
  return parsed;
}

function mark(
  epoch: string | null,
  slot: string | null,
  side: "low" | "high",
): Watermark | undefined {
  if (epoch === null || slot === null) return undefined;
  return { epoch: uint64(epoch, `${side}_epoch`), slot: uint64(slot, `${side}_slot`) };
}

/** Inside the caller's transaction. A reader of a database older than schema 5 sees none. */
export function readDatabaseWatermarks(db: Database): DatabaseWatermarks {
  let row: Row | null;
  try {
    row = db
      .query("SELECT low_epoch, low_slot, high_epoch, high_slot FROM database_watermarks")
      .get() as Row | null;
  } catch (error) {
    if (String(error).includes("no such table")) return NO_WATERMARKS;
    throw error;
  }
  if (row === null) return NO_WATERMARKS;
  const low = mark(row.low_epoch, row.low_slot, "low");
  const high = mark(row.high_epoch, row.high_slot, "high");
  return { ...(low && { low }), ...(high && { high }) };
}

/** Applies `change` inside the caller's transaction (the store's group commit makes it durable). */
export function writeWatermarkChange(db: Database, change: WatermarkChange): DatabaseWatermarks {
  const next = applyWatermarkChange(readDatabaseWatermarks(db), change);
  db.query(
    `INSERT INTO database_watermarks (singleton, low_epoch, low_slot, high_epoch, high_slot)
         VALUES (1, $lowEpoch, $lowSlot, $highEpoch, $highSlot)
         ON CONFLICT (singleton) DO UPDATE SET low_epoch = excluded.low_epoch,
           low_slot = excluded.low_slot, high_epoch = excluded.high_epoch,
           high_slot = excluded.high_slot`,
  ).run({
    lowEpoch: next.low?.epoch.toString() ?? null,
    lowSlot: next.low?.slot.toString() ?? null,
    highEpoch: next.high?.epoch.toString() ?? null,
    highSlot: next.high?.slot.toString() ?? null,
  });
  return next;
}

/**
 * The watermarks as a batch's checks read them: once per batch, not once per check. Inside the
 * batch's immediate transaction no other connection can write (the write lock is ours), and this
 * connection changes them only through write(), which forgets what was read. Forgotten too when
 * a check rolls back (it may have written them) and when the batch ends: nothing read here
 * outlives the transaction it was read in.
 */
export class BatchWatermarks implements BatchParticipant {
  private current: DatabaseWatermarks | undefined;

  constructor(private readonly db: Database) {}

  /** Inside a batch's transaction. */
  read(): DatabaseWatermarks {
    this.current ??= readDatabaseWatermarks(this.db);
    return this.current;
  }

  /** writeWatermarkChange, inside a batch's transaction. */
  write(change: WatermarkChange): DatabaseWatermarks {
    this.current = undefined;
    return writeWatermarkChange(this.db, change);
  }

  checkEnded(kept: boolean): void {
    if (!kept) this.current = undefined;
  }

  batchEnded(): void {
    this.current = undefined;
  }
}
