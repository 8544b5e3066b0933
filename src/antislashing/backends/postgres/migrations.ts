/**
 * The PostgreSQL schema of the slashing protection database, as an ordered list of migrations.
 *
 * Frozen. Each migration is literal SQL, exactly as it ran on the databases it migrated: a fresh
 * database must end up the same, so a released migration is never edited (its SHA-256 is pinned
 * in test/storage/frozen-migrations.test.ts) and a change is a new migration. V3 and V4 replace
 * the two check functions whole (CREATE OR REPLACE), and V5 the attestation one, so each carries
 * its full text. V6 leaves them as they are and adds the two the signer calls from then on, which
 * apply the database-wide watermarks (watermark-repair) and then call them.
 *
 * Types. Slots and epochs are uint64 and stored as `sigil_u64`, a domain over numeric(20,0)
 * limited to [0, 2^64 - 1]: exact, ordered like the numbers themselves, readable by anyone who
 * queries the tables, and checked by the database. (A bigint with a 2^63 offset would be smaller
 * but every ad-hoc query, export or comparison would have to remember the offset.) Keys and
 * roots are bytea with length checks. A NULL signing root is a record imported without one: it
 * never equals any root, so re-signing that slot or target is always refused.
 *
 * Records are not unique per slot / target: an interchange may carry slashable data, and the
 * complete strategy keeps every record (a slot holding two different roots refuses every block
 * at that slot, as it should).
 *
 * Locking. Every check runs as ONE statement (`SELECT * FROM sigil_check_…(…)`), so it is its
 * own transaction (or shares one with the other attestation checks of its batch, each of another
 * validator, locked in public-key order: attestation-batch.ts), and the function serialises on
 * the validator's row in `sigil_validators`
 * (`FOR NO KEY UPDATE`). A validator seen for the first time has no row to lock: the function
 * decides on an empty history, then inserts the row with `ON CONFLICT DO NOTHING`. If another
 * transaction inserted it first, the insert waits for that transaction and does nothing, and the
 * function starts over, now locking the committed row and seeing its records. This relies on
 * READ COMMITTED, where each statement of a plpgsql function takes a fresh snapshot, so the
 * records read after the lock include those of the previous holder. (Under REPEATABLE READ the
 * whole function would read one snapshot taken before the lock was granted and could miss them:
 * the sessions ask for READ COMMITTED at connect, and the functions raise under any other
 * level rather than decide on a stale snapshot.) A refused check writes nothing. Row locks, unlike
 * advisory locks, do not use the shared lock table, so an import may hold the locks of 100 000
 * validators in one transaction.
 *
 * The genesis validators root lives in the single row of `sigil_metadata`, written once (by the
 * first accepted check or the first import) with `ON CONFLICT DO NOTHING` and then re-read, so
 * two signers starting on an empty database with different roots cannot both win.
 */

import type { Migration } from "../../../storage/postgres/migrate";

export type { Migration };

const V1 = /* sql */ `
CREATE DOMAIN sigil_u64 AS numeric(20, 0)
  CHECK (VALUE >= 0 AND VALUE <= 18446744073709551615);

CREATE DOMAIN sigil_root AS bytea
  CHECK (octet_length(VALUE) = 32);

CREATE TABLE sigil_metadata (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  genesis_validators_root sigil_root NOT NULL
);

CREATE TABLE sigil_validators (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  pubkey bytea NOT NULL UNIQUE CHECK (octet_length(pubkey) = 48)
);

CREATE TABLE sigil_signed_blocks (
  validator_id bigint NOT NULL REFERENCES sigil_validators (id),
  slot sigil_u64 NOT NULL,
  signing_root sigil_root
);
CREATE INDEX sigil_signed_blocks_slot ON sigil_signed_blocks (validator_id, slot);

CREATE TABLE sigil_signed_attestations (
  validator_id bigint NOT NULL REFERENCES sigil_validators (id),
  source_epoch sigil_u64 NOT NULL,
  target_epoch sigil_u64 NOT NULL,
  signing_root sigil_root
);
CREATE INDEX sigil_signed_attestations_target
  ON sigil_signed_attestations (validator_id, target_epoch);
CREATE INDEX sigil_signed_attestations_source
  ON sigil_signed_attestations (validator_id, source_epoch);

-- Checks the arguments every function shares; a bad argument is a caller bug, so it raises.
-- Also refuses to run outside READ COMMITTED (see the locking notes in postgres-schema.ts).
CREATE FUNCTION sigil_check_arguments(p_gvr bytea, p_pubkey bytea, p_root bytea)
RETURNS void LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'sigil slashing protection needs READ COMMITTED, not %',
      current_setting('transaction_isolation') USING ERRCODE = '25001';
  END IF;
  IF p_gvr IS NULL OR octet_length(p_gvr) <> 32 THEN
    RAISE EXCEPTION 'genesis validators root must be 32 bytes' USING ERRCODE = '22023';
  END IF;
  IF p_pubkey IS NULL OR octet_length(p_pubkey) <> 48 THEN
    RAISE EXCEPTION 'public key must be 48 bytes' USING ERRCODE = '22023';
  END IF;
  IF p_root IS NULL OR octet_length(p_root) <> 32 THEN
    RAISE EXCEPTION 'signing root must be 32 bytes' USING ERRCODE = '22023';
  END IF;
END $$;

-- Records the genesis validators root if none is recorded yet and tells whether the recorded one
-- is p_gvr. Call only when about to write.
CREATE FUNCTION sigil_claim_genesis_validators_root(p_gvr bytea, OUT matches boolean,
  OUT recorded bytea)
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sigil_metadata (genesis_validators_root) VALUES (p_gvr) ON CONFLICT DO NOTHING;
  SELECT m.genesis_validators_root INTO recorded FROM sigil_metadata m;
  matches := recorded = p_gvr;
END $$;

-- The check functions return the decision (outcome, reason) and the facts behind a refusal, from
-- which the caller words the detail with the shared rules (src/antislashing/rules.ts):
--   recorded_gvr      genesis_validators_root_mismatch: the recorded root
--   other_*           double_block_proposal / double_vote / surrounding_vote / surrounded_vote:
--                     the conflicting record (other_root NULL = imported without a root)
--   low_watermark     *_below_low_watermark: the lowest recorded slot, source or target
-- The rules and their order are those of rules.ts (complete strategy), first match wins.

CREATE FUNCTION sigil_check_and_insert_block(p_gvr bytea, p_pubkey bytea, p_slot numeric,
  p_root bytea, OUT outcome text, OUT reason text, OUT other_root bytea,
  OUT low_watermark numeric, OUT recorded_gvr bytea)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_attempt integer := 0;
  v_same record;
  v_claim record;
BEGIN
  PERFORM sigil_check_arguments(p_gvr, p_pubkey, p_root);
  IF p_slot IS NULL OR p_slot < 0 OR p_slot > 18446744073709551615 OR p_slot <> trunc(p_slot) THEN
    RAISE EXCEPTION 'slot out of range' USING ERRCODE = '22003';
  END IF;
  -- The recorded root never changes once written, so it is read without a lock.
  SELECT m.genesis_validators_root INTO recorded_gvr FROM sigil_metadata m;
  IF recorded_gvr IS NOT NULL AND recorded_gvr <> p_gvr THEN
    outcome := 'refused';
    reason := 'genesis_validators_root_mismatch';
    RETURN;
  END IF;
  LOOP
    SELECT v.id INTO v_id FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
    IF v_id IS NOT NULL THEN
      -- A record at this slot; a non-matching one first (false sorts before true).
      SELECT b.signing_root INTO v_same FROM sigil_signed_blocks b
        WHERE b.validator_id = v_id AND b.slot = p_slot
        ORDER BY (b.signing_root IS NOT NULL AND b.signing_root = p_root)
        LIMIT 1;
      IF FOUND THEN
        IF v_same.signing_root IS NOT NULL AND v_same.signing_root = p_root THEN
          outcome := 'same_data';
        ELSE
          outcome := 'refused';
          reason := 'double_block_proposal';
          other_root := v_same.signing_root;
        END IF;
        RETURN;
      END IF;
      SELECT min(b.slot) INTO low_watermark FROM sigil_signed_blocks b WHERE b.validator_id = v_id;
      IF low_watermark IS NOT NULL AND p_slot <= low_watermark THEN
        outcome := 'refused';
        reason := 'block_slot_below_low_watermark';
        RETURN;
      END IF;
      low_watermark := NULL;
    END IF;
    -- Accepted: record it.
    IF recorded_gvr IS NULL THEN
      SELECT * INTO v_claim FROM sigil_claim_genesis_validators_root(p_gvr);
      IF NOT v_claim.matches THEN
        outcome := 'refused';
        reason := 'genesis_validators_root_mismatch';
        recorded_gvr := v_claim.recorded;
        RETURN;
      END IF;
      recorded_gvr := v_claim.recorded;
    END IF;
    IF v_id IS NULL THEN
      INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey)
        ON CONFLICT (pubkey) DO NOTHING RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        -- Another transaction created this validator meanwhile: decide again under its lock.
        v_attempt := v_attempt + 1;
        IF v_attempt > 3 THEN
          RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
        END IF;
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO sigil_signed_blocks (validator_id, slot, signing_root) VALUES (v_id, p_slot, p_root);
    outcome := 'new';
    RETURN;
  END LOOP;
END $$;

CREATE FUNCTION sigil_check_and_insert_attestation(p_gvr bytea, p_pubkey bytea,
  p_source numeric, p_target numeric, p_root bytea,
  OUT outcome text, OUT reason text, OUT other_source numeric, OUT other_target numeric,
  OUT other_root bytea, OUT low_watermark numeric, OUT recorded_gvr bytea)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_attempt integer := 0;
  v_other record;
  v_min_source numeric;
  v_min_target numeric;
  v_claim record;
BEGIN
  PERFORM sigil_check_arguments(p_gvr, p_pubkey, p_root);
  IF p_source IS NULL OR p_source < 0 OR p_source > 18446744073709551615 OR p_source <> trunc(p_source)
    OR p_target IS NULL OR p_target < 0 OR p_target > 18446744073709551615 OR p_target <> trunc(p_target) THEN
    RAISE EXCEPTION 'epoch out of range' USING ERRCODE = '22003';
  END IF;
  SELECT m.genesis_validators_root INTO recorded_gvr FROM sigil_metadata m;
  IF recorded_gvr IS NOT NULL AND recorded_gvr <> p_gvr THEN
    outcome := 'refused';
    reason := 'genesis_validators_root_mismatch';
    RETURN;
  END IF;
  IF p_source > p_target THEN
    outcome := 'refused';
    reason := 'source_after_target';
    RETURN;
  END IF;
  LOOP
    SELECT v.id INTO v_id FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
    IF v_id IS NOT NULL THEN
      -- A record with this target; a non-matching one first.
      SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
        FROM sigil_signed_attestations a
        WHERE a.validator_id = v_id AND a.target_epoch = p_target
        ORDER BY (a.source_epoch = p_source AND a.signing_root IS NOT NULL AND a.signing_root = p_root)
        LIMIT 1;
      IF FOUND THEN
        IF v_other.source_epoch = p_source AND v_other.signing_root IS NOT NULL
          AND v_other.signing_root = p_root THEN
          outcome := 'same_data';
        ELSE
          outcome := 'refused';
          reason := 'double_vote';
        END IF;
      ELSE
        SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
          FROM sigil_signed_attestations a
          WHERE a.validator_id = v_id AND a.source_epoch > p_source AND a.target_epoch < p_target
          LIMIT 1;
        IF FOUND THEN
          outcome := 'refused';
          reason := 'surrounding_vote';
        ELSE
          SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
            FROM sigil_signed_attestations a
            WHERE a.validator_id = v_id AND a.source_epoch < p_source AND a.target_epoch > p_target
            LIMIT 1;
          IF FOUND THEN
            outcome := 'refused';
            reason := 'surrounded_vote';
          END IF;
        END IF;
      END IF;
      IF outcome IS NOT NULL THEN
        IF outcome = 'refused' THEN
          other_source := v_other.source_epoch;
          other_target := v_other.target_epoch;
          other_root := v_other.signing_root;
        END IF;
        RETURN;
      END IF;
      SELECT min(a.source_epoch), min(a.target_epoch) INTO v_min_source, v_min_target
        FROM sigil_signed_attestations a WHERE a.validator_id = v_id;
      IF v_min_source IS NOT NULL AND p_source < v_min_source THEN
        outcome := 'refused';
        reason := 'attestation_source_below_low_watermark';
        low_watermark := v_min_source;
        RETURN;
      END IF;
      IF v_min_target IS NOT NULL AND p_target <= v_min_target THEN
        outcome := 'refused';
        reason := 'attestation_target_below_low_watermark';
        low_watermark := v_min_target;
        RETURN;
      END IF;
    END IF;
    -- Accepted: record it.
    IF recorded_gvr IS NULL THEN
      SELECT * INTO v_claim FROM sigil_claim_genesis_validators_root(p_gvr);
      IF NOT v_claim.matches THEN
        outcome := 'refused';
        reason := 'genesis_validators_root_mismatch';
        recorded_gvr := v_claim.recorded;
        RETURN;
      END IF;
      recorded_gvr := v_claim.recorded;
    END IF;
    IF v_id IS NULL THEN
      INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey)
        ON CONFLICT (pubkey) DO NOTHING RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        v_attempt := v_attempt + 1;
        IF v_attempt > 3 THEN
          RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
        END IF;
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO sigil_signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
      VALUES (v_id, p_source, p_target, p_root);
    outcome := 'new';
    RETURN;
  END LOOP;
END $$;

-- Prunes one validator (see PostgresStore.prune): blocks with slot <= max slot - 32 * epochs;
-- attestations with target <= max target - epochs, but only when that is sound, i.e. every deleted
-- source is <= the lowest kept source (always so for a non-slashable history; an imported
-- slashable history keeps its attestations). Under the validator's lock, like a check.
CREATE FUNCTION sigil_prune_validator(p_id bigint, p_epochs numeric,
  OUT blocks bigint, OUT attestations bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_top numeric;
  v_cutoff numeric;
  v_deleted_max numeric;
  v_kept_min numeric;
BEGIN
  blocks := 0;
  attestations := 0;
  PERFORM 1 FROM sigil_validators v WHERE v.id = p_id FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT max(b.slot) INTO v_top FROM sigil_signed_blocks b WHERE b.validator_id = p_id;
  IF v_top IS NOT NULL AND v_top - p_epochs * 32 >= 0 THEN
    DELETE FROM sigil_signed_blocks b WHERE b.validator_id = p_id AND b.slot <= v_top - p_epochs * 32;
    GET DIAGNOSTICS blocks = ROW_COUNT;
  END IF;
  SELECT max(a.target_epoch) INTO v_top FROM sigil_signed_attestations a WHERE a.validator_id = p_id;
  IF v_top IS NULL OR v_top - p_epochs < 0 THEN
    RETURN;
  END IF;
  v_cutoff := v_top - p_epochs;
  SELECT max(a.source_epoch) INTO v_deleted_max FROM sigil_signed_attestations a
    WHERE a.validator_id = p_id AND a.target_epoch <= v_cutoff;
  SELECT min(a.source_epoch) INTO v_kept_min FROM sigil_signed_attestations a
    WHERE a.validator_id = p_id AND a.target_epoch > v_cutoff;
  IF v_deleted_max IS NULL OR v_kept_min IS NULL OR v_deleted_max > v_kept_min THEN
    RETURN;
  END IF;
  DELETE FROM sigil_signed_attestations a WHERE a.validator_id = p_id AND a.target_epoch <= v_cutoff;
  GET DIAGNOSTICS attestations = ROW_COUNT;
END $$;

-- Import of one validator's records (inside the import's transaction): creates and locks the
-- validator, then inserts every record that is not already stored verbatim. Roots are hex text
-- (NULL = no root), numbers decimal text, so that one round trip carries any number of records.
CREATE FUNCTION sigil_import_validator(p_pubkey bytea,
  p_slots text[], p_block_roots text[],
  p_sources text[], p_targets text[], p_attestation_roots text[],
  OUT blocks bigint, OUT attestations bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
BEGIN
  IF p_pubkey IS NULL OR octet_length(p_pubkey) <> 48 THEN
    RAISE EXCEPTION 'public key must be 48 bytes' USING ERRCODE = '22023';
  END IF;
  INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey) ON CONFLICT (pubkey) DO NOTHING;
  SELECT v.id INTO v_id FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
  IF v_id IS NULL THEN
    RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
  END IF;
  WITH incoming AS (
    SELECT DISTINCT r.slot::sigil_u64 AS slot, decode(r.root, 'hex')::sigil_root AS signing_root
    FROM unnest(p_slots, p_block_roots) AS r (slot, root)
  ), inserted AS (
    INSERT INTO sigil_signed_blocks (validator_id, slot, signing_root)
    SELECT v_id, i.slot, i.signing_root FROM incoming i
    WHERE NOT EXISTS (
      SELECT 1 FROM sigil_signed_blocks b
      WHERE b.validator_id = v_id AND b.slot = i.slot
        AND b.signing_root IS NOT DISTINCT FROM i.signing_root)
    RETURNING 1
  )
  SELECT count(*) INTO blocks FROM inserted;
  WITH incoming AS (
    SELECT DISTINCT r.source::sigil_u64 AS source_epoch, r.target::sigil_u64 AS target_epoch,
      decode(r.root, 'hex')::sigil_root AS signing_root
    FROM unnest(p_sources, p_targets, p_attestation_roots) AS r (source, target, root)
  ), inserted AS (
    INSERT INTO sigil_signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
    SELECT v_id, i.source_epoch, i.target_epoch, i.signing_root FROM incoming i
    WHERE NOT EXISTS (
      SELECT 1 FROM sigil_signed_attestations a
      WHERE a.validator_id = v_id AND a.source_epoch = i.source_epoch
        AND a.target_epoch = i.target_epoch
        AND a.signing_root IS NOT DISTINCT FROM i.signing_root)
    RETURNING 1
  )
  SELECT count(*) INTO attestations FROM inserted;
END $$;
`;

// Pruning floors (two columns of sigil_validators). Pruning raises MIN() over the kept records;
// re-importing older history used to lower it again and re-open every pruned slot and target. A
// prune that deletes blocks (attestations) now records the lowest slot (target) it kept as the
// validator's floor (floors only rise; a record always exists at each floor), and an import skips,
// for that validator, blocks below block_floor and attestations (s', t') with t' < target_floor and
// s' <= the largest source recorded at target_floor: the kept records refuse everything those would
// (any new vote at or below the floor is refused; one with s < s' and a target above the floor
// surrounds the floor record). A below-floor attestation with a larger source is surrounded by the
// floor record (slashable data) and is stored as before: the floor record does not cover a vote
// that would surround it, and storing it re-opens nothing (a vote with a target between the two
// would have to surround one of them). The reasoning is spelled out in the sqlite backend's prune.
const V2 = /* sql */ `
ALTER TABLE sigil_validators
  ADD COLUMN block_floor sigil_u64,
  ADD COLUMN target_floor sigil_u64;

CREATE OR REPLACE FUNCTION sigil_prune_validator(p_id bigint, p_epochs numeric,
  OUT blocks bigint, OUT attestations bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_top numeric;
  v_cutoff numeric;
  v_deleted_max numeric;
  v_kept_min numeric;
BEGIN
  blocks := 0;
  attestations := 0;
  PERFORM 1 FROM sigil_validators v WHERE v.id = p_id FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT max(b.slot) INTO v_top FROM sigil_signed_blocks b WHERE b.validator_id = p_id;
  IF v_top IS NOT NULL AND v_top - p_epochs * 32 >= 0 THEN
    DELETE FROM sigil_signed_blocks b WHERE b.validator_id = p_id AND b.slot <= v_top - p_epochs * 32;
    GET DIAGNOSTICS blocks = ROW_COUNT;
    IF blocks > 0 THEN
      UPDATE sigil_validators v SET block_floor = greatest(v.block_floor,
          (SELECT min(b.slot) FROM sigil_signed_blocks b WHERE b.validator_id = p_id))
        WHERE v.id = p_id;
    END IF;
  END IF;
  SELECT max(a.target_epoch) INTO v_top FROM sigil_signed_attestations a WHERE a.validator_id = p_id;
  IF v_top IS NULL OR v_top - p_epochs < 0 THEN
    RETURN;
  END IF;
  v_cutoff := v_top - p_epochs;
  SELECT max(a.source_epoch) INTO v_deleted_max FROM sigil_signed_attestations a
    WHERE a.validator_id = p_id AND a.target_epoch <= v_cutoff;
  SELECT min(a.source_epoch) INTO v_kept_min FROM sigil_signed_attestations a
    WHERE a.validator_id = p_id AND a.target_epoch > v_cutoff;
  IF v_deleted_max IS NULL OR v_kept_min IS NULL OR v_deleted_max > v_kept_min THEN
    RETURN;
  END IF;
  DELETE FROM sigil_signed_attestations a WHERE a.validator_id = p_id AND a.target_epoch <= v_cutoff;
  GET DIAGNOSTICS attestations = ROW_COUNT;
  IF attestations > 0 THEN
    UPDATE sigil_validators v SET target_floor = greatest(v.target_floor,
        (SELECT min(a.target_epoch) FROM sigil_signed_attestations a WHERE a.validator_id = p_id))
      WHERE v.id = p_id;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION sigil_import_validator(p_pubkey bytea,
  p_slots text[], p_block_roots text[],
  p_sources text[], p_targets text[], p_attestation_roots text[],
  OUT blocks bigint, OUT attestations bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_block_floor numeric;
  v_target_floor numeric;
  v_floor_source numeric;
BEGIN
  IF p_pubkey IS NULL OR octet_length(p_pubkey) <> 48 THEN
    RAISE EXCEPTION 'public key must be 48 bytes' USING ERRCODE = '22023';
  END IF;
  INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey) ON CONFLICT (pubkey) DO NOTHING;
  -- The floors are read under the validator's lock, which a prune holds while it deletes.
  SELECT v.id, v.block_floor, v.target_floor INTO v_id, v_block_floor, v_target_floor
    FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
  IF v_id IS NULL THEN
    RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
  END IF;
  IF v_target_floor IS NOT NULL THEN
    SELECT max(a.source_epoch) INTO v_floor_source FROM sigil_signed_attestations a
      WHERE a.validator_id = v_id AND a.target_epoch = v_target_floor;
  END IF;
  WITH incoming AS (
    SELECT DISTINCT r.slot::sigil_u64 AS slot, decode(r.root, 'hex')::sigil_root AS signing_root
    FROM unnest(p_slots, p_block_roots) AS r (slot, root)
  ), inserted AS (
    INSERT INTO sigil_signed_blocks (validator_id, slot, signing_root)
    SELECT v_id, i.slot, i.signing_root FROM incoming i
    WHERE (v_block_floor IS NULL OR i.slot >= v_block_floor)
      AND NOT EXISTS (
        SELECT 1 FROM sigil_signed_blocks b
        WHERE b.validator_id = v_id AND b.slot = i.slot
          AND b.signing_root IS NOT DISTINCT FROM i.signing_root)
    RETURNING 1
  )
  SELECT count(*) INTO blocks FROM inserted;
  WITH incoming AS (
    SELECT DISTINCT r.source::sigil_u64 AS source_epoch, r.target::sigil_u64 AS target_epoch,
      decode(r.root, 'hex')::sigil_root AS signing_root
    FROM unnest(p_sources, p_targets, p_attestation_roots) AS r (source, target, root)
  ), inserted AS (
    INSERT INTO sigil_signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
    SELECT v_id, i.source_epoch, i.target_epoch, i.signing_root FROM incoming i
    WHERE (v_target_floor IS NULL OR v_floor_source IS NULL
        OR i.target_epoch >= v_target_floor OR i.source_epoch > v_floor_source)
      AND NOT EXISTS (
        SELECT 1 FROM sigil_signed_attestations a
        WHERE a.validator_id = v_id AND a.source_epoch = i.source_epoch
          AND a.target_epoch = i.target_epoch
          AND a.signing_root IS NOT DISTINCT FROM i.signing_root)
    RETURNING 1
  )
  SELECT count(*) INTO attestations FROM inserted;
END $$;
`;

// Floors take part in the rules (ValidatorFloors in store.ts). An import may carry low watermarks
// that hold without a record at them (Web3Signer's, after its pruning): they are kept in the
// validator's floors, a new source_floor among them, and the check functions compare against the
// larger of the lowest record and the floor. A pruning floor always has a record at it, so for
// pruning no decision changes; an imported floor may have none, and then the import's skip of
// attestations below target_floor (V2) skips nothing, as the MAX() it needs is NULL.
const V3 = /* sql */ `
ALTER TABLE sigil_validators ADD COLUMN source_floor sigil_u64;

CREATE OR REPLACE FUNCTION sigil_check_and_insert_block(p_gvr bytea, p_pubkey bytea, p_slot numeric,
  p_root bytea, OUT outcome text, OUT reason text, OUT other_root bytea,
  OUT low_watermark numeric, OUT recorded_gvr bytea)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_attempt integer := 0;
  v_same record;
  v_claim record;
  v_floor numeric;
BEGIN
  PERFORM sigil_check_arguments(p_gvr, p_pubkey, p_root);
  IF p_slot IS NULL OR p_slot < 0 OR p_slot > 18446744073709551615 OR p_slot <> trunc(p_slot) THEN
    RAISE EXCEPTION 'slot out of range' USING ERRCODE = '22003';
  END IF;
  -- The recorded root never changes once written, so it is read without a lock.
  SELECT m.genesis_validators_root INTO recorded_gvr FROM sigil_metadata m;
  IF recorded_gvr IS NOT NULL AND recorded_gvr <> p_gvr THEN
    outcome := 'refused';
    reason := 'genesis_validators_root_mismatch';
    RETURN;
  END IF;
  LOOP
    SELECT v.id, v.block_floor INTO v_id, v_floor
      FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
    IF v_id IS NOT NULL THEN
      -- A record at this slot; a non-matching one first (false sorts before true).
      SELECT b.signing_root INTO v_same FROM sigil_signed_blocks b
        WHERE b.validator_id = v_id AND b.slot = p_slot
        ORDER BY (b.signing_root IS NOT NULL AND b.signing_root = p_root)
        LIMIT 1;
      IF FOUND THEN
        IF v_same.signing_root IS NOT NULL AND v_same.signing_root = p_root THEN
          outcome := 'same_data';
        ELSE
          outcome := 'refused';
          reason := 'double_block_proposal';
          other_root := v_same.signing_root;
        END IF;
        RETURN;
      END IF;
      -- greatest() ignores NULLs: the floor alone, the lowest record alone, or the larger.
      SELECT greatest(min(b.slot), v_floor) INTO low_watermark
        FROM sigil_signed_blocks b WHERE b.validator_id = v_id;
      IF low_watermark IS NOT NULL AND p_slot <= low_watermark THEN
        outcome := 'refused';
        reason := 'block_slot_below_low_watermark';
        RETURN;
      END IF;
      low_watermark := NULL;
    END IF;
    -- Accepted: record it.
    IF recorded_gvr IS NULL THEN
      SELECT * INTO v_claim FROM sigil_claim_genesis_validators_root(p_gvr);
      IF NOT v_claim.matches THEN
        outcome := 'refused';
        reason := 'genesis_validators_root_mismatch';
        recorded_gvr := v_claim.recorded;
        RETURN;
      END IF;
      recorded_gvr := v_claim.recorded;
    END IF;
    IF v_id IS NULL THEN
      INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey)
        ON CONFLICT (pubkey) DO NOTHING RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        -- Another transaction created this validator meanwhile: decide again under its lock.
        v_attempt := v_attempt + 1;
        IF v_attempt > 3 THEN
          RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
        END IF;
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO sigil_signed_blocks (validator_id, slot, signing_root) VALUES (v_id, p_slot, p_root);
    outcome := 'new';
    RETURN;
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION sigil_check_and_insert_attestation(p_gvr bytea, p_pubkey bytea,
  p_source numeric, p_target numeric, p_root bytea,
  OUT outcome text, OUT reason text, OUT other_source numeric, OUT other_target numeric,
  OUT other_root bytea, OUT low_watermark numeric, OUT recorded_gvr bytea)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_attempt integer := 0;
  v_other record;
  v_min_source numeric;
  v_min_target numeric;
  v_claim record;
  v_source_floor numeric;
  v_target_floor numeric;
BEGIN
  PERFORM sigil_check_arguments(p_gvr, p_pubkey, p_root);
  IF p_source IS NULL OR p_source < 0 OR p_source > 18446744073709551615 OR p_source <> trunc(p_source)
    OR p_target IS NULL OR p_target < 0 OR p_target > 18446744073709551615 OR p_target <> trunc(p_target) THEN
    RAISE EXCEPTION 'epoch out of range' USING ERRCODE = '22003';
  END IF;
  SELECT m.genesis_validators_root INTO recorded_gvr FROM sigil_metadata m;
  IF recorded_gvr IS NOT NULL AND recorded_gvr <> p_gvr THEN
    outcome := 'refused';
    reason := 'genesis_validators_root_mismatch';
    RETURN;
  END IF;
  IF p_source > p_target THEN
    outcome := 'refused';
    reason := 'source_after_target';
    RETURN;
  END IF;
  LOOP
    SELECT v.id, v.source_floor, v.target_floor INTO v_id, v_source_floor, v_target_floor
      FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
    IF v_id IS NOT NULL THEN
      -- A record with this target; a non-matching one first.
      SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
        FROM sigil_signed_attestations a
        WHERE a.validator_id = v_id AND a.target_epoch = p_target
        ORDER BY (a.source_epoch = p_source AND a.signing_root IS NOT NULL AND a.signing_root = p_root)
        LIMIT 1;
      IF FOUND THEN
        IF v_other.source_epoch = p_source AND v_other.signing_root IS NOT NULL
          AND v_other.signing_root = p_root THEN
          outcome := 'same_data';
        ELSE
          outcome := 'refused';
          reason := 'double_vote';
        END IF;
      ELSE
        SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
          FROM sigil_signed_attestations a
          WHERE a.validator_id = v_id AND a.source_epoch > p_source AND a.target_epoch < p_target
          LIMIT 1;
        IF FOUND THEN
          outcome := 'refused';
          reason := 'surrounding_vote';
        ELSE
          SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
            FROM sigil_signed_attestations a
            WHERE a.validator_id = v_id AND a.source_epoch < p_source AND a.target_epoch > p_target
            LIMIT 1;
          IF FOUND THEN
            outcome := 'refused';
            reason := 'surrounded_vote';
          END IF;
        END IF;
      END IF;
      IF outcome IS NOT NULL THEN
        IF outcome = 'refused' THEN
          other_source := v_other.source_epoch;
          other_target := v_other.target_epoch;
          other_root := v_other.signing_root;
        END IF;
        RETURN;
      END IF;
      SELECT greatest(min(a.source_epoch), v_source_floor), greatest(min(a.target_epoch), v_target_floor)
        INTO v_min_source, v_min_target
        FROM sigil_signed_attestations a WHERE a.validator_id = v_id;
      IF v_min_source IS NOT NULL AND p_source < v_min_source THEN
        outcome := 'refused';
        reason := 'attestation_source_below_low_watermark';
        low_watermark := v_min_source;
        RETURN;
      END IF;
      IF v_min_target IS NOT NULL AND p_target <= v_min_target THEN
        outcome := 'refused';
        reason := 'attestation_target_below_low_watermark';
        low_watermark := v_min_target;
        RETURN;
      END IF;
    END IF;
    -- Accepted: record it.
    IF recorded_gvr IS NULL THEN
      SELECT * INTO v_claim FROM sigil_claim_genesis_validators_root(p_gvr);
      IF NOT v_claim.matches THEN
        outcome := 'refused';
        reason := 'genesis_validators_root_mismatch';
        recorded_gvr := v_claim.recorded;
        RETURN;
      END IF;
      recorded_gvr := v_claim.recorded;
    END IF;
    IF v_id IS NULL THEN
      INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey)
        ON CONFLICT (pubkey) DO NOTHING RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        v_attempt := v_attempt + 1;
        IF v_attempt > 3 THEN
          RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
        END IF;
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO sigil_signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
      VALUES (v_id, p_source, p_target, p_root);
    outcome := 'new';
    RETURN;
  END LOOP;
END $$;
`;

// A floor is the low watermark where a validator has one, in place of the lowest record
// (ValidatorFloors in store.ts): an import that carries floors (Web3Signer's low watermarks) vouches
// that every message at or above them is recorded, as Web3Signer's own pruning keeps it. First,
// every existing floor rises to the larger of itself and the lowest record, the watermark V3
// used, so the upgrade changes no decision. Imports go through sigil_import_validator_with_floors,
// which keeps an imported floor from lowering the watermark the validator had and raises an
// existing floor to the lowest record kept when the import brings none. The same rules as the
// sqlite backend.
const V4 = /* sql */ `
UPDATE sigil_validators v SET block_floor = greatest(v.block_floor,
    (SELECT min(b.slot) FROM sigil_signed_blocks b WHERE b.validator_id = v.id))
  WHERE v.block_floor IS NOT NULL;
UPDATE sigil_validators v SET source_floor = greatest(v.source_floor,
    (SELECT min(a.source_epoch) FROM sigil_signed_attestations a WHERE a.validator_id = v.id))
  WHERE v.source_floor IS NOT NULL;
UPDATE sigil_validators v SET target_floor = greatest(v.target_floor,
    (SELECT min(a.target_epoch) FROM sigil_signed_attestations a WHERE a.validator_id = v.id))
  WHERE v.target_floor IS NOT NULL;

CREATE OR REPLACE FUNCTION sigil_check_and_insert_block(p_gvr bytea, p_pubkey bytea, p_slot numeric,
  p_root bytea, OUT outcome text, OUT reason text, OUT other_root bytea,
  OUT low_watermark numeric, OUT recorded_gvr bytea)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_attempt integer := 0;
  v_same record;
  v_claim record;
  v_floor numeric;
BEGIN
  PERFORM sigil_check_arguments(p_gvr, p_pubkey, p_root);
  IF p_slot IS NULL OR p_slot < 0 OR p_slot > 18446744073709551615 OR p_slot <> trunc(p_slot) THEN
    RAISE EXCEPTION 'slot out of range' USING ERRCODE = '22003';
  END IF;
  -- The recorded root never changes once written, so it is read without a lock.
  SELECT m.genesis_validators_root INTO recorded_gvr FROM sigil_metadata m;
  IF recorded_gvr IS NOT NULL AND recorded_gvr <> p_gvr THEN
    outcome := 'refused';
    reason := 'genesis_validators_root_mismatch';
    RETURN;
  END IF;
  LOOP
    SELECT v.id, v.block_floor INTO v_id, v_floor
      FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
    IF v_id IS NOT NULL THEN
      -- A record at this slot; a non-matching one first (false sorts before true).
      SELECT b.signing_root INTO v_same FROM sigil_signed_blocks b
        WHERE b.validator_id = v_id AND b.slot = p_slot
        ORDER BY (b.signing_root IS NOT NULL AND b.signing_root = p_root)
        LIMIT 1;
      IF FOUND THEN
        IF v_same.signing_root IS NOT NULL AND v_same.signing_root = p_root THEN
          outcome := 'same_data';
        ELSE
          outcome := 'refused';
          reason := 'double_block_proposal';
          other_root := v_same.signing_root;
        END IF;
        RETURN;
      END IF;
      -- The floor where there is one, else the lowest record (ValidatorFloors in store.ts).
      SELECT coalesce(v_floor, min(b.slot)) INTO low_watermark
        FROM sigil_signed_blocks b WHERE b.validator_id = v_id;
      IF low_watermark IS NOT NULL AND p_slot <= low_watermark THEN
        outcome := 'refused';
        reason := 'block_slot_below_low_watermark';
        RETURN;
      END IF;
      low_watermark := NULL;
    END IF;
    -- Accepted: record it.
    IF recorded_gvr IS NULL THEN
      SELECT * INTO v_claim FROM sigil_claim_genesis_validators_root(p_gvr);
      IF NOT v_claim.matches THEN
        outcome := 'refused';
        reason := 'genesis_validators_root_mismatch';
        recorded_gvr := v_claim.recorded;
        RETURN;
      END IF;
      recorded_gvr := v_claim.recorded;
    END IF;
    IF v_id IS NULL THEN
      INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey)
        ON CONFLICT (pubkey) DO NOTHING RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        -- Another transaction created this validator meanwhile: decide again under its lock.
        v_attempt := v_attempt + 1;
        IF v_attempt > 3 THEN
          RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
        END IF;
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO sigil_signed_blocks (validator_id, slot, signing_root) VALUES (v_id, p_slot, p_root);
    outcome := 'new';
    RETURN;
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION sigil_check_and_insert_attestation(p_gvr bytea, p_pubkey bytea,
  p_source numeric, p_target numeric, p_root bytea,
  OUT outcome text, OUT reason text, OUT other_source numeric, OUT other_target numeric,
  OUT other_root bytea, OUT low_watermark numeric, OUT recorded_gvr bytea)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_attempt integer := 0;
  v_other record;
  v_min_source numeric;
  v_min_target numeric;
  v_claim record;
  v_source_floor numeric;
  v_target_floor numeric;
BEGIN
  PERFORM sigil_check_arguments(p_gvr, p_pubkey, p_root);
  IF p_source IS NULL OR p_source < 0 OR p_source > 18446744073709551615 OR p_source <> trunc(p_source)
    OR p_target IS NULL OR p_target < 0 OR p_target > 18446744073709551615 OR p_target <> trunc(p_target) THEN
    RAISE EXCEPTION 'epoch out of range' USING ERRCODE = '22003';
  END IF;
  SELECT m.genesis_validators_root INTO recorded_gvr FROM sigil_metadata m;
  IF recorded_gvr IS NOT NULL AND recorded_gvr <> p_gvr THEN
    outcome := 'refused';
    reason := 'genesis_validators_root_mismatch';
    RETURN;
  END IF;
  IF p_source > p_target THEN
    outcome := 'refused';
    reason := 'source_after_target';
    RETURN;
  END IF;
  LOOP
    SELECT v.id, v.source_floor, v.target_floor INTO v_id, v_source_floor, v_target_floor
      FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
    IF v_id IS NOT NULL THEN
      -- A record with this target; a non-matching one first.
      SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
        FROM sigil_signed_attestations a
        WHERE a.validator_id = v_id AND a.target_epoch = p_target
        ORDER BY (a.source_epoch = p_source AND a.signing_root IS NOT NULL AND a.signing_root = p_root)
        LIMIT 1;
      IF FOUND THEN
        IF v_other.source_epoch = p_source AND v_other.signing_root IS NOT NULL
          AND v_other.signing_root = p_root THEN
          outcome := 'same_data';
        ELSE
          outcome := 'refused';
          reason := 'double_vote';
        END IF;
      ELSE
        SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
          FROM sigil_signed_attestations a
          WHERE a.validator_id = v_id AND a.source_epoch > p_source AND a.target_epoch < p_target
          LIMIT 1;
        IF FOUND THEN
          outcome := 'refused';
          reason := 'surrounding_vote';
        ELSE
          SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
            FROM sigil_signed_attestations a
            WHERE a.validator_id = v_id AND a.source_epoch < p_source AND a.target_epoch > p_target
            LIMIT 1;
          IF FOUND THEN
            outcome := 'refused';
            reason := 'surrounded_vote';
          END IF;
        END IF;
      END IF;
      IF outcome IS NOT NULL THEN
        IF outcome = 'refused' THEN
          other_source := v_other.source_epoch;
          other_target := v_other.target_epoch;
          other_root := v_other.signing_root;
        END IF;
        RETURN;
      END IF;
      SELECT coalesce(v_source_floor, min(a.source_epoch)), coalesce(v_target_floor, min(a.target_epoch))
        INTO v_min_source, v_min_target
        FROM sigil_signed_attestations a WHERE a.validator_id = v_id;
      IF v_min_source IS NOT NULL AND p_source < v_min_source THEN
        outcome := 'refused';
        reason := 'attestation_source_below_low_watermark';
        low_watermark := v_min_source;
        RETURN;
      END IF;
      IF v_min_target IS NOT NULL AND p_target <= v_min_target THEN
        outcome := 'refused';
        reason := 'attestation_target_below_low_watermark';
        low_watermark := v_min_target;
        RETURN;
      END IF;
    END IF;
    -- Accepted: record it.
    IF recorded_gvr IS NULL THEN
      SELECT * INTO v_claim FROM sigil_claim_genesis_validators_root(p_gvr);
      IF NOT v_claim.matches THEN
        outcome := 'refused';
        reason := 'genesis_validators_root_mismatch';
        recorded_gvr := v_claim.recorded;
        RETURN;
      END IF;
      recorded_gvr := v_claim.recorded;
    END IF;
    IF v_id IS NULL THEN
      INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey)
        ON CONFLICT (pubkey) DO NOTHING RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        v_attempt := v_attempt + 1;
        IF v_attempt > 3 THEN
          RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
        END IF;
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO sigil_signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
      VALUES (v_id, p_source, p_target, p_root);
    outcome := 'new';
    RETURN;
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION sigil_import_validator_with_floors(p_pubkey bytea,
  p_slots text[], p_block_roots text[],
  p_sources text[], p_targets text[], p_attestation_roots text[],
  p_block_floor numeric, p_source_floor numeric, p_target_floor numeric,
  OUT blocks bigint, OUT attestations bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_block_before numeric;
  v_source_before numeric;
  v_target_before numeric;
BEGIN
  IF p_pubkey IS NULL OR octet_length(p_pubkey) <> 48 THEN
    RAISE EXCEPTION 'public key must be 48 bytes' USING ERRCODE = '22023';
  END IF;
  INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey) ON CONFLICT (pubkey) DO NOTHING;
  IF p_block_floor IS NULL AND p_source_floor IS NULL AND p_target_floor IS NULL THEN
    -- Nothing imported to raise: the watermarks before are not needed, only the lock.
    SELECT v.id INTO v_id FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
  ELSE
    -- The watermark the validator has before this import: its floor, else its lowest record.
    SELECT v.id,
        coalesce(v.block_floor,
          (SELECT min(b.slot) FROM sigil_signed_blocks b WHERE b.validator_id = v.id)),
        coalesce(v.source_floor,
          (SELECT min(a.source_epoch) FROM sigil_signed_attestations a WHERE a.validator_id = v.id)),
        coalesce(v.target_floor,
          (SELECT min(a.target_epoch) FROM sigil_signed_attestations a WHERE a.validator_id = v.id))
      INTO v_id, v_block_before, v_source_before, v_target_before
      FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
  END IF;
  SELECT i.blocks, i.attestations INTO blocks, attestations
    FROM sigil_import_validator(p_pubkey, p_slots, p_block_roots, p_sources, p_targets,
      p_attestation_roots) i;
  -- After the records (none of them is skipped by its own import's floors). greatest() skips
  -- NULLs; a CASE without a match is NULL: no floor imported and none before stays none, so
  -- such a row is left alone rather than rewritten unchanged.
  UPDATE sigil_validators v SET
    block_floor = CASE
      WHEN p_block_floor IS NOT NULL THEN greatest(p_block_floor, v_block_before)
      WHEN v.block_floor IS NOT NULL THEN greatest(v.block_floor,
        (SELECT min(b.slot) FROM sigil_signed_blocks b WHERE b.validator_id = v_id)) END,
    source_floor = CASE
      WHEN p_source_floor IS NOT NULL THEN greatest(p_source_floor, v_source_before)
      WHEN v.source_floor IS NOT NULL THEN greatest(v.source_floor,
        (SELECT min(a.source_epoch) FROM sigil_signed_attestations a WHERE a.validator_id = v_id)) END,
    target_floor = CASE
      WHEN p_target_floor IS NOT NULL THEN greatest(p_target_floor, v_target_before)
      WHEN v.target_floor IS NOT NULL THEN greatest(v.target_floor,
        (SELECT min(a.target_epoch) FROM sigil_signed_attestations a WHERE a.validator_id = v_id)) END
    WHERE v.id = v_id
      AND (p_block_floor IS NOT NULL OR p_source_floor IS NOT NULL OR p_target_floor IS NOT NULL
        OR v.block_floor IS NOT NULL OR v.source_floor IS NOT NULL OR v.target_floor IS NOT NULL);
END $$;
`;

// The attestation check's common case in two index probes. A vote whose source is at or after
// every recorded source, whose target is after every recorded target, and which is above the
// floors breaks no rule, so the function records it without the three conflict searches and the
// low-watermark lookup; every other vote takes the V4 path unchanged. The same decisions, at
// about three quarters of the server's CPU per check (docs/performance.md).
const V5 = /* sql */ `
CREATE OR REPLACE FUNCTION sigil_check_and_insert_attestation(p_gvr bytea, p_pubkey bytea,
  p_source numeric, p_target numeric, p_root bytea,
  OUT outcome text, OUT reason text, OUT other_source numeric, OUT other_target numeric,
  OUT other_root bytea, OUT low_watermark numeric, OUT recorded_gvr bytea)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_attempt integer := 0;
  v_other record;
  v_min_source numeric;
  v_min_target numeric;
  v_claim record;
  v_source_floor numeric;
  v_target_floor numeric;
  v_max_source numeric;
  v_max_target numeric;
  v_ahead boolean := false;
BEGIN
  PERFORM sigil_check_arguments(p_gvr, p_pubkey, p_root);
  IF p_source IS NULL OR p_source < 0 OR p_source > 18446744073709551615 OR p_source <> trunc(p_source)
    OR p_target IS NULL OR p_target < 0 OR p_target > 18446744073709551615 OR p_target <> trunc(p_target) THEN
    RAISE EXCEPTION 'epoch out of range' USING ERRCODE = '22003';
  END IF;
  SELECT m.genesis_validators_root INTO recorded_gvr FROM sigil_metadata m;
  IF recorded_gvr IS NOT NULL AND recorded_gvr <> p_gvr THEN
    outcome := 'refused';
    reason := 'genesis_validators_root_mismatch';
    RETURN;
  END IF;
  IF p_source > p_target THEN
    outcome := 'refused';
    reason := 'source_after_target';
    RETURN;
  END IF;
  LOOP
    SELECT v.id, v.source_floor, v.target_floor INTO v_id, v_source_floor, v_target_floor
      FROM sigil_validators v WHERE v.pubkey = p_pubkey FOR NO KEY UPDATE;
    IF v_id IS NOT NULL THEN
      -- A vote ahead of every record (source at or after the highest source, target after the
      -- highest target, both above the floors) can match no rule: no record has its target, none
      -- can surround it (a source after it) or be surrounded (a target after it), and it is above
      -- every low watermark. That is every vote of a validator in step with the chain: it is
      -- recorded after two index probes instead of the searches below.
      SELECT max(a.source_epoch), max(a.target_epoch) INTO v_max_source, v_max_target
        FROM sigil_signed_attestations a WHERE a.validator_id = v_id;
      v_ahead := v_max_target IS NOT NULL AND p_source >= v_max_source AND p_target > v_max_target
        AND (v_source_floor IS NULL OR p_source >= v_source_floor)
        AND (v_target_floor IS NULL OR p_target > v_target_floor);
    END IF;
    IF v_id IS NOT NULL AND NOT v_ahead THEN
      -- A record with this target; a non-matching one first.
      SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
        FROM sigil_signed_attestations a
        WHERE a.validator_id = v_id AND a.target_epoch = p_target
        ORDER BY (a.source_epoch = p_source AND a.signing_root IS NOT NULL AND a.signing_root = p_root)
        LIMIT 1;
      IF FOUND THEN
        IF v_other.source_epoch = p_source AND v_other.signing_root IS NOT NULL
          AND v_other.signing_root = p_root THEN
          outcome := 'same_data';
        ELSE
          outcome := 'refused';
          reason := 'double_vote';
        END IF;
      ELSE
        SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
          FROM sigil_signed_attestations a
          WHERE a.validator_id = v_id AND a.source_epoch > p_source AND a.target_epoch < p_target
          LIMIT 1;
        IF FOUND THEN
          outcome := 'refused';
          reason := 'surrounding_vote';
        ELSE
          SELECT a.source_epoch, a.target_epoch, a.signing_root INTO v_other
            FROM sigil_signed_attestations a
            WHERE a.validator_id = v_id AND a.source_epoch < p_source AND a.target_epoch > p_target
            LIMIT 1;
          IF FOUND THEN
            outcome := 'refused';
            reason := 'surrounded_vote';
          END IF;
        END IF;
      END IF;
      IF outcome IS NOT NULL THEN
        IF outcome = 'refused' THEN
          other_source := v_other.source_epoch;
          other_target := v_other.target_epoch;
          other_root := v_other.signing_root;
        END IF;
        RETURN;
      END IF;
      SELECT coalesce(v_source_floor, min(a.source_epoch)), coalesce(v_target_floor, min(a.target_epoch))
        INTO v_min_source, v_min_target
        FROM sigil_signed_attestations a WHERE a.validator_id = v_id;
      IF v_min_source IS NOT NULL AND p_source < v_min_source THEN
        outcome := 'refused';
        reason := 'attestation_source_below_low_watermark';
        low_watermark := v_min_source;
        RETURN;
      END IF;
      IF v_min_target IS NOT NULL AND p_target <= v_min_target THEN
        outcome := 'refused';
        reason := 'attestation_target_below_low_watermark';
        low_watermark := v_min_target;
        RETURN;
      END IF;
    END IF;
    -- Accepted: record it.
    IF recorded_gvr IS NULL THEN
      SELECT * INTO v_claim FROM sigil_claim_genesis_validators_root(p_gvr);
      IF NOT v_claim.matches THEN
        outcome := 'refused';
        reason := 'genesis_validators_root_mismatch';
        recorded_gvr := v_claim.recorded;
        RETURN;
      END IF;
      recorded_gvr := v_claim.recorded;
    END IF;
    IF v_id IS NULL THEN
      INSERT INTO sigil_validators (pubkey) VALUES (p_pubkey)
        ON CONFLICT (pubkey) DO NOTHING RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        v_attempt := v_attempt + 1;
        IF v_attempt > 3 THEN
          RAISE EXCEPTION 'could not lock validator 0x%', encode(p_pubkey, 'hex');
        END IF;
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO sigil_signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
      VALUES (v_id, p_source, p_target, p_root);
    outcome := 'new';
    RETURN;
  END LOOP;
END $$;
`;

const V6 = /* sql */ `
CREATE TABLE sigil_database_watermarks (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  low_epoch sigil_u64,
  low_slot sigil_u64,
  high_epoch sigil_u64,
  high_slot sigil_u64,
  CHECK ((low_epoch IS NULL) = (low_slot IS NULL)),
  CHECK ((high_epoch IS NULL) = (high_slot IS NULL))
);

-- The row always exists: a change updates it.
INSERT INTO sigil_database_watermarks DEFAULT VALUES;

-- The checks the signer calls from schema 6 on: the database-wide watermarks of
-- watermark-repair first, then the check of V4/V5, in the same statement. The row is read
-- without a lock: a lock on one row that every check takes would be a hot spot, and one that a
-- change waits for could starve it under a steady stream of checks. A check that started before
-- a change committed may decide with the old row; that is safe because a high watermark is only
-- set a whole epoch beyond the latest epoch any signer may sign at that moment (watermarks.ts).
-- bound: the watermark that refused the message, NULL when they allowed it.
CREATE FUNCTION sigil_check_and_insert_block_bounded(p_gvr bytea, p_pubkey bytea, p_slot numeric,
  p_root bytea, OUT outcome text, OUT reason text, OUT other_root bytea,
  OUT low_watermark numeric, OUT recorded_gvr bytea, OUT bound numeric)
LANGUAGE plpgsql AS $$
DECLARE
  w record;
BEGIN
  SELECT low_slot, high_slot INTO w FROM sigil_database_watermarks;
  IF w.high_slot IS NOT NULL AND p_slot >= w.high_slot THEN
    outcome := 'refused';
    reason := 'block_slot_at_or_above_high_watermark';
    bound := w.high_slot;
    RETURN;
  END IF;
  IF w.low_slot IS NOT NULL AND p_slot < w.low_slot THEN
    outcome := 'refused';
    reason := 'block_slot_below_low_watermark';
    bound := w.low_slot;
    RETURN;
  END IF;
  SELECT c.outcome, c.reason, c.other_root, c.low_watermark, c.recorded_gvr
    INTO outcome, reason, other_root, low_watermark, recorded_gvr
    FROM sigil_check_and_insert_block(p_gvr, p_pubkey, p_slot, p_root) c;
END $$;

CREATE FUNCTION sigil_check_and_insert_attestation_bounded(p_gvr bytea, p_pubkey bytea,
  p_source numeric, p_target numeric, p_root bytea,
  OUT outcome text, OUT reason text, OUT other_source numeric, OUT other_target numeric,
  OUT other_root bytea, OUT low_watermark numeric, OUT recorded_gvr bytea, OUT bound numeric)
LANGUAGE plpgsql AS $$
DECLARE
  w record;
BEGIN
  SELECT low_epoch, high_epoch INTO w FROM sigil_database_watermarks;
  -- A source after its target is left to the check below (source_after_target).
  IF p_source > p_target THEN
    w.low_epoch := NULL;
    w.high_epoch := NULL;
  END IF;
  IF w.high_epoch IS NOT NULL AND (p_source >= w.high_epoch OR p_target >= w.high_epoch) THEN
    outcome := 'refused';
    reason := 'attestation_at_or_above_high_watermark';
    bound := w.high_epoch;
    RETURN;
  END IF;
  IF w.low_epoch IS NOT NULL AND (p_source < w.low_epoch OR p_target < w.low_epoch) THEN
    outcome := 'refused';
    reason := CASE WHEN p_source < w.low_epoch THEN 'attestation_source_below_low_watermark'
                   ELSE 'attestation_target_below_low_watermark' END;
    bound := w.low_epoch;
    RETURN;
  END IF;
  SELECT c.outcome, c.reason, c.other_source, c.other_target, c.other_root, c.low_watermark,
      c.recorded_gvr
    INTO outcome, reason, other_source, other_target, other_root, low_watermark, recorded_gvr
    FROM sigil_check_and_insert_attestation(p_gvr, p_pubkey, p_source, p_target, p_root) c;
END $$;
`;

// The attestation checks of a batch in one call (attestation-batch.ts), each decided as V5 and V6
// decide it alone, at a third to two fifths less server CPU per check (docs/performance.md): the
// database-wide watermarks and the recorded root are read once per call instead of once per
// check, and a vote ahead of every record (V5) is decided by two statements of this function (the
// lock; then the two index probes and the insert) instead of three nested function calls and
// six statements per check. Every other vote (and every
// vote of a validator without a row, or before any root is recorded) is decided by
// sigil_check_and_insert_attestation_bounded, unchanged. The checks run one after the other in
// ascending order of public key (the caller's order, enforced: each validator at most once), and
// each one locks its validator's row (FOR NO KEY UPDATE, as every check since V1 does) before it
// reads that validator's records in a statement of its own, under READ COMMITTED: the locking
// and its order are those of a batch of V6 calls, so signers of either version serialise on one
// database. Keys and roots come as one string of 48 and 32 bytes each, epochs as numeric arrays:
// few parameters for the client to encode. p_lock_timeout, when given, is the lock_timeout of the
// caller's transaction (a batch gives up rather than wait long for a lock).
// Returns one row per check, ord being its position (1-based), in that order.
const V7 = /* sql */ `
CREATE FUNCTION sigil_check_attestations(p_gvr bytea, p_pubkeys bytea, p_sources numeric[],
  p_targets numeric[], p_roots bytea, p_lock_timeout text)
RETURNS TABLE (ord integer, outcome text, reason text, other_source numeric, other_target numeric,
  other_root bytea, low_watermark numeric, recorded_gvr bytea, bound numeric)
LANGUAGE plpgsql AS $$
DECLARE
  n integer := cardinality(p_sources);
  v_gvr_ok boolean;
  v_low numeric;
  v_high numeric;
  v_pubkey bytea;
  v_previous bytea;
  v_source numeric;
  v_target numeric;
  v_root bytea;
  v_id bigint;
  v_source_floor numeric;
  v_target_floor numeric;
  v_recorded integer;
BEGIN
  IF n IS NULL OR array_ndims(p_sources) IS DISTINCT FROM 1 OR array_lower(p_sources, 1) <> 1
    OR array_ndims(p_targets) IS DISTINCT FROM 1 OR array_lower(p_targets, 1) <> 1
    OR cardinality(p_targets) <> n OR octet_length(p_pubkeys) IS DISTINCT FROM 48 * n
    OR octet_length(p_roots) IS DISTINCT FROM 32 * n THEN
    RAISE EXCEPTION 'a batch is n public keys of 48 bytes, n sources, n targets, n roots of 32 bytes'
      USING ERRCODE = '22023';
  END IF;
  -- READ COMMITTED and the root, once. (An empty array has no dimension: refused above.)
  PERFORM sigil_check_arguments(p_gvr, substring(p_pubkeys FOR 48), substring(p_roots FOR 32));
  IF p_lock_timeout IS NOT NULL THEN
    PERFORM set_config('lock_timeout', p_lock_timeout, true);
  END IF;
  -- Read without a lock, once: the root never changes once written, and a watermark change may
  -- be missed by a check in flight (V6 says why that is safe).
  SELECT (SELECT m.genesis_validators_root = p_gvr FROM sigil_metadata m), w.low_epoch, w.high_epoch
    INTO v_gvr_ok, v_low, v_high FROM sigil_database_watermarks w;
  FOR i IN 1..n LOOP
    v_pubkey := substring(p_pubkeys FROM 48 * i - 47 FOR 48);
    IF v_pubkey <= v_previous THEN
      RAISE EXCEPTION 'a batch holds its validators in ascending order of public key, each once'
        USING ERRCODE = '22023';
    END IF;
    v_previous := v_pubkey;
    v_source := p_sources[i];
    v_target := p_targets[i];
    v_root := substring(p_roots FROM 32 * i - 31 FOR 32);
    ord := i;
    outcome := NULL;
    -- V5's vote ahead of every record, for a valid vote the watermarks and the root allow.
    IF v_gvr_ok AND v_source >= 0 AND v_source <= v_target AND v_target <= 18446744073709551615
      AND v_source = trunc(v_source) AND v_target = trunc(v_target)
      AND (v_high IS NULL OR v_target < v_high) AND (v_low IS NULL OR v_source >= v_low) THEN
      SELECT v.id, v.source_floor, v.target_floor INTO v_id, v_source_floor, v_target_floor
        FROM sigil_validators v WHERE v.pubkey = v_pubkey FOR NO KEY UPDATE;
      IF FOUND AND (v_source_floor IS NULL OR v_source >= v_source_floor)
        AND (v_target_floor IS NULL OR v_target > v_target_floor) THEN
        -- Under the lock, in a statement (a snapshot) of its own: the two index probes, and the
        -- record when the vote is ahead of every one. Every writer of this validator's records
        -- holds its lock, so nothing can come between the probes and the insert.
        INSERT INTO sigil_signed_attestations (validator_id, source_epoch, target_epoch,
          signing_root)
        SELECT v_id, v_source, v_target, v_root
        FROM (SELECT max(a.source_epoch) AS max_source, max(a.target_epoch) AS max_target
          FROM sigil_signed_attestations a WHERE a.validator_id = v_id) m
        WHERE m.max_target IS NOT NULL AND v_source >= m.max_source AND v_target > m.max_target;
        GET DIAGNOSTICS v_recorded = ROW_COUNT;
        IF v_recorded = 1 THEN
          outcome := 'new';
          reason := NULL;
          other_source := NULL;
          other_target := NULL;
          other_root := NULL;
          low_watermark := NULL;
          recorded_gvr := NULL;
          bound := NULL;
        END IF;
      END IF;
    END IF;
    IF outcome IS NULL THEN
      SELECT c.outcome, c.reason, c.other_source, c.other_target, c.other_root, c.low_watermark,
          c.recorded_gvr, c.bound
        INTO outcome, reason, other_source, other_target, other_root, low_watermark, recorded_gvr,
          bound
        FROM sigil_check_and_insert_attestation_bounded(p_gvr, v_pubkey, v_source, v_target,
          v_root) c;
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;
`;

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, description: "EIP-3076 complete history, check-and-insert functions", sql: V1 },
  {
    version: 2,
    description: "pruning floors: imports skip history below what pruning kept",
    sql: V2,
  },
  {
    version: 3,
    description: "source floor; floors take part in the low-watermark rules (imported watermarks)",
    sql: V3,
  },
  {
    version: 4,
    description: "a floor is the low watermark, in place of the lowest record",
    sql: V4,
  },
  {
    version: 5,
    description: "attestation check: a vote ahead of every record skips the conflict searches",
    sql: V5,
  },
  {
    version: 6,
    description: "database-wide low and high watermarks (watermark-repair), checked first",
    sql: V6,
  },
  {
    version: 7,
    description: "attestation checks of a batch in one call: a vote ahead of every record inline",
    sql: V7,
  },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/** Session advisory lock held while migrating: "sigil" in ASCII, then 1. */
export const MIGRATION_LOCK_KEY = "8316291889397497857";
