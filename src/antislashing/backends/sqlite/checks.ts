/**
 * The sqlite slashing store: the checks of the sign path, each one transaction (opened by store.ts;
 * imports and exports in interchange.ts, pruning in maintenance.ts).
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
 * Speed. The check queries write each parameter as `+$x`. With a bare `$x` in a comparison that
 * ORDER BY or min() depends on, SQLite marks the prepared statement for re-preparation whenever
 * `$x` is bound again, i.e. on every check: that re-prepare was 90% of a check's time. Unary plus
 * changes no value and no plan (same indexes, checked with EXPLAIN QUERY PLAN); it only makes the
 * parameter an expression the planner does not look into.
 */
import type { Database } from "bun:sqlite";
import { assertAttestationVote, assertBlockProposal, assertRoot, bytesEqual } from "../../encoding";
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
  type InterchangeSource,
  type PubkeyHex,
  type SlashingStore,
  type StagedDecision,
  type StoreMaintenance,
} from "../../store";
import {
  attestationBoundRefusal,
  blockBoundRefusal,
  type DatabaseWatermarks,
  type WatermarkChange,
} from "../../watermarks";
import { type CheckScope, GroupCommit } from "./group-commit";
import { exportFrom, importInto } from "./interchange";
import { pruneHistory } from "./maintenance";
import {
  asBigint,
  asRoot,
  dec,
  decoded,
  enc,
  type Row,
  type StoreAccess,
  watermark,
} from "./store-access";
import { ValidatorIds } from "./validator-ids";
import type { WalSync } from "./wal-sync";
import { BatchWatermarks, readDatabaseWatermarks } from "./watermarks";

const GVR_KEY = "genesis_validators_root";

export class SqliteSlashingStore implements SlashingStore {
  readonly backend = "sqlite" as const;
  readonly strategy = "complete" as const;
  /** Once read or written it never changes (nothing in sigil can change it). */
  private gvr: Uint8Array | null = null;
  private closed = false;

  /** Checks arriving together share one transaction and one WAL sync (see GroupCommit). */
  private readonly commits: GroupCommit<Decision>;
  /** The validators' ids seen committed (validator-ids.ts says why they stay right). */
  private readonly ids = new ValidatorIds();
  /** The database watermarks, read once per batch (watermarks.ts). */
  private readonly watermarks: BatchWatermarks;
  /** What the import, export and prune functions use of this store. */
  private readonly access: StoreAccess;

  constructor(
    private readonly db: Database,
    private readonly durability: WalSync,
    readonly location: string,
    /** Released after the database closes: until then no other process may write it. */
    private readonly locks: readonly { release(): void }[] = [],
    /** How the WAL's checkpoints go (writers); readers have none. */
    readonly maintenance?: () => StoreMaintenance,
    /** Whether the watch found the main file cut or overwritten in place. */
    private readonly fileCutInPlace: () => boolean = () => false,
  ) {
    this.watermarks = new BatchWatermarks(db);
    this.commits = new GroupCommit<Decision>(db, durability, [this.ids, this.watermarks]);
    this.access = {
      db,
      durability,
      isClosed: () => this.closed,
      assertOpen: () => this.assertOpen(),
      readGvr: () => this.readGvr(),
      checkOrStoreGvr: (requested) => this.checkOrStoreGvr(requested),
      validatorId: (pubkey) => this.validatorId(pubkey),
    };
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
  private checkOrStoreGvr(requested: Uint8Array, scope?: CheckScope): Uint8Array {
    const stored = this.readGvr();
    if (stored !== null) return stored;
    scope?.guard(); // the check's insert follows
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

  /** Inside a check: the validator's id, remembered once its row is seen committed. */
  private checkValidatorId(pubkey: string): bigint | null {
    const known = this.ids.get(pubkey);
    if (known !== undefined) return known;
    const id = this.validatorId(pubkey);
    if (id !== null) this.ids.seen(pubkey, id);
    return id;
  }

  /** Inside a check, for a validator with no row yet: its new row (the check's insert follows). */
  private insertValidator(pubkey: string, scope: CheckScope): bigint {
    scope.guard();
    const result = this.db
      .query("INSERT INTO validators (pubkey) VALUES ($pubkey)")
      .run({ pubkey });
    const id = BigInt(result.lastInsertRowid);
    this.ids.seen(pubkey, id);
    return id;
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
    // Lazy savepoint: the writes before the record's insert guard it (GroupCommit.stage).
    return this.commits.stage((scope): Decision => {
      const stored = this.checkOrStoreGvr(genesisValidatorsRoot, scope);
      if (!bytesEqual(stored, genesisValidatorsRoot))
        return genesisMismatch(genesisValidatorsRoot, stored);
      // watermark-repair's bounds (watermarks.ts), in this transaction.
      const bound = blockBoundRefusal(this.watermarks.read(), proposal.slot);
      if (bound !== null) return bound;
      const id = this.checkValidatorId(proposal.pubkey);
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
            v: id ?? this.insertValidator(proposal.pubkey, scope),
            slot: enc(proposal.slot),
            root: proposal.signingRoot,
          });
      }
      return decision;
    }, "lazy");
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
    // Lazy savepoint: the writes before the record's insert guard it (GroupCommit.stage).
    return this.commits.stage((scope): Decision => {
      const stored = this.checkOrStoreGvr(genesisValidatorsRoot, scope);
      if (!bytesEqual(stored, genesisValidatorsRoot))
        return genesisMismatch(genesisValidatorsRoot, stored);
      // watermark-repair's bounds (watermarks.ts), in this transaction.
      const bounds = this.watermarks.read();
      const bound = attestationBoundRefusal(bounds, vote.sourceEpoch, vote.targetEpoch);
      if (bound !== null) return bound;
      const id = this.checkValidatorId(vote.pubkey);
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
            v: id ?? this.insertValidator(vote.pubkey, scope),
            s: enc(vote.sourceEpoch),
            t: enc(vote.targetEpoch),
            root: vote.signingRoot,
          });
      }
      return decision;
    }, "lazy");
  }

  /**
   * Also fails once the WAL could not be synced, or once the files at the paths are no longer the
   * ones open (wal-sync.ts; this looks at them now): the store stops signing.
   */
  async importInterchange(source: InterchangeSource): Promise<ImportReport> {
    return importInto(this.access, source);
  }

  async exportInterchange(pubkeys?: readonly PubkeyHex[]): Promise<InterchangeSource> {
    return exportFrom(this.access, pubkeys);
  }

  /** See maintenance.ts. */
  async prune(epochs: bigint): Promise<{ blocks: number; attestations: number }> {
    return pruneHistory(this.access, epochs);
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
      after = this.watermarks.write(change);
      return SAME_DATA;
    });
    if (after === undefined) throw new Error("sqlite: the watermark change was not made");
    return after;
  }

  // ─── end of watermark-repair ───

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
      // The last connection to close checkpoints the -wal into the main file. Into a file cut or
      // overwritten in place that would write pages among what is left, so it is left open (the
      // process ends soon after): the file stays as found and the -wal keeps the records.
      if (!this.fileCutInPlace()) this.db.close(false);
      for (const lock of this.locks) lock.release();
    }
  }
}
