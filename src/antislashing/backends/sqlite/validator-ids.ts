import type { BatchParticipant } from "./group-commit";

/**
 * The validators' row ids (pubkey → `validators.id`) the store's checks have seen committed, so
 * that a check after the first one of a validator skips the lookup (a statement per check).
 *
 * Why a remembered id stays right while the store is open:
 * - No path deletes a row of `validators` or changes its id or pubkey: checks and imports only
 *   insert (an import's `ON CONFLICT (pubkey) DO NOTHING`), pruning only raises the floors,
 *   migrations run before the store opens. And without deletes SQLite never hands a rowid out
 *   twice (a new row gets the largest one plus one).
 * - No other process writes the file meanwhile: a writer store holds the writer lock and the main
 *   file's flock until close, so `sigil slashing import`, prune, watermark-repair or a second
 *   signer are refused until it ends; readers (export, dry runs) write nothing. The next writer
 *   opens the file with an empty map.
 * - Only ids whose row is committed are remembered. An id a check reads or inserts is held aside
 *   until the check ends with its writes kept (a check rolled back to its savepoint may have
 *   inserted the row it saw), then until the batch commits (a failed COMMIT drops the batch's
 *   rows, and their ids would be handed out again). An id remembered from an uncommitted row
 *   could later name another validator's row: its history would be read for this one.
 *
 * Memory: one entry per validator that signed through this process (~200 bytes each: 20 MB at
 * 100,000 validators).
 */
export class ValidatorIds implements BatchParticipant {
  private readonly committed = new Map<string, bigint>();
  /** Seen by the check running now. */
  private readonly inCheck: [string, bigint][] = [];
  /** Seen by the batch's checks that ended with their writes kept. */
  private readonly inBatch: [string, bigint][] = [];

  /** The id, when a committed row is known. */
  get(pubkey: string): bigint | undefined {
    return this.committed.get(pubkey);
  }

  /** The check running now read or inserted `id` for `pubkey`. */
  seen(pubkey: string, id: bigint): void {
    this.inCheck.push([pubkey, id]);
  }

  checkEnded(kept: boolean): void {
    if (kept) this.inBatch.push(...this.inCheck);
    this.inCheck.length = 0;
  }

  batchEnded(committed: boolean): void {
    if (committed) for (const [pubkey, id] of this.inBatch) this.committed.set(pubkey, id);
    this.inBatch.length = 0;
    this.inCheck.length = 0;
  }
}
