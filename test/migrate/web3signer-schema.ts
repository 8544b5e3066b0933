/**
 * Web3Signer's PostgreSQL slashing protection schema, rebuilt for tests from its migrations
 * (Consensys/web3signer, slashing-protection/src/main/resources/migrations/postgresql,
 * V00001 … V00012), so that a test can create a database exactly as a Web3Signer of a given
 * database_version left it. The stored procedure of V00009 (a bulk upsert of validators) is left
 * out: it changes no table and sigil never calls it.
 */
import type postgres from "postgres";

interface Step {
  readonly version: number;
  readonly sql: string;
}

const STEPS: readonly Step[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE validators (
        id SERIAL PRIMARY KEY,
        public_key BYTEA NOT NULL UNIQUE
      );
      CREATE TABLE signed_blocks (
        validator_id INTEGER NOT NULL REFERENCES validators (id),
        slot NUMERIC(20) NOT NULL,
        signing_root BYTEA,
        UNIQUE (validator_id, slot)
      );
      CREATE TABLE signed_attestations (
        validator_id INTEGER REFERENCES validators (id),
        source_epoch NUMERIC(20) NOT NULL,
        target_epoch NUMERIC(20) NOT NULL,
        signing_root BYTEA,
        UNIQUE (validator_id, target_epoch)
      );`,
  },
  {
    // Uniqueness dropped for a while (imports of slashable data), row ids added.
    version: 2,
    sql: `
      ALTER TABLE signed_blocks DROP CONSTRAINT signed_blocks_validator_id_slot_key;
      ALTER TABLE signed_attestations
        DROP CONSTRAINT signed_attestations_validator_id_target_epoch_key;
      ALTER TABLE signed_blocks ADD COLUMN id SERIAL PRIMARY KEY;
      ALTER TABLE signed_attestations ADD COLUMN id SERIAL PRIMARY KEY;`,
  },
  {
    version: 3,
    sql: `
      CREATE TABLE low_watermarks (
        validator_id INTEGER NOT NULL UNIQUE REFERENCES validators (id),
        slot NUMERIC(20),
        target_epoch NUMERIC(20),
        source_epoch NUMERIC(20)
      );`,
  },
  {
    version: 4,
    sql: `
      CREATE TABLE metadata (
        id INTEGER PRIMARY KEY,
        genesis_validators_root BYTEA NOT NULL
      );`,
  },
  {
    version: 5,
    sql: `
      ALTER TABLE low_watermarks ADD CONSTRAINT both_epochs_set_or_null CHECK (
        (source_epoch IS NULL) = (target_epoch IS NULL));`,
  },
  {
    version: 6,
    sql: `
      CREATE INDEX ON signed_attestations (validator_id, target_epoch);
      CREATE INDEX ON signed_blocks (validator_id, slot);`,
  },
  {
    version: 7,
    sql: `
      CREATE TABLE database_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL);
      INSERT INTO database_version (id, version) VALUES (1, 7);`,
  },
  {
    version: 8,
    sql: `
      ALTER TABLE signed_blocks ADD CONSTRAINT unique_signed_block UNIQUE (validator_id, slot);
      ALTER TABLE signed_attestations
        ADD CONSTRAINT unique_signed_attestation UNIQUE (validator_id, target_epoch);
      UPDATE database_version SET version = 8 WHERE id = 1;`,
  },
  { version: 9, sql: "UPDATE database_version SET version = 9 WHERE id = 1;" },
  {
    version: 10,
    sql: `
      ALTER TABLE validators ADD COLUMN enabled BOOLEAN NOT NULL DEFAULT true;
      UPDATE database_version SET version = 10 WHERE id = 1;`,
  },
  {
    version: 11,
    sql: `
      ALTER SEQUENCE signed_attestations_id_seq AS bigint;
      ALTER TABLE signed_attestations ALTER COLUMN id TYPE bigint;
      ALTER SEQUENCE signed_blocks_id_seq AS bigint;
      ALTER TABLE signed_blocks ALTER COLUMN id TYPE bigint;
      UPDATE database_version SET version = 11 WHERE id = 1;`,
  },
  {
    // A database-wide ceiling; a trigger keeps it above every low watermark.
    version: 12,
    sql: `
      ALTER TABLE metadata
        ADD COLUMN high_watermark_epoch NUMERIC(20),
        ADD COLUMN high_watermark_slot NUMERIC(20);
      CREATE FUNCTION check_high_watermarks() RETURNS TRIGGER AS $$
      BEGIN
        IF NEW.high_watermark_slot <= (SELECT max(slot) FROM low_watermarks) THEN
          RAISE EXCEPTION 'high_watermark_slot must be above every low watermark slot';
        END IF;
        IF NEW.high_watermark_epoch <=
            (SELECT greatest(max(target_epoch), max(source_epoch)) FROM low_watermarks) THEN
          RAISE EXCEPTION 'high_watermark_epoch must be above every low watermark epoch';
        END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql;
      CREATE TRIGGER check_before_insert_or_update BEFORE INSERT OR UPDATE ON metadata
        FOR EACH ROW EXECUTE PROCEDURE check_high_watermarks();
      UPDATE database_version SET version = 12 WHERE id = 1;`,
  },
];

export const LATEST_WEB3SIGNER_VERSION = 12;

/** Applies Web3Signer's migrations 1 … `version` in the connection's current schema. */
export async function createWeb3SignerSchema(
  sql: postgres.Sql,
  version = LATEST_WEB3SIGNER_VERSION,
): Promise<void> {
  for (const step of STEPS) {
    if (step.version <= version) await sql.unsafe(step.sql);
  }
}
