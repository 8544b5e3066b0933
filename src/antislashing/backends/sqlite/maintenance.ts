/** Upkeep of the sqlite slashing store's history: pruning. */
import { asBigint, dec, enc, type Row, type StoreAccess } from "./store-access";

/**
 * Keeps, per validator, the blocks of the newest `epochs * 32` slots (slot > max slot - 32·epochs)
 * and the attestations of the newest `epochs` target epochs (target > max target - epochs); one
 * short transaction per validator.
 *
 * Sound: after pruning, every deleted block has a slot below the lowest slot kept, and every
 * deleted attestation a target below the lowest target kept, so rules 2 and 6 refuse anything
 * that could conflict with them by slot or target. For surround votes one more fact is needed:
 * a new vote with source >= min kept source cannot surround a deleted vote only if every deleted
 * source is <= that minimum. That always holds for a non-slashable history (a kept vote with a
 * larger target and a smaller source would surround the deleted one), but an imported history
 * can be slashable; for such a validator its attestations are left unpruned.
 *
 * Floors. Deleting records raises MIN(), and a later import of older history would lower it
 * again, re-opening every pruned slot and target. So a prune that deletes blocks (attestations)
 * records the lowest slot (target) it kept in the validator's `block_floor` (`target_floor`);
 * floors only rise, and a record always exists at each floor (a prune keeps the newest record,
 * and a later one either keeps the floor record or records a higher floor). An import then
 * skips, for that validator:
 *   - blocks with slot < block_floor: every slot <= block_floor is refused by rule 2 anyway;
 *   - attestations (s', t') with t' < target_floor and s' <= the largest source F.s recorded at
 *     target_floor: a new (s, t) with t <= target_floor is refused (rule 6 or a double vote at
 *     the floor), and one with s < s' <= F.s and t > target_floor surrounds F (rule 3); nothing
 *     else can conflict with (s', t').
 * An attestation below the floor with s' > F.s is slashable with respect to F (F surrounds it)
 * and is stored as before: a vote that must not surround it is not covered by F. Storing it
 * lowers MIN(target) but re-opens nothing: a new (s, t) with t' < t < target_floor must have
 * s >= s' not to surround it and s <= F.s not to be surrounded by F, which cannot both hold.
 * Pruned sources are <= every kept source, so these floors keep that invariant: every skipped
 * or pruned attestation has a source <= the floor record's. A floor raised by an import may have
 * no record at it: then no attestation is skipped (the MAX() is NULL), only blocks below it,
 * which its own rule refuses anyway. An imported source floor below the lowest kept source
 * stays where it is: a vote with a source below every kept one and a target above target_floor
 * surrounds the record at target_floor (rule 3), so nothing deleted is re-opened.
 */
export async function pruneHistory(
  store: StoreAccess,
  epochs: bigint,
): Promise<{ blocks: number; attestations: number }> {
  store.assertOpen();
  if (typeof epochs !== "bigint" || epochs < 1n)
    throw new RangeError("prune: epochs must be a bigint >= 1");
  const removed = { blocks: 0, attestations: 0 };
  const ids = (store.db.query("SELECT id FROM validators ORDER BY id").all() as Row[]).map(
    (r) => asBigint(r.id) ?? 0n,
  );
  const db = store.db;
  for (const id of ids) {
    if (store.isClosed()) break;
    db.transaction(() => {
      const maxSlotRow = db
        .query("SELECT slot FROM signed_blocks WHERE validator_id = $v ORDER BY slot DESC LIMIT 1")
        .get({ v: id }) as Row | null;
      const maxSlot = asBigint(maxSlotRow?.slot ?? null);
      if (maxSlot !== null) {
        const cutoff = dec(maxSlot) - epochs * 32n;
        if (cutoff >= 0n) {
          const result = db
            .query("DELETE FROM signed_blocks WHERE validator_id = $v AND slot <= $cutoff")
            .run({ v: id, cutoff: enc(cutoff) });
          removed.blocks += result.changes;
          if (result.changes > 0) {
            db.query(
              `UPDATE validators SET block_floor =
                 (SELECT max(coalesce(validators.block_floor, m.floor), m.floor)
                  FROM (SELECT MIN(slot) AS floor FROM signed_blocks WHERE validator_id = $v) m)
               WHERE id = $v`,
            ).run({ v: id });
          }
        }
      }
      const maxTargetRow = db
        .query(
          `SELECT target_epoch FROM signed_attestations INDEXED BY signed_attestations_by_target
           WHERE validator_id = $v ORDER BY target_epoch DESC LIMIT 1`,
        )
        .get({ v: id }) as Row | null;
      const maxTarget = asBigint(maxTargetRow?.target_epoch ?? null);
      if (maxTarget === null) return;
      const cutoff = dec(maxTarget) - epochs;
      if (cutoff < 0n) return;
      const bounds = db
        .query(
          `SELECT
             (SELECT MAX(source_epoch) FROM signed_attestations
                WHERE validator_id = $v AND target_epoch <= $cutoff) AS deleted_max_source,
             (SELECT MIN(source_epoch) FROM signed_attestations
                WHERE validator_id = $v AND target_epoch > $cutoff) AS kept_min_source`,
        )
        .get({ v: id, cutoff: enc(cutoff) }) as Row;
      const deletedMax = asBigint(bounds.deleted_max_source);
      const keptMin = asBigint(bounds.kept_min_source);
      if (deletedMax === null || keptMin === null || deletedMax > keptMin) return;
      const result = db
        .query(
          "DELETE FROM signed_attestations WHERE validator_id = $v AND target_epoch <= $cutoff",
        )
        .run({ v: id, cutoff: enc(cutoff) });
      removed.attestations += result.changes;
      if (result.changes > 0) {
        db.query(
          `UPDATE validators SET target_floor =
             (SELECT max(coalesce(validators.target_floor, m.floor), m.floor)
              FROM (SELECT MIN(target_epoch) AS floor FROM signed_attestations WHERE validator_id = $v) m)
           WHERE id = $v`,
        ).run({ v: id });
      }
    }).immediate();
  }
  return removed;
}
