/**
 * The sqlite slashing protection schema, as an ordered list of migrations (store.ts runs them with
 * storage/sqlite/migrate.ts). Slots and epochs are stored as uint64 - 2^63 (see checks.ts).
 */
import type { SqliteMigration } from "../../../storage/sqlite/migrate";

/** Append-only: never edit a released migration, add a new one. */
export const MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    description: "metadata, validators, signed blocks and attestations",
    sql: [
      `CREATE TABLE metadata (
         key   TEXT PRIMARY KEY NOT NULL,
         value BLOB NOT NULL
       ) STRICT, WITHOUT ROWID`,
      `CREATE TABLE validators (
         id     INTEGER PRIMARY KEY,
         pubkey TEXT NOT NULL UNIQUE CHECK (length(pubkey) = 98 AND pubkey GLOB '0x*')
       ) STRICT`,
      // slot/epochs: uint64 - 2^63 (see the module comment). signing_root NULL: imported without one.
      `CREATE TABLE signed_blocks (
         validator_id INTEGER NOT NULL REFERENCES validators (id),
         slot         INTEGER NOT NULL,
         signing_root BLOB CHECK (signing_root IS NULL OR length(signing_root) = 32)
       ) STRICT`,
      "CREATE INDEX signed_blocks_by_slot ON signed_blocks (validator_id, slot)",
      `CREATE TABLE signed_attestations (
         validator_id INTEGER NOT NULL REFERENCES validators (id),
         source_epoch INTEGER NOT NULL,
         target_epoch INTEGER NOT NULL,
         signing_root BLOB CHECK (signing_root IS NULL OR length(signing_root) = 32)
       ) STRICT`,
      "CREATE INDEX signed_attestations_by_target ON signed_attestations (validator_id, target_epoch, source_epoch)",
      "CREATE INDEX signed_attestations_by_source ON signed_attestations (validator_id, source_epoch, target_epoch)",
      `CREATE VIEW readable_signed_blocks AS
         SELECT v.pubkey, b.slot + 9223372036854775807 + 1 AS slot,
                '0x' || lower(hex(b.signing_root)) AS signing_root
         FROM signed_blocks b JOIN validators v ON v.id = b.validator_id`,
      `CREATE VIEW readable_signed_attestations AS
         SELECT v.pubkey, a.source_epoch + 9223372036854775807 + 1 AS source_epoch,
                a.target_epoch + 9223372036854775807 + 1 AS target_epoch,
                '0x' || lower(hex(a.signing_root)) AS signing_root
         FROM signed_attestations a JOIN validators v ON v.id = a.validator_id`,
    ],
  },
  {
    version: 2,
    description: "pruning floors: imports skip history below what pruning kept",
    sql: [
      // The lowest slot / target epoch kept by the prunes that removed blocks / attestations of
      // the validator (encoded like the records; NULL: never pruned). See `prune`.
      "ALTER TABLE validators ADD COLUMN block_floor INTEGER",
      "ALTER TABLE validators ADD COLUMN target_floor INTEGER",
    ],
  },
  {
    version: 3,
    description: "source floor; floors take part in the low-watermark rules (imported watermarks)",
    sql: [
      // Raised only by an import that carries floors (ValidatorFloors in store.ts), e.g. the
      // low watermarks of a Web3Signer database. Encoded like the records.
      "ALTER TABLE validators ADD COLUMN source_floor INTEGER",
    ],
  },
  {
    version: 4,
    description: "a floor is the low watermark, in place of the lowest record",
    sql: [
      // Until v3 the watermark was the larger of floor and lowest record; from v4 a floor alone
      // is (ValidatorFloors in store.ts). Raising every floor to that larger value first means an
      // upgrade changes no decision: only an import made afterwards can leave a floor below the
      // lowest record.
      `UPDATE validators SET block_floor = max(block_floor, coalesce(
         (SELECT MIN(slot) FROM signed_blocks WHERE validator_id = validators.id), block_floor))
       WHERE block_floor IS NOT NULL`,
      `UPDATE validators SET source_floor = max(source_floor, coalesce(
         (SELECT MIN(source_epoch) FROM signed_attestations WHERE validator_id = validators.id),
         source_floor))
       WHERE source_floor IS NOT NULL`,
      `UPDATE validators SET target_floor = max(target_floor, coalesce(
         (SELECT MIN(target_epoch) FROM signed_attestations WHERE validator_id = validators.id),
         target_floor))
       WHERE target_floor IS NOT NULL`,
    ],
  },
  {
    version: 5,
    description: "database-wide low and high watermarks (watermark-repair)",
    sql: [
      // One row at most (watermarks.ts). Decimal text, exact over uint64 and readable as it is;
      // NULL: none. An older sigil refuses this schema, so none of them signs past a bound it
      // cannot see.
      `CREATE TABLE database_watermarks (
         singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
         low_epoch  TEXT, low_slot  TEXT,
         high_epoch TEXT, high_slot TEXT,
         CHECK ((low_epoch IS NULL) = (low_slot IS NULL)),
         CHECK ((high_epoch IS NULL) = (high_slot IS NULL))
       ) STRICT`,
    ],
  },
];

export const SQLITE_SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
