/**
 * SQLite slashing protection (bun:sqlite): the EIP-3076 COMPLETE strategy, one process per file.
 *
 * Durability. journal_mode = WAL and synchronous = NORMAL, plus our own sync. NORMAL alone only
 * syncs the WAL at checkpoints: a commit survives a process crash but not a power loss or kernel
 * panic, so after a reboot the database could have "forgotten" a message whose signature was
 * already returned — and sign a conflicting one. `FULL` would fsync the WAL inside every COMMIT,
 * and bun:sqlite would hold the event loop for it. Instead, no check resolves (and no import
 * returns) before an fdatasync of the -wal file that started after its commit has succeeded; it
 * runs on the thread pool, and one serves every batch committed before it started (wal-sync.ts,
 * which also says why a failed sync stops all signing). So a signature still never leaves the
 * process before its record is on disk, and the loop keeps serving requests meanwhile. The
 * signer also moves SQLite's WAL checkpoints (a copy and two fsyncs inside a COMMIT) to a worker
 * thread (`checkpoints: "background"`, wal-checkpoint.ts).
 *
 * Atomicity. Every check runs inside ONE `BEGIN IMMEDIATE` transaction: genesis validators root
 * check/store, the rule query (rules.ts), and the insert. Checks that arrive while the event loop
 * is busy share that transaction, each in its own savepoint (group-commit.ts). IMMEDIATE takes the
 * write lock up front, so two processes on one file serialise instead of both reading "no
 * conflict". busy_timeout makes a blocked check wait (bun:sqlite is synchronous: the event loop
 * waits too — transactions are microseconds, so this only matters when another process holds the
 * lock) and then fail (the signer refuses to sign). Within a process, calls run one after the
 * other: each transaction runs synchronously, without an await inside; only the durability
 * barrier is awaited, after the commit.
 *
 * uint64. SQLite integers are signed 64-bit. Slots and epochs are stored as `value - 2^63`, which
 * maps [0, 2^64) onto [-2^63, 2^63) preserving order, so comparisons, MIN() and the indexes work on
 * the full uint64 range (interchanges use values up to 2^64 - 1 as "lock" watermarks). The
 * `readable_*` views decode them for humans (exact below 2^63; REAL above).
 *
 * Import. The interchange is first streamed into TEMP staging tables in short transactions (the
 * main database is not locked meanwhile, and signing continues); a validation error or a broken
 * stream drops the staging tables and nothing is written. Then ONE immediate transaction re-checks
 * the genesis validators root, stores it if the database has none, and copies everything: all or
 * nothing. Exact duplicates (same slot or epochs and the same root, a missing root equal to a
 * missing root) are skipped, so re-importing a file changes nothing.
 *   Pruned validators: records below the floors that `prune` recorded are skipped (see `prune`),
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
 *
 * Pruning: see `prune` below.
 *
 * Speed. The check queries write each parameter as `+$x`. With a bare `$x` in a comparison that
 * ORDER BY or min() depends on, SQLite marks the prepared statement for re-preparation whenever
 * `$x` is bound again, i.e. on every check: that re-prepare was 90% of a check's time. Unary plus
 * changes no value and no plan (same indexes, checked with EXPLAIN QUERY PLAN); it only makes the
 * parameter an expression the planner does not look into.
 */

import { Database } from "bun:sqlite";
import { chmodSync, existsSync } from "node:fs";
import type { Logger } from "../../../observability/log";
import {
  acquireWriterLock,
  fileIdentity,
  SqliteLockedError,
  type WriterLock,
} from "../../../storage/sqlite/lock";
import { runSqliteMigrations } from "../../../storage/sqlite/migrate";
import { openDurableSqlite } from "../../../storage/sqlite/open";
import {
  assertAttestationVote,
  assertBlockProposal,
  assertPubkey,
  assertRoot,
  bytesEqual,
  bytesToHex,
  checkImportedValidator,
  hexToBytes,
} from "../../encoding";
import { interchangeSource } from "../../interchange";
import {
  type AttestationHistory,
  type BlockHistory,
  decideAttestation,
  decideBlock,
  genesisMismatch,
  lowWatermarkSource,
  SAME_DATA,
  type StoredAttestation,
} from "../../rules";
import {
  type AttestationVote,
  type BlockProposal,
  type Decision,
  durableDecision,
  type ImportReport,
  type InterchangeAttestation,
  type InterchangeBlock,
  type InterchangeSource,
  type InterchangeValidator,
  NothingToExportError,
  type PubkeyHex,
  SlashingDatabaseError,
  SlashingImportError,
  type SlashingStore,
  type StagedDecision,
} from "../../store";
import {
  attestationBoundRefusal,
  blockBoundRefusal,
  type DatabaseWatermarks,
  type WatermarkChange,
} from "../../watermarks";
import {
  checkBeforeWriting,
  type DatabaseFiles,
  databaseFiles,
  missingDatabase,
  replacedDatabase,
  watched,
  watchFiles,
} from "./files";
import { GroupCommit } from "./group-commit";
import { MIGRATIONS, SQLITE_SCHEMA_VERSION } from "./migrations";
import { INLINE_CHECKPOINTS, startBackgroundCheckpoints } from "./wal-checkpoint";
import { openWalSync, type SyncWal, type WalSync, type WalWatch } from "./wal-sync";
import { readDatabaseWatermarks, writeWatermarkChange } from "./watermarks";

export interface SqliteStoreOptions {
  /**
   * Create the file when it is missing (`sigil slashing init`, --init-slashing-protection). Without
   * it a missing file is refused: a signer must never start on an empty database by accident.
   */
  readonly create: boolean;
  /**
   * "write" (default): the writer lock is taken and held until close. "read": read-only, no lock,
   * nothing written or migrated (export, dry runs), beside a running signer.
   */
  readonly access?: "write" | "read";
  /** How long a check waits for another process's write lock before failing. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /** The sync of the -wal file behind the durability barrier (tests). Default: fdatasync. */
  readonly syncWal?: SyncWal;
  /**
   * "background": WAL checkpoints run in a worker thread instead of inside a COMMIT on the event
   * loop (wal-checkpoint.ts); the signer uses it. Default "inline": SQLite's own, for short-lived
   * processes (CLI commands, tests).
   */
  readonly checkpoints?: "inline" | "background";
  /**
   * Where the background checkpoints say they started, or fell back to inline ones, and where a
   * change of the files while open is reported.
   */
  readonly logger?: Pick<Logger, "warn" | "info" | "error">;
  /** Starts the checkpoint worker (tests). */
  readonly spawnCheckpointWorker?: () => Worker;
}

/** The database was written by a newer sigil (or is not a sigil database). */
export class SqliteSchemaError extends Error {
  override readonly name = "SqliteSchemaError";
}

const GVR_KEY = "genesis_validators_root";
const OFFSET = 1n << 63n;
const enc = (value: bigint): bigint => value - OFFSET;
const dec = (value: bigint): bigint => value + OFFSET;
/** Staged import rows are flushed to the TEMP tables in transactions of this many rows. */
const STAGE_BATCH = 5000;

// ─── store ─────────────────────────────────────────────────────────────────────────────────────

type Row = Record<string, unknown>;

function asBigint(value: unknown): bigint | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return value;
  if (typeof value === "number") return BigInt(value);
  throw new Error(`sqlite: expected an integer, got ${typeof value}`);
}

/** An encoded column value, decoded; null stays null. */
function decoded(value: unknown): bigint | null {
  const raw = asBigint(value);
  return raw === null ? null : dec(raw);
}

/** The low watermark (both encoded): the floor when there is one, else the lowest record. */
function watermark(lowestRecord: unknown, floor: unknown): bigint | null {
  const effective = asBigint(floor) ?? asBigint(lowestRecord);
  return effective === null ? null : dec(effective);
}

function encFloor(value: bigint | undefined): bigint | null {
  return value === undefined ? null : enc(value);
}

function asRoot(value: unknown): Uint8Array | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Uint8Array) return new Uint8Array(value);
  throw new Error(`sqlite: expected a blob, got ${typeof value}`);
}

let stagingCounter = 0;

class SqliteSlashingStore implements SlashingStore {
  readonly backend = "sqlite" as const;
  readonly strategy = "complete" as const;
  /** Once read or written it never changes (nothing in sigil can change it). */
  private gvr: Uint8Array | null = null;
  private closed = false;

  /** Checks arriving together share one transaction and one WAL sync (see GroupCommit). */
  private readonly commits: GroupCommit<Decision>;

  constructor(
    private readonly db: Database,
    private readonly durability: WalSync,
    readonly location: string,
    /** Released after the database closes: until then no other process may write it. */
    private readonly lock?: WriterLock,
  ) {
    this.commits = new GroupCommit<Decision>(db, durability);
  }

  async storedGenesisValidatorsRoot(): Promise<Uint8Array | null> {
    this.assertOpen();
    return this.readGvr();
  }

  async bindGenesisValidatorsRoot(root: Uint8Array): Promise<Uint8Array> {
    this.assertOpen();
    assertRoot("genesis validators root", root);
    await this.commits.submit(() => {
      this.checkOrStoreGvr(root);
      return SAME_DATA;
    });
    return this.readGvr() ?? root;
  }

  /** A row written and deleted in one transaction: its pages still go through the WAL and its sync. */
  async probeWrite(): Promise<void> {
    this.assertOpen();
    await this.commits.submit(() => {
      this.db
        .query("INSERT OR REPLACE INTO metadata (key, value) VALUES ('write_probe', randomblob(8))")
        .run();
      this.db.query("DELETE FROM metadata WHERE key = 'write_probe'").run();
      return SAME_DATA;
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("sqlite slashing protection store is closed");
  }

  /**
   * Inside a transaction: the stored root, storing `requested` if there is none yet. Only a root
   * read back from the database is cached: one this transaction writes may still be rolled back.
   */
  private checkOrStoreGvr(requested: Uint8Array): Uint8Array {
    const stored = this.readGvr();
    if (stored !== null) return stored;
    this.db
      .query("INSERT INTO metadata (key, value) VALUES ($key, $value)")
      .run({ key: GVR_KEY, value: requested });
    return requested;
  }

  private readGvr(): Uint8Array | null {
    if (this.gvr !== null) return this.gvr;
    const row = this.db
      .query("SELECT value FROM metadata WHERE key = $key")
      .get({ key: GVR_KEY }) as Row | null;
    const stored = asRoot(row?.value ?? null);
    if (stored !== null) this.gvr = stored;
    return stored;
  }

  private validatorId(pubkey: string): bigint | null {
    const row = this.db
      .query("SELECT id FROM validators WHERE pubkey = +$pubkey")
      .get({ pubkey }) as Row | null;
    return asBigint(row?.id ?? null);
  }

  private ensureValidator(pubkey: string): bigint {
    const existing = this.validatorId(pubkey);
    if (existing !== null) return existing;
    const result = this.db
      .query("INSERT INTO validators (pubkey) VALUES ($pubkey)")
      .run({ pubkey });
    return BigInt(result.lastInsertRowid);
  }

  private blockHistory(validatorId: bigint, slot: bigint, root: Uint8Array): BlockHistory {
    const row = this.db
      .query(
        `SELECT
           EXISTS (SELECT 1 FROM signed_blocks WHERE validator_id = +$v AND slot = +$slot) AS same_exists,
           (SELECT signing_root FROM signed_blocks WHERE validator_id = +$v AND slot = +$slot
              ORDER BY signing_root IS +$root LIMIT 1) AS same_root,
           (SELECT slot FROM signed_blocks WHERE validator_id = +$v ORDER BY slot LIMIT 1) AS min_slot,
           (SELECT block_floor FROM validators WHERE id = +$v) AS floor`,
      )
      .get({ v: validatorId, slot: enc(slot), root }) as Row;
    const minSlot = watermark(row.min_slot, row.floor);
    return {
      sameSlot:
        asBigint(row.same_exists) === 1n ? { slot, signingRoot: asRoot(row.same_root) } : null,
      minSlot,
      minSlotFrom: lowWatermarkSource(minSlot, decoded(row.min_slot), decoded(row.floor)),
    };
  }

  private attestationHistory(validatorId: bigint, vote: AttestationVote): AttestationHistory {
    const rows = this.db
      .query(
        `SELECT 1 AS kind, source_epoch, target_epoch, signing_root FROM (
           SELECT source_epoch, target_epoch, signing_root
           FROM signed_attestations INDEXED BY signed_attestations_by_target
           WHERE validator_id = +$v AND target_epoch = +$t
           ORDER BY (source_epoch = +$s AND signing_root IS +$root) LIMIT 1)
         UNION ALL
         SELECT 2, source_epoch, target_epoch, signing_root FROM (
           SELECT source_epoch, target_epoch, signing_root
           FROM signed_attestations INDEXED BY signed_attestations_by_source
           WHERE validator_id = +$v AND source_epoch > +$s AND target_epoch < +$t LIMIT 1)
         UNION ALL
         SELECT 3, source_epoch, target_epoch, signing_root FROM (
           SELECT source_epoch, target_epoch, signing_root
           FROM signed_attestations INDEXED BY signed_attestations_by_target
           WHERE validator_id = +$v AND target_epoch > +$t AND source_epoch < +$s LIMIT 1)
         UNION ALL
         SELECT 4,
           (SELECT source_epoch FROM signed_attestations INDEXED BY signed_attestations_by_source
              WHERE validator_id = +$v ORDER BY source_epoch LIMIT 1),
           (SELECT target_epoch FROM signed_attestations INDEXED BY signed_attestations_by_target
              WHERE validator_id = +$v ORDER BY target_epoch LIMIT 1),
           NULL
         UNION ALL
         SELECT 5, source_floor, target_floor, NULL FROM validators WHERE id = +$v`,
      )
      .all({
        v: validatorId,
        s: enc(vote.sourceEpoch),
        t: enc(vote.targetEpoch),
        root: vote.signingRoot,
      }) as Row[];
    let sameTarget: StoredAttestation | null = null;
    let surroundedByNew: StoredAttestation | null = null;
    let surroundingNew: StoredAttestation | null = null;
    let lowest: Row = {};
    let floors: Row = {};
    for (const row of rows) {
      const kind = asBigint(row.kind);
      if (kind === 4n) lowest = row;
      if (kind === 5n) floors = row;
      const source = asBigint(row.source_epoch);
      const target = asBigint(row.target_epoch);
      if (kind === 4n || kind === 5n) continue;
      if (source === null || target === null) continue;
      const record = {
        sourceEpoch: dec(source),
        targetEpoch: dec(target),
        signingRoot: asRoot(row.signing_root),
      };
      if (kind === 1n) sameTarget = record;
      else if (kind === 2n) surroundedByNew = record;
      else if (kind === 3n) surroundingNew = record;
    }
    const minSource = watermark(lowest.source_epoch, floors.source_epoch);
    const minTarget = watermark(lowest.target_epoch, floors.target_epoch);
    return {
      sameTarget,
      surroundedByNew,
      surroundingNew,
      minSource,
      minTarget,
      minSourceFrom: lowWatermarkSource(
        minSource,
        decoded(lowest.source_epoch),
        decoded(floors.source_epoch),
      ),
      minTargetFrom: lowWatermarkSource(
        minTarget,
        decoded(lowest.target_epoch),
        decoded(floors.target_epoch),
      ),
    };
  }

  async checkAndInsertBlock(
    genesisValidatorsRoot: Uint8Array,
    proposal: BlockProposal,
  ): Promise<Decision> {
    return durableDecision(await this.stageBlock(genesisValidatorsRoot, proposal));
  }

  async stageBlock(
    genesisValidatorsRoot: Uint8Array,
    proposal: BlockProposal,
  ): Promise<StagedDecision> {
    this.assertOpen();
    assertBlockProposal(genesisValidatorsRoot, proposal);
    return this.commits.stage((): Decision => {
      const stored = this.checkOrStoreGvr(genesisValidatorsRoot);
      if (!bytesEqual(stored, genesisValidatorsRoot))
        return genesisMismatch(genesisValidatorsRoot, stored);
      // watermark-repair's bounds (watermarks.ts), in this transaction.
      const bound = blockBoundRefusal(readDatabaseWatermarks(this.db), proposal.slot);
      if (bound !== null) return bound;
      const id = this.validatorId(proposal.pubkey);
      const history: BlockHistory =
        id === null
          ? { sameSlot: null, minSlot: null }
          : this.blockHistory(id, proposal.slot, proposal.signingRoot);
      const decision = decideBlock(history, proposal);
      if (decision.outcome === "new") {
        this.db
          .query(
            "INSERT INTO signed_blocks (validator_id, slot, signing_root) VALUES ($v, $slot, $root)",
          )
          .run({
            v: id ?? this.ensureValidator(proposal.pubkey),
            slot: enc(proposal.slot),
            root: proposal.signingRoot,
          });
      }
      return decision;
    });
  }

  async checkAndInsertAttestation(
    genesisValidatorsRoot: Uint8Array,
    vote: AttestationVote,
  ): Promise<Decision> {
    return durableDecision(await this.stageAttestation(genesisValidatorsRoot, vote));
  }

  async stageAttestation(
    genesisValidatorsRoot: Uint8Array,
    vote: AttestationVote,
  ): Promise<StagedDecision> {
    this.assertOpen();
    assertAttestationVote(genesisValidatorsRoot, vote);
    return this.commits.stage((): Decision => {
      const stored = this.checkOrStoreGvr(genesisValidatorsRoot);
      if (!bytesEqual(stored, genesisValidatorsRoot))
        return genesisMismatch(genesisValidatorsRoot, stored);
      // watermark-repair's bounds (watermarks.ts), in this transaction.
      const bounds = readDatabaseWatermarks(this.db);
      const bound = attestationBoundRefusal(bounds, vote.sourceEpoch, vote.targetEpoch);
      if (bound !== null) return bound;
      const id = this.validatorId(vote.pubkey);
      const history: AttestationHistory =
        id === null
          ? {
              sameTarget: null,
              surroundedByNew: null,
              surroundingNew: null,
              minSource: null,
              minTarget: null,
            }
          : this.attestationHistory(id, vote);
      const decision = decideAttestation(history, vote);
      if (decision.outcome === "new") {
        this.db
          .query(
            `INSERT INTO signed_attestations (validator_id, source_epoch, target_epoch, signing_root)
               VALUES ($v, $s, $t, $root)`,
          )
          .run({
            v: id ?? this.ensureValidator(vote.pubkey),
            s: enc(vote.sourceEpoch),
            t: enc(vote.targetEpoch),
            root: vote.signingRoot,
          });
      }
      return decision;
    });
  }

  async importInterchange(source: InterchangeSource): Promise<ImportReport> {
    this.assertOpen();
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
    const known = this.readGvr();
    if (known !== null && !bytesEqual(known, gvr)) throw mismatch(known);

    const stage = `sigil_import_${process.pid}_${++stagingCounter}`;
    const db = this.db;
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
        if (this.closed)
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
        const stored = this.checkOrStoreGvr(gvr);
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
      if (!this.closed) {
        for (const suffix of ["v", "b", "a"])
          db.run(`DROP TABLE IF EXISTS temp.${stage}_${suffix}`);
      }
    }
    // Its records stand for signatures made elsewhere, and the keys it comes with become active
    // as soon as it returns: durable first.
    await this.durability.barrier();
    return report;
  }

  async exportInterchange(pubkeys?: readonly PubkeyHex[]): Promise<InterchangeSource> {
    this.assertOpen();
    for (const pubkey of pubkeys ?? []) assertPubkey(pubkey);
    const gvr = this.readGvr();
    if (gvr === null) {
      throw new NothingToExportError(
        "the slashing protection database has no genesis validators root yet (nothing was ever signed or imported): nothing to export",
      );
    }
    const targets: { id: bigint; pubkey: string }[] = [];
    if (pubkeys === undefined) {
      for (const row of this.db
        .query("SELECT id, pubkey FROM validators ORDER BY pubkey")
        .all() as Row[]) {
        targets.push({ id: asBigint(row.id) ?? 0n, pubkey: String(row.pubkey) });
      }
    } else {
      for (const pubkey of new Set(pubkeys)) {
        const id = this.validatorId(pubkey);
        if (id !== null) targets.push({ id, pubkey });
      }
    }
    const self = this;
    return interchangeSource(
      { interchange_format_version: "5", genesis_validators_root: bytesToHex(gvr) },
      async function* () {
        for (const target of targets) {
          self.assertOpen();
          yield self.readValidator(target.id, target.pubkey);
        }
      },
    );
  }

  private readValidator(id: bigint, pubkey: string): InterchangeValidator {
    const blocks = (
      this.db
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
      this.db
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
  async prune(epochs: bigint): Promise<{ blocks: number; attestations: number }> {
    this.assertOpen();
    if (typeof epochs !== "bigint" || epochs < 1n)
      throw new RangeError("prune: epochs must be a bigint >= 1");
    const removed = { blocks: 0, attestations: 0 };
    const ids = (this.db.query("SELECT id FROM validators ORDER BY id").all() as Row[]).map(
      (r) => asBigint(r.id) ?? 0n,
    );
    const db = this.db;
    for (const id of ids) {
      if (this.closed) break;
      db.transaction(() => {
        const maxSlotRow = db
          .query(
            "SELECT slot FROM signed_blocks WHERE validator_id = $v ORDER BY slot DESC LIMIT 1",
          )
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

  // ─── watermark-repair (backends/sqlite/watermarks.ts) ───

  async databaseWatermarks(): Promise<DatabaseWatermarks> {
    this.assertOpen();
    return readDatabaseWatermarks(this.db);
  }

  async changeWatermarks(change: WatermarkChange): Promise<DatabaseWatermarks> {
    this.assertOpen();
    let after: DatabaseWatermarks | undefined;
    await this.commits.submit(() => {
      after = writeWatermarkChange(this.db, change);
      return SAME_DATA;
    });
    if (after === undefined) throw new Error("sqlite: the watermark change was not made");
    return after;
  }

  // ─── end of watermark-repair ───

  /**
   * Also fails once the WAL could not be synced, or once the files at the paths are no longer the
   * ones open (wal-sync.ts; this looks at them now): the store stops signing.
   */
  async ping(): Promise<void> {
    this.assertOpen();
    this.durability.check();
    this.db.query("SELECT 1").get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Checks already accepted are decided, committed and synced (or rejected) before the file closes.
    try {
      await this.commits.drain();
      await this.durability.close();
    } finally {
      this.db.close(false);
      this.lock?.release();
    }
  }
}

/**
 * Opens the slashing protection database at `path` (":memory:" for tests): WAL,
 * synchronous=NORMAL with the durability barrier (see the module comment), foreign keys, busy
 * timeout, then pending schema migrations. Refuses a database whose schema version is newer than
 * this build knows (SqliteSchemaError).
 *
 * Writers ("write", the default) take the file's writer lock first (storage/sqlite/lock.ts: one
 * writer per file, SlashingDatabaseError "in_use" naming the holder) and hold it until close. A
 * missing file is created only with `create` (`sigil slashing init`); otherwise, and for files
 * that are not the ones last written (files.ts), SlashingDatabaseError. While open, the files at
 * the paths are watched after every WAL sync and at every ping: once they are not the ones open,
 * the store stops (DatabaseFileChangedError), logs it once, and saves what it holds.
 *
 * Readers ("read": export, a dry run) take no lock, open read-only, write nothing and migrate
 * nothing; they work beside a running signer.
 */
export async function openSqliteStore(
  path: string,
  options: SqliteStoreOptions,
): Promise<SlashingStore> {
  if (path === ":memory:" || path === "") return openMigrated(path, options, undefined);
  const files = databaseFiles(path);
  const exists = existsSync(files.resolved);
  if (options.access === "read") {
    if (!exists) throw missingDatabase(files);
    return openReader(files, options);
  }
  if (!exists && !options.create) throw missingDatabase(files);
  let lock: WriterLock;
  try {
    lock = acquireWriterLock(files.resolved);
  } catch (error) {
    if (error instanceof SqliteLockedError) {
      throw new SlashingDatabaseError(
        "in_use",
        `slashing protection database ${files.configured} is in use by ${error.holderPid === undefined ? "another process" : `process ${error.holderPid}`} ` +
          `(${error.lockFile}): one process at a time writes a sqlite database; stop it first`,
      );
    }
    throw error;
  }
  try {
    checkBeforeWriting(files, exists, lock.previous);
    if (exists) assertSigilDatabase(files);
    return await openMigrated(path, options, { files, lock, existed: exists });
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** Refuses a file that is not a sigil slashing protection database, before anything writes it. */
function assertSigilDatabase(files: DatabaseFiles): void {
  let tables: string[];
  try {
    const probe = new Database(files.resolved, { readonly: true });
    try {
      tables = (
        probe.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
          name: string;
        }[]
      ).map((row) => row.name);
    } finally {
      probe.close(false);
    }
  } catch (error) {
    throw new SlashingDatabaseError(
      "not_a_database",
      `${files.configured} is not a slashing protection database (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  // An empty database (no tables yet) is a file init created and a crash interrupted.
  if (tables.length > 0 && !(tables.includes("schema_version") && tables.includes("metadata"))) {
    throw new SlashingDatabaseError(
      "not_a_database",
      `${files.configured} is a SQLite database, but not a sigil slashing protection database`,
    );
  }
}

/** A reader: read-only, no lock, no migration, nothing to make durable. */
function openReader(files: DatabaseFiles, options: SqliteStoreOptions): SlashingStore {
  assertSigilDatabase(files);
  const db = new Database(files.resolved, { readonly: true, strict: true, safeIntegers: true });
  try {
    db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    const row = db.query("SELECT MAX(version) AS version FROM schema_version").get() as {
      version: bigint | null;
    } | null;
    const version = Number(row?.version ?? 0);
    if (version > SQLITE_SCHEMA_VERSION) {
      throw new SqliteSchemaError(
        `slashing protection database has schema version ${version}, newer than this sigil knows (${SQLITE_SCHEMA_VERSION}); refusing to open it (upgrade sigil)`,
      );
    }
  } catch (error) {
    db.close(false);
    throw error;
  }
  return new SqliteSlashingStore(db, READ_ONLY, files.configured);
}

const READ_ONLY: WalSync = {
  barrier: async () => {},
  assertHealthy: () => {},
  check: () => {},
  close: async () => {},
};

const DATABASE_ID_KEY = "database_id";

interface Writer {
  readonly files: DatabaseFiles;
  readonly lock: WriterLock;
  /** The main file was there before this open (false: `create` made it). */
  readonly existed: boolean;
}

async function openMigrated(
  path: string,
  options: SqliteStoreOptions,
  writer: Writer | undefined,
): Promise<SlashingStore> {
  const db = openDurableSqlite(path, {
    busyTimeoutMs: options.busyTimeoutMs,
    safeIntegers: true,
    foreignKeys: true,
    synchronous: "NORMAL",
  });
  let wal: WalSync;
  try {
    let found: string | null = null;
    if (writer) {
      db.query("SELECT count(*) FROM sqlite_master").get(); // a read in WAL mode creates the -wal
      found = checkDatabaseId(db, writer);
      // Before the first write, so that a crash from here on leaves files the lock file knows.
      recordFiles(writer, found);
    }
    runSqliteMigrations(db, {
      what: "slashing protection",
      versionTable: "schema_version",
      migrations: MIGRATIONS,
      schemaError: (message) => new SqliteSchemaError(message),
    });
    const watch = writer ? watchWriter(db, writer, options.logger) : undefined;
    wal = openWalSync(db, options.syncWal, watch);
    if (writer) recordFiles(writer, found ?? newDatabaseId(db));
  } catch (error) {
    db.close(false);
    throw error;
  }
  const checkpoints =
    options.checkpoints === "background"
      ? await startBackgroundCheckpoints(db, {
          logger: options.logger,
          spawn: options.spawnCheckpointWorker,
        })
      : INLINE_CHECKPOINTS;
  // Checks and imports pass the barrier after each commit: that is where a checkpoint comes due.
  const durability: WalSync = {
    barrier: () => {
      checkpoints.committed();
      return wal.barrier();
    },
    assertHealthy: () => wal.assertHealthy(),
    check: () => wal.check(),
    close: async () => {
      await checkpoints.close();
      await wal.close();
    },
  };
  return new SqliteSlashingStore(db, durability, writer?.files.configured ?? path, writer?.lock);
}

function readDatabaseId(db: Database): string | null {
  const hasMetadata = db
    .query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'metadata'")
    .get();
  if (!hasMetadata) return null;
  const row = db
    .query("SELECT value FROM metadata WHERE key = $key")
    .get({ key: DATABASE_ID_KEY }) as Row | null;
  const value = asRoot(row?.value ?? null);
  return value === null ? null : bytesToHex(value).slice(2);
}

/**
 * The database's id, checked against the one the lock file remembers: another database at the
 * path is refused, and so is one without an id where the lock file remembers one. A database
 * `create` has just made replaces whatever was remembered: that is what init is for. Null when
 * the database has no id yet (just created, or made before ids existed): it gets one.
 */
function checkDatabaseId(db: Database, writer: Writer): string | null {
  const found = readDatabaseId(db);
  const expected = writer.lock.previous?.database_id;
  if (expected !== undefined && writer.existed && found !== expected) {
    throw replacedDatabase(writer.files, writer.lock.path, found, expected);
  }
  return found;
}

/** A new id, on disk before the lock file names it (a commit with synchronous = FULL, once). */
function newDatabaseId(db: Database): string {
  const id = crypto.getRandomValues(new Uint8Array(16));
  db.run("PRAGMA synchronous = FULL");
  try {
    db.transaction(() => {
      db.query("INSERT INTO metadata (key, value) VALUES ($key, $value)").run({
        key: DATABASE_ID_KEY,
        value: id,
      });
    }).immediate();
  } finally {
    db.run("PRAGMA synchronous = NORMAL");
  }
  return bytesToHex(id).slice(2);
}

/** Writes what this writer has open into the lock file, for the next one to compare. */
function recordFiles(writer: Writer, databaseId: string | null): void {
  const main = fileIdentity(writer.files.resolved);
  const wal = fileIdentity(writer.files.wal);
  writer.lock.write({
    ...(databaseId !== null && { database_id: databaseId }),
    ...(main !== undefined && { main }),
    ...(wal !== undefined && { wal }),
  });
}

/**
 * The watch of a writer's files (files.ts). On the first change it logs one line naming the file
 * and saves what the connection still holds: a checkpoint puts the log's records into the main
 * file it has open (enough when only the -wal went: the main file at the path is that file), and
 * when the main file itself went, a copy of the whole database is written beside the path.
 */
function watchWriter(db: Database, writer: Writer, logger: SqliteStoreOptions["logger"]): WalWatch {
  const files = [watched(writer.files.configured, true), watched(writer.files.wal, false)];
  return watchFiles(files, writer.lock, (error, mainFile) => {
    const saved: Record<string, string> = {};
    try {
      db.query("PRAGMA wal_checkpoint(FULL)").get();
      saved.checkpoint = "done";
    } catch (cause) {
      saved.checkpoint = `failed: ${String(cause)}`;
    }
    if (mainFile) {
      const copy = `${writer.files.resolved}.rescued-${new Date().toISOString().replaceAll(":", "")}`;
      try {
        db.run(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
        chmodSync(copy, 0o600);
        saved.copy = copy;
      } catch (cause) {
        saved.copy = `failed: ${String(cause)}`;
      }
    }
    logger?.error(
      `slashing protection database file changed while open: ${error.message}; signing stopped ` +
        "(503 slashing_db_unavailable, /healthcheck DOWN) until sigil is restarted, and a restart " +
        "refuses files that are not the ones written (docs/antislashing.md)",
      { file: writer.files.configured, ...saved },
    );
  });
}
