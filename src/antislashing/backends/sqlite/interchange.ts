/**
 * Import and export of EIP-3076 interchanges for the sqlite slashing store (checks.ts).
 *
 * Import. The interchange is first streamed into TEMP staging tables in short transactions (the
 * main database is not locked meanwhile, and signing continues); a validation error or a broken
 * stream drops the staging tables and nothing is written. Then ONE immediate transaction re-checks
 * the genesis validators root, stores it if the database has none, and copies everything: all or
 * nothing. Exact duplicates (same slot or epochs and the same root, a missing root equal to a
 * missing root) are skipped, so re-importing a file changes nothing.
 *   Pruned validators: records below the floors that `prune` recorded are skipped (see maintenance.ts),
 * so that importing an old file again cannot lower the low watermarks and re-open what was pruned.
 *   Floors (block_floor, source_floor, target_floor) take part in the rules: where a validator
 * has one, it is the low watermark handed to rules.ts in place of the lowest record (ValidatorFloors
 * in store.ts). A prune sets them at the lowest record it keeps, so for pruning this changes no
 * decision. An import may carry them (Web3Signer's low watermarks), raised after its records and
 * never below the watermark the validator had; an import without them raises an existing floor
 * to the lowest record kept.
 *   Slashable data: imported records are kept as they are, even when slashable with respect to
 * each other or to the database (two roots for one slot, surround votes, no root). The complete
 * rules then refuse every new message that conflicts with any of them, and conditions 2, 4, 5 use
 * the minimum over everything kept (or the floor, see above). This is the "import successfully" option of the interchange
 * tests; with it all 38 files pass under `should_succeed_complete`, including the 21 steps flagged
 * `contains_slashable_data`. Nothing is minified: the export gives back every record.
 */
import type { Database } from "bun:sqlite";
import {
  assertPubkey,
  bytesEqual,
  bytesToHex,
  checkImportedValidator,
  hexToBytes,
} from "../../encoding";
import { interchangeSource } from "../../interchange";
import {
  type ImportReport,
  type InterchangeAttestation,
  type InterchangeBlock,
  type InterchangeSource,
  type InterchangeValidator,
  NothingToExportError,
  type PubkeyHex,
  SlashingImportError,
} from "../../store";
import { asBigint, asRoot, dec, enc, encFloor, type Row, type StoreAccess } from "./store-access";

/** Staged import rows are flushed to the TEMP tables in transactions of this many rows. */
const STAGE_BATCH = 5000;

let stagingCounter = 0;

export async function importInto(
  store: StoreAccess,
  source: InterchangeSource,
): Promise<ImportReport> {
  store.assertOpen();
  const gvrHex = source.metadata.genesis_validators_root;
  if (source.metadata.interchange_format_version !== "5") {
    throw new SlashingImportError(
      `unsupported interchange_format_version ${source.metadata.interchange_format_version}`,
    );
  }
  if (!/^0x[0-9a-fA-F]{64}$/.test(gvrHex)) {
    throw new SlashingImportError(
      `genesis_validators_root ${JSON.stringify(gvrHex)} is not 0x + 32 bytes`,
    );
  }
  const gvr = hexToBytes(gvrHex);
  const mismatch = (stored: Uint8Array) =>
    new SlashingImportError(
      `interchange genesis_validators_root ${bytesToHex(gvr)} does not match the database's ${bytesToHex(stored)}; nothing imported`,
    );
  const known = store.readGvr();
  if (known !== null && !bytesEqual(known, gvr)) throw mismatch(known);

  const stage = `sigil_import_${process.pid}_${++stagingCounter}`;
  const db = store.db;
  db.run(
    `CREATE TEMP TABLE ${stage}_v (idx INTEGER PRIMARY KEY, pubkey TEXT NOT NULL,
       block_floor INTEGER, source_floor INTEGER, target_floor INTEGER)`,
  );
  db.run(
    `CREATE TEMP TABLE ${stage}_b (idx INTEGER NOT NULL, slot INTEGER NOT NULL, signing_root BLOB)`,
  );
  db.run(
    `CREATE TEMP TABLE ${stage}_a (idx INTEGER NOT NULL, source_epoch INTEGER NOT NULL, target_epoch INTEGER NOT NULL, signing_root BLOB)`,
  );
  const report = { validators: 0, blocks: 0, attestations: 0 };
  try {
    let pendingValidators: [number, InterchangeValidator][] = [];
    let pendingBlocks: [number, InterchangeBlock][] = [];
    let pendingAttestations: [number, InterchangeAttestation][] = [];
    const flush = () => {
      if (store.isClosed())
        throw new Error("sqlite slashing protection store closed during an import");
      const v = pendingValidators;
      const b = pendingBlocks;
      const a = pendingAttestations;
      pendingValidators = [];
      pendingBlocks = [];
      pendingAttestations = [];
      // prepare(), not query(): query() caches statements per SQL text, and every import has
      // its own table names.
      const insV = db.prepare(
        `INSERT INTO ${stage}_v (idx, pubkey, block_floor, source_floor, target_floor)
         VALUES ($idx, $pubkey, $block, $source, $target)`,
      );
      const insB = db.prepare(
        `INSERT INTO ${stage}_b (idx, slot, signing_root) VALUES ($idx, $slot, $root)`,
      );
      const insA = db.prepare(
        `INSERT INTO ${stage}_a (idx, source_epoch, target_epoch, signing_root) VALUES ($idx, $s, $t, $root)`,
      );
      try {
        db.transaction(() => {
          for (const [idx, { pubkey, floors }] of v) {
            insV.run({
              idx,
              pubkey,
              block: encFloor(floors?.blockSlot),
              source: encFloor(floors?.sourceEpoch),
              target: encFloor(floors?.targetEpoch),
            });
          }
          for (const [idx, block] of b)
            insB.run({ idx, slot: enc(block.slot), root: block.signingRoot ?? null });
          for (const [idx, att] of a) {
            insA.run({
              idx,
              s: enc(att.sourceEpoch),
              t: enc(att.targetEpoch),
              root: att.signingRoot ?? null,
            });
          }
        })();
      } finally {
        insV.finalize();
        insB.finalize();
        insA.finalize();
      }
    };
    for await (const validator of source.validators()) {
      const idx = report.validators;
      checkImportedValidator(validator, idx);
      pendingValidators.push([idx, validator]);
      for (const block of validator.blocks) pendingBlocks.push([idx, block]);
      for (const att of validator.attestations) pendingAttestations.push([idx, att]);
      report.validators += 1;
      report.blocks += validator.blocks.length;
      report.attestations += validator.attestations.length;
      if (
        pendingBlocks.length + pendingAttestations.length + pendingValidators.length >=
        STAGE_BATCH
      )
        flush();
    }
    flush();
    db.transaction(() => {
      const stored = store.checkOrStoreGvr(gvr);
      if (!bytesEqual(stored, gvr)) throw mismatch(stored);
      db.run(
        `INSERT INTO validators (pubkey) SELECT pubkey FROM ${stage}_v WHERE true ON CONFLICT (pubkey) DO NOTHING`,
      );
      // Before the records: an imported floor never lowers the watermark the validator has now
      // (its floor, else its lowest record). Scalar max() is NULL when an argument is: a
      // validator without an imported floor keeps NULL here.
      db.run(
        `UPDATE ${stage}_v SET
           block_floor = max(block_floor, coalesce((SELECT coalesce(v.block_floor,
             (SELECT MIN(b.slot) FROM signed_blocks b WHERE b.validator_id = v.id))
             FROM validators v WHERE v.pubkey = ${stage}_v.pubkey), block_floor)),
           source_floor = max(source_floor, coalesce((SELECT coalesce(v.source_floor,
             (SELECT MIN(a.source_epoch) FROM signed_attestations a WHERE a.validator_id = v.id))
             FROM validators v WHERE v.pubkey = ${stage}_v.pubkey), source_floor)),
           target_floor = max(target_floor, coalesce((SELECT coalesce(v.target_floor,
             (SELECT MIN(a.target_epoch) FROM signed_attestations a WHERE a.validator_id = v.id))
             FROM validators v WHERE v.pubkey = ${stage}_v.pubkey), target_floor))
         WHERE block_floor IS NOT NULL OR source_floor IS NOT NULL OR target_floor IS NOT NULL`,
      );
      db.run(
        `INSERT INTO signed_blocks (validator_id, slot, signing_root)
         SELECT DISTINCT v.id, s.slot, s.signing_root
         FROM ${stage}_b s JOIN ${stage}_v sv ON sv.idx = s.idx JOIN validators v ON v.pubkey = sv.pubkey
         WHERE NOT EXISTS (SELECT 1 FROM signed_blocks b
                           WHERE b.validator_id = v.id AND b.slot = s.slot AND b.signing_root IS s.signing_root)
           AND (s.slot < v.block_floor) IS NOT TRUE`,
      );
      db.run(
        `INSERT INTO signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
         SELECT DISTINCT v.id, s.source_epoch, s.target_epoch, s.signing_root
         FROM ${stage}_a s JOIN ${stage}_v sv ON sv.idx = s.idx JOIN validators v ON v.pubkey = sv.pubkey
         WHERE NOT EXISTS (SELECT 1 FROM signed_attestations a
                           WHERE a.validator_id = v.id AND a.target_epoch = s.target_epoch
                             AND a.source_epoch = s.source_epoch AND a.signing_root IS s.signing_root)
           AND (s.target_epoch < v.target_floor
                AND s.source_epoch <= (SELECT MAX(k.source_epoch) FROM signed_attestations k
                                       WHERE k.validator_id = v.id AND k.target_epoch = v.target_floor)
               ) IS NOT TRUE`,
      );
      // After the records, so that none of this import's records is skipped by its own floors.
      // An imported floor (raised above) becomes the validator's. Without one, an existing
      // floor rises to the lowest record now kept: records imported with no floor vouch for
      // nothing below them, so EIP-3076 conditions 2, 4, 5 hold for them (ValidatorFloors).
      // Floors only rise; scalar max() is NULL when an argument is, hence the coalesces.
      db.run(
        `UPDATE validators SET
           block_floor = CASE WHEN f.b IS NOT NULL THEN max(f.b, coalesce(block_floor, f.b))
             ELSE max(block_floor, coalesce((SELECT MIN(slot) FROM signed_blocks
               WHERE validator_id = validators.id), block_floor)) END,
           source_floor = CASE WHEN f.s IS NOT NULL THEN max(f.s, coalesce(source_floor, f.s))
             ELSE max(source_floor, coalesce((SELECT MIN(source_epoch) FROM signed_attestations
               WHERE validator_id = validators.id), source_floor)) END,
           target_floor = CASE WHEN f.t IS NOT NULL THEN max(f.t, coalesce(target_floor, f.t))
             ELSE max(target_floor, coalesce((SELECT MIN(target_epoch) FROM signed_attestations
               WHERE validator_id = validators.id), target_floor)) END
         FROM (SELECT pubkey, max(block_floor) AS b, max(source_floor) AS s, max(target_floor) AS t
               FROM ${stage}_v GROUP BY pubkey) f
         WHERE validators.pubkey = f.pubkey
           AND coalesce(f.b, f.s, f.t, block_floor, source_floor, target_floor) IS NOT NULL`,
      );
    }).immediate();
  } finally {
    if (!store.isClosed()) {
      for (const suffix of ["v", "b", "a"]) db.run(`DROP TABLE IF EXISTS temp.${stage}_${suffix}`);
    }
  }
  // Its records stand for signatures made elsewhere, and the keys it comes with become active
  // as soon as it returns: durable first.
  await store.durability.barrier();
  return report;
}

export async function exportFrom(
  store: StoreAccess,
  pubkeys?: readonly PubkeyHex[],
): Promise<InterchangeSource> {
  store.assertOpen();
  for (const pubkey of pubkeys ?? []) assertPubkey(pubkey);
  const gvr = store.readGvr();
  if (gvr === null) {
    throw new NothingToExportError(
      "the slashing protection database has no genesis validators root yet (nothing was ever signed or imported): nothing to export",
    );
  }
  const targets: { id: bigint; pubkey: string }[] = [];
  if (pubkeys === undefined) {
    for (const row of store.db
      .query("SELECT id, pubkey FROM validators ORDER BY pubkey")
      .all() as Row[]) {
      targets.push({ id: asBigint(row.id) ?? 0n, pubkey: String(row.pubkey) });
    }
  } else {
    for (const pubkey of new Set(pubkeys)) {
      const id = store.validatorId(pubkey);
      if (id !== null) targets.push({ id, pubkey });
    }
  }
  return interchangeSource(
    { interchange_format_version: "5", genesis_validators_root: bytesToHex(gvr) },
    async function* () {
      for (const target of targets) {
        store.assertOpen();
        yield readValidator(store.db, target.id, target.pubkey);
      }
    },
  );
}

function readValidator(db: Database, id: bigint, pubkey: string): InterchangeValidator {
  const blocks = (
    db
      .query(
        "SELECT slot, signing_root FROM signed_blocks WHERE validator_id = $v ORDER BY slot, signing_root",
      )
      .all({ v: id }) as Row[]
  ).map((row): InterchangeBlock => {
    const slot = dec(asBigint(row.slot) ?? 0n);
    const root = asRoot(row.signing_root);
    return root === null ? { slot } : { slot, signingRoot: root };
  });
  const attestations = (
    db
      .query(
        `SELECT source_epoch, target_epoch, signing_root FROM signed_attestations
         WHERE validator_id = $v ORDER BY target_epoch, source_epoch, signing_root`,
      )
      .all({ v: id }) as Row[]
  ).map((row): InterchangeAttestation => {
    const sourceEpoch = dec(asBigint(row.source_epoch) ?? 0n);
    const targetEpoch = dec(asBigint(row.target_epoch) ?? 0n);
    const root = asRoot(row.signing_root);
    return root === null
      ? { sourceEpoch, targetEpoch }
      : { sourceEpoch, targetEpoch, signingRoot: root };
  });
  return { pubkey, blocks, attestations };
}
