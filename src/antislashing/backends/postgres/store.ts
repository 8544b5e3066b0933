/**
 * PostgreSQL slashing protection: the EIP-3076 *complete* strategy, safe for several signer
 * processes on one database.
 *
 * Every check is ONE round trip: `SELECT * FROM sigil_check_…($1, …)`, a plpgsql function that
 * locks the validator, applies the rules, records an accepted message and returns the decision,
 * all in the statement's own transaction (schema, types and locking: migrations.ts; URL, TLS and
 * force_ipv4: storage/postgres/connection.ts). Attestation checks arriving in the same event-loop
 * turn share that round trip and transaction (`sigil_check_attestations`, attestation-batch.ts).
 *
 * Errors are never decisions: a failed connection or query rejects, and the caller answers 503.
 * A check whose connection breaks after the server committed it is reported as an error too; the
 * client's retry with the same signing root then gets "same_data".
 *
 * Operations notes:
 *   - Tables, types and functions are created (migrations, on open) in the first schema of the
 *     session's search_path, with a `sigil_` prefix. Several chains can share one database with
 *     one schema each: `postgres://…/db?search_path=holesky` (any URL parameter that is not a
 *     TLS one is passed to the server as a session setting).
 *   - The statements are prepared (postgres.js default): behind PgBouncer use session pooling.
 *   - An import is one transaction that locks each validator it has read until it commits, so
 *     signing for those validators waits for the import (the source is streamed meanwhile).
 *     Two imports (or an import and a prune) locking the same validators in different orders can
 *     deadlock; PostgreSQL then fails one of them, which writes nothing.
 */
import type postgres from "postgres";
import type { Logger } from "../../../observability/log";
import { PostgresConfigError, parsePostgresUrl } from "../../../storage/postgres/connection";
import { openMigratedPostgres, type PostgresDatabase } from "../../../storage/postgres/open";
import type { PostgresPoolOptions } from "../../../storage/postgres/settings";
import { assertAttestationVote, assertBlockProposal, assertPubkey, isUint64 } from "../../encoding";
import {
  type AttestationHistory,
  type BlockHistory,
  decideAttestation,
  decideBlock,
  genesisMismatch,
  lowWatermarkSource,
  NEW,
  type NewAttestation,
  type NewBlock,
  SAME_DATA,
  type StoredAttestation,
} from "../../rules";
import {
  type AttestationVote,
  type BlockProposal,
  type Decision,
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
} from "../../store";
import {
  applyWatermarkChange,
  attestationBoundRefusal,
  blockBoundRefusal,
  type DatabaseWatermarks,
  NO_WATERMARKS,
  type WatermarkChange,
} from "../../watermarks";
import { AttestationBatcher, type AttestationRow } from "./attestation-batch";
import { MIGRATION_LOCK_KEY, MIGRATIONS } from "./migrations";

export { PostgresConfigError };

/** `antislashing.url`, `.pool_size`, `.force_ipv4` (storage/postgres/open.ts). */
export type PostgresStoreOptions = PostgresPoolOptions;

/** The database was migrated by a newer sigil than this one. */
export class PostgresSchemaError extends Error {
  override readonly name = "PostgresSchemaError";
}

type Sql = postgres.Sql;

const CLOSE_TIMEOUT_SECONDS = 5;
/** Validators per prune transaction. */
const PRUNE_BATCH = 500;
/** Rows per cursor batch when exporting. */
const EXPORT_BATCH = 1000;

function pubkeyBytes(pubkey: PubkeyHex): Buffer {
  assertPubkey(pubkey);
  return Buffer.from(pubkey.slice(2), "hex");
}

/** A view, not a copy; checks the length. */
function rootBytes(root: Uint8Array, what: string): Buffer {
  if (!(root instanceof Uint8Array) || root.length !== 32) {
    throw new TypeError(`${what} must be 32 bytes`);
  }
  return Buffer.from(root.buffer, root.byteOffset, root.byteLength);
}

/** Decimal text of a uint64 (the functions take numeric: no precision is lost on the way). */
function uint64(value: bigint, what: string): string {
  if (typeof value !== "bigint" || !isUint64(value)) {
    throw new RangeError(`${what} must be a uint64 bigint, got ${String(value)}`);
  }
  return value.toString();
}

function toHex(bytes: Uint8Array): string {
  return rootBytes(bytes, "signing root").toString("hex");
}

interface BlockRow {
  outcome: string;
  reason: string | null;
  other_root: Buffer | null;
  low_watermark: string | null;
  recorded_gvr: Buffer | null;
  /** The database-wide watermark that refused it (watermark-repair); null otherwise. */
  bound: string | null;
}

/**
 * The SQL function decides; the shared rules word the refusal, fed with the facts the function
 * returned (the conflicting record, the watermark). Feeding them only the fact behind the
 * refusal must lead them to the same reason: if not, SQL and rules.ts disagree, which is a bug
 * worth a 503 (nothing was written: refusals never write). A refusal by a database-wide
 * watermark (`bound`) is worded by watermarks.ts, fed with that watermark alone.
 */
function worded(
  row: BlockRow | undefined,
  gvr: Uint8Array,
  decide: () => Decision,
  bounded: () => Decision | null,
): Decision {
  if (row === undefined) throw new Error("slashing protection function returned no row");
  if (row.outcome === "new") return NEW;
  if (row.outcome === "same_data") return SAME_DATA;
  if (row.outcome !== "refused" || row.reason === null) {
    throw new Error(`slashing protection function returned outcome ${row.outcome}`);
  }
  if (row.reason === "genesis_validators_root_mismatch") {
    return genesisMismatch(gvr, new Uint8Array(row.recorded_gvr ?? []));
  }
  const decision = row.bound === null ? decide() : bounded();
  if (decision === null)
    throw new Error("slashing protection: the watermarks allow what the database refused");
  if (decision.outcome !== "refused" || decision.reason !== row.reason) {
    throw new Error(
      `slashing protection: the database refused with ${row.reason} but the rules say ${decision.outcome === "refused" ? decision.reason : decision.outcome}`,
    );
  }
  return decision;
}

const bigintOrNull = (value: string | null) => (value === null ? null : BigInt(value));
const rootOrNull = (value: Buffer | null) => (value === null ? null : new Uint8Array(value));

/**
 * A validator's lowest records and floors, read only for a refusal below the low watermark, to
 * word it: the check function returns the watermark, not whether it is a record or a floor (its
 * migrations are released and frozen). Read after the check, outside its lock: a write in between
 * can change the wording, never the decision.
 */
interface LowWatermarkRow {
  min_slot: string | null;
  min_source: string | null;
  min_target: string | null;
  block_floor: string | null;
  source_floor: string | null;
  target_floor: string | null;
}

function blockDecision(
  row: BlockRow | undefined,
  gvr: Uint8Array,
  block: NewBlock,
  low: LowWatermarkRow | undefined,
): Decision {
  return worded(
    row,
    gvr,
    () => {
      const reason = row?.reason;
      const minSlot =
        reason === "block_slot_below_low_watermark"
          ? bigintOrNull(row?.low_watermark ?? null)
          : null;
      const history: BlockHistory = {
        sameSlot:
          reason === "double_block_proposal"
            ? { slot: block.slot, signingRoot: rootOrNull(row?.other_root ?? null) }
            : null,
        minSlot,
        minSlotFrom: lowWatermarkSource(
          minSlot,
          bigintOrNull(low?.min_slot ?? null),
          bigintOrNull(low?.block_floor ?? null),
        ),
      };
      return decideBlock(history, block);
    },
    () => blockBoundRefusal(boundAt(row), block.slot),
  );
}

function attestationDecision(
  row: AttestationRow | undefined,
  gvr: Uint8Array,
  vote: NewAttestation,
  low: LowWatermarkRow | undefined,
): Decision {
  return worded(
    row,
    gvr,
    () => {
      const reason = row?.reason;
      const other: StoredAttestation | null =
        row?.other_source != null && row.other_target != null
          ? {
              sourceEpoch: BigInt(row.other_source),
              targetEpoch: BigInt(row.other_target),
              signingRoot: rootOrNull(row.other_root),
            }
          : null;
      const watermark = bigintOrNull(row?.low_watermark ?? null);
      const history: AttestationHistory = {
        sameTarget: reason === "double_vote" ? other : null,
        surroundedByNew: reason === "surrounding_vote" ? other : null,
        surroundingNew: reason === "surrounded_vote" ? other : null,
        minSource: reason === "attestation_source_below_low_watermark" ? watermark : null,
        minTarget: reason === "attestation_target_below_low_watermark" ? watermark : null,
        minSourceFrom: lowWatermarkSource(
          watermark,
          bigintOrNull(low?.min_source ?? null),
          bigintOrNull(low?.source_floor ?? null),
        ),
        minTargetFrom: lowWatermarkSource(
          watermark,
          bigintOrNull(low?.min_target ?? null),
          bigintOrNull(low?.target_floor ?? null),
        ),
      };
      return decideAttestation(history, vote);
    },
    () => attestationBoundRefusal(boundAt(row), vote.sourceEpoch, vote.targetEpoch),
  );
}

/** The watermark that refused, as the high or low one the reason names. */
function boundAt(row: BlockRow | AttestationRow | undefined): DatabaseWatermarks {
  const value = row?.bound ?? null;
  if (value === null) return NO_WATERMARKS;
  const mark = { epoch: BigInt(value), slot: BigInt(value) };
  return row?.reason?.endsWith("_high_watermark") ? { high: mark } : { low: mark };
}

interface WatermarkRow {
  low_epoch: string | null;
  low_slot: string | null;
  high_epoch: string | null;
  high_slot: string | null;
}

function watermarksOf(row: WatermarkRow | undefined): DatabaseWatermarks {
  if (row === undefined) return NO_WATERMARKS;
  const mark = (epoch: string | null, slot: string | null) =>
    epoch === null || slot === null ? undefined : { epoch: BigInt(epoch), slot: BigInt(slot) };
  const low = mark(row.low_epoch, row.low_slot);
  const high = mark(row.high_epoch, row.high_slot);
  return { ...(low && { low }), ...(high && { high }) };
}

interface ExportRow {
  pubkey: Buffer;
  /** 0 block, 1 attestation, null: a validator without records. */
  kind: number | null;
  a: string | null;
  b: string | null;
  signing_root: Buffer | null;
}

class PostgresStore implements SlashingStore {
  readonly backend = "postgres" as const;
  readonly strategy = "complete" as const;
  private closing: Promise<void> | undefined;
  private readonly attestations: AttestationBatcher;

  constructor(
    private readonly sql: Sql,
    private readonly logger: Logger | undefined,
    /** The database, without its password (connection.ts). */
    readonly location: string,
    poolSize: number,
  ) {
    this.attestations = new AttestationBatcher(sql, poolSize);
  }

  async storedGenesisValidatorsRoot(): Promise<Uint8Array | null> {
    this.assertOpen();
    const [row] = await this.sql<{ genesis_validators_root: Buffer }[]>`
      SELECT genesis_validators_root FROM sigil_metadata`;
    return row === undefined ? null : new Uint8Array(row.genesis_validators_root);
  }

  /** The claim function every check uses: the first root recorded wins, in one statement. */
  async bindGenesisValidatorsRoot(root: Uint8Array): Promise<Uint8Array> {
    this.assertOpen();
    const gvr = rootBytes(root, "genesis validators root");
    const [claim] = await this.sql<{ recorded: Buffer }[]>`
      SELECT recorded FROM sigil_claim_genesis_validators_root(${gvr})`;
    if (claim === undefined) throw new Error("sigil_claim_genesis_validators_root returned no row");
    return new Uint8Array(claim.recorded);
  }

  /**
   * An INSERT that inserts nothing (the row it copies is the one it would conflict with), yet is
   * refused as any write is by a server that cannot take one (a read-only replica after a failover,
   * a full disk's read-only mode, a revoked grant).
   */
  async probeWrite(): Promise<void> {
    this.assertOpen();
    await this.sql`
      INSERT INTO sigil_metadata (genesis_validators_root)
      SELECT genesis_validators_root FROM sigil_metadata ON CONFLICT DO NOTHING`;
  }

  async checkAndInsertBlock(
    genesisValidatorsRoot: Uint8Array,
    proposal: BlockProposal,
  ): Promise<Decision> {
    assertBlockProposal(genesisValidatorsRoot, proposal);
    const gvr = rootBytes(genesisValidatorsRoot, "genesis validators root");
    const pubkey = pubkeyBytes(proposal.pubkey);
    const slot = uint64(proposal.slot, "slot");
    const root = rootBytes(proposal.signingRoot, "signing root");
    this.assertOpen();
    const [row] = await this.sql<BlockRow[]>`
      SELECT outcome, reason, other_root, low_watermark::text AS low_watermark, recorded_gvr,
        bound::text AS bound
      FROM sigil_check_and_insert_block_bounded(${gvr}, ${pubkey}, ${slot}::numeric, ${root})`;
    const low =
      row?.bound == null && row?.reason === "block_slot_below_low_watermark"
        ? await this.lowWatermarks(pubkey)
        : undefined;
    return blockDecision(row, genesisValidatorsRoot, proposal, low);
  }

  /** See LowWatermarkRow; undefined (the wording of a record) when it cannot be read. */
  private async lowWatermarks(pubkey: Buffer): Promise<LowWatermarkRow | undefined> {
    try {
      const [row] = await this.sql<LowWatermarkRow[]>`
        SELECT
          (SELECT min(b.slot) FROM sigil_signed_blocks b WHERE b.validator_id = v.id)::text AS min_slot,
          (SELECT min(a.source_epoch) FROM sigil_signed_attestations a
             WHERE a.validator_id = v.id)::text AS min_source,
          (SELECT min(a.target_epoch) FROM sigil_signed_attestations a
             WHERE a.validator_id = v.id)::text AS min_target,
          v.block_floor::text AS block_floor, v.source_floor::text AS source_floor,
          v.target_floor::text AS target_floor
        FROM sigil_validators v WHERE v.pubkey = ${pubkey}`;
      return row;
    } catch {
      return undefined;
    }
  }

  async checkAndInsertAttestation(
    genesisValidatorsRoot: Uint8Array,
    vote: AttestationVote,
  ): Promise<Decision> {
    assertAttestationVote(genesisValidatorsRoot, vote);
    const gvr = rootBytes(genesisValidatorsRoot, "genesis validators root");
    const pubkey = pubkeyBytes(vote.pubkey);
    const source = uint64(vote.sourceEpoch, "source epoch");
    const target = uint64(vote.targetEpoch, "target epoch");
    const root = rootBytes(vote.signingRoot, "signing root");
    this.assertOpen();
    const row = await this.attestations.check({ gvr, pubkey, source, target, root });
    const low =
      row?.bound == null && row?.reason?.endsWith("_below_low_watermark")
        ? await this.lowWatermarks(pubkey)
        : undefined;
    return attestationDecision(row, genesisValidatorsRoot, vote, low);
  }

  async importInterchange(source: InterchangeSource): Promise<ImportReport> {
    this.assertOpen();
    const gvrHex = source.metadata.genesis_validators_root.toLowerCase();
    if (!/^0x[0-9a-f]{64}$/.test(gvrHex)) {
      throw new SlashingImportError(
        `interchange genesis_validators_root ${JSON.stringify(source.metadata.genesis_validators_root)} is not a 32-byte hex root`,
      );
    }
    const gvr = Buffer.from(gvrHex.slice(2), "hex");
    const report = { validators: 0, blocks: 0, attestations: 0 };
    await this.sql.begin("isolation level read committed", async (tx) => {
      // Before any write: the recorded root (FOR SHARE waits for a first recording in flight).
      const [recorded] = await tx<{ genesis_validators_root: Buffer }[]>`
        SELECT genesis_validators_root FROM sigil_metadata FOR SHARE`;
      if (recorded !== undefined && !recorded.genesis_validators_root.equals(gvr)) {
        throw new SlashingImportError(
          `interchange genesis_validators_root ${gvrHex} does not match the recorded ` +
            `0x${recorded.genesis_validators_root.toString("hex")}; nothing imported`,
        );
      }
      if (recorded === undefined) {
        const [claim] = await tx<{ matches: boolean; recorded: Buffer }[]>`
          SELECT matches, recorded FROM sigil_claim_genesis_validators_root(${gvr})`;
        if (claim === undefined || !claim.matches) {
          throw new SlashingImportError(
            `interchange genesis_validators_root ${gvrHex} does not match the recorded ` +
              `0x${claim?.recorded.toString("hex") ?? "?"}; nothing imported`,
          );
        }
      }
      for await (const validator of source.validators()) {
        const pubkey = pubkeyBytes(validator.pubkey);
        const blocks = validator.blocks.map((b) => importedBlock(b));
        const attestations = validator.attestations.map((a) => importedAttestation(a));
        // Records and floors in one call, under the validator's lock (migrations.ts, V4).
        const floors = importedFloors(validator);
        await tx`
          SELECT blocks, attestations FROM sigil_import_validator_with_floors(
            ${pubkey},
            ${blocks.map((b) => b.slot)}::text[],
            ${blocks.map((b) => b.root)}::text[],
            ${attestations.map((a) => a.source)}::text[],
            ${attestations.map((a) => a.target)}::text[],
            ${attestations.map((a) => a.root)}::text[],
            ${floors.block}::numeric, ${floors.source}::numeric, ${floors.target}::numeric)`;
        report.validators += 1;
        report.blocks += blocks.length;
        report.attestations += attestations.length;
      }
    });
    this.logger?.info("slashing protection: interchange imported", report);
    return report;
  }

  async exportInterchange(pubkeys?: readonly PubkeyHex[]): Promise<InterchangeSource> {
    this.assertOpen();
    // Requested validators in the order asked (duplicates once); unknown ones are left out.
    const wanted =
      pubkeys === undefined
        ? null
        : [...new Set(pubkeys)].map((p) => pubkeyBytes(p).toString("hex"));
    const [recorded] = await this.sql<{ genesis_validators_root: Buffer }[]>`
      SELECT genesis_validators_root FROM sigil_metadata`;
    if (recorded === undefined) {
      throw new NothingToExportError(
        "the slashing protection database has no genesis validators root yet " +
          "(nothing was ever signed or imported): nothing to export",
      );
    }
    const sql = this.sql;
    const closed = () => this.closing !== undefined;
    return {
      metadata: {
        interchange_format_version: "5",
        genesis_validators_root: `0x${recorded.genesis_validators_root.toString("hex")}`,
      },
      validators: () => exportValidators(sql, wanted, closed),
    };
  }

  /**
   * Per validator, relative to its newest record: keeps blocks with slot > max - 32·epochs and
   * attestations with target > max - epochs (the newest record is always kept). Attestations are
   * pruned only where that is sound (sigil_prune_validator): the same rules as the sqlite backend.
   * A validator that loses records gets floors (the lowest slot / target kept), below which a
   * later import skips history instead of re-opening what was pruned (migrations.ts, V2).
   * Runs in batches of validators, each batch one short transaction holding their locks, so
   * signing goes on meanwhile.
   */
  async prune(epochs: bigint): Promise<{ blocks: number; attestations: number }> {
    this.assertOpen();
    if (typeof epochs !== "bigint" || epochs < 1n) {
      throw new RangeError("prune: epochs must be a bigint >= 1");
    }
    const keep = uint64(epochs, "epochs");
    const removed = { blocks: 0, attestations: 0 };
    let after = "0";
    for (;;) {
      const [batch] = await this.sql<
        { last: string | null; blocks: string | null; attestations: string | null }[]
      >`
        SELECT max(v.id)::text AS last, sum(p.blocks)::text AS blocks,
          sum(p.attestations)::text AS attestations
        FROM (SELECT id FROM sigil_validators WHERE id > ${after}::bigint ORDER BY id LIMIT ${PRUNE_BATCH}) v
        CROSS JOIN LATERAL sigil_prune_validator(v.id, ${keep}::numeric) p`;
      if (batch?.last == null) break;
      after = batch.last;
      removed.blocks += Number(batch.blocks ?? 0);
      removed.attestations += Number(batch.attestations ?? 0);
    }
    this.logger?.info("slashing protection: pruned", { epochs, ...removed });
    return removed;
  }

  async databaseWatermarks(): Promise<DatabaseWatermarks> {
    this.assertOpen();
    const [row] = await this.sql<WatermarkRow[]>`
      SELECT low_epoch::text, low_slot::text, high_epoch::text, high_slot::text
      FROM sigil_database_watermarks`;
    return watermarksOf(row);
  }

  /**
   * FOR UPDATE serialises two changes; checks read the row without a lock, so they never wait
   * for a change, and every check that starts after its commit reads the new row (migrations.ts,
   * V6, says why one in flight may use the old one).
   */
  async changeWatermarks(change: WatermarkChange): Promise<DatabaseWatermarks> {
    this.assertOpen();
    return this.sql.begin("isolation level read committed", async (tx) => {
      const [row] = await tx<WatermarkRow[]>`
        SELECT low_epoch::text, low_slot::text, high_epoch::text, high_slot::text
        FROM sigil_database_watermarks FOR UPDATE`;
      if (row === undefined) {
        throw new Error(
          "sigil_database_watermarks has no row (it is made by the schema 6 migration)",
        );
      }
      const next = applyWatermarkChange(watermarksOf(row), change);
      const text = (value: bigint | undefined) => (value === undefined ? null : value.toString());
      await tx`
        UPDATE sigil_database_watermarks SET
          low_epoch = ${text(next.low?.epoch)}::numeric, low_slot = ${text(next.low?.slot)}::numeric,
          high_epoch = ${text(next.high?.epoch)}::numeric, high_slot = ${text(next.high?.slot)}::numeric`;
      return next;
    });
  }

  async ping(): Promise<void> {
    this.assertOpen();
    await this.sql`SELECT 1`;
  }

  close(): Promise<void> {
    this.closing ??= this.sql.end({ timeout: CLOSE_TIMEOUT_SECONDS });
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing !== undefined) throw new Error("postgres slashing protection store is closed");
  }
}

function importedBlock(block: InterchangeBlock): { slot: string; root: string | null } {
  return {
    slot: uint64(block.slot, "slot"),
    root: block.signingRoot === undefined ? null : toHex(block.signingRoot),
  };
}

function importedFloors(validator: InterchangeValidator): {
  block: string | null;
  source: string | null;
  target: string | null;
} {
  const floors = validator.floors;
  const text = (value: bigint | undefined, what: string) =>
    value === undefined ? null : uint64(value, what);
  return {
    block: text(floors?.blockSlot, "block slot floor"),
    source: text(floors?.sourceEpoch, "source epoch floor"),
    target: text(floors?.targetEpoch, "target epoch floor"),
  };
}

function importedAttestation(attestation: InterchangeAttestation): {
  source: string;
  target: string;
  root: string | null;
} {
  return {
    source: uint64(attestation.sourceEpoch, "source epoch"),
    target: uint64(attestation.targetEpoch, "target epoch"),
    root: attestation.signingRoot === undefined ? null : toHex(attestation.signingRoot),
  };
}

/**
 * Streams every record in one query (one snapshot) through a cursor, ordered by validator (by
 * pubkey, or in the requested order), blocks by slot then attestations by target and source, and
 * groups consecutive rows into validators: memory holds one validator at a time. Validators
 * without records are exported with empty lists.
 */
async function* exportValidators(
  sql: Sql,
  wanted: readonly string[] | null,
  closed: () => boolean,
): AsyncGenerator<InterchangeValidator> {
  const chosen =
    wanted === null
      ? sql`SELECT id, pubkey, 0::bigint AS ord FROM sigil_validators`
      : sql`SELECT v.id, v.pubkey, w.ord FROM unnest(${wanted}::text[]) WITH ORDINALITY AS w (k, ord)
            JOIN sigil_validators v ON v.pubkey = decode(w.k, 'hex')`;
  const query = sql<ExportRow[]>`
    SELECT c.pubkey, r.kind, r.a::text AS a, r.b::text AS b, r.signing_root
    FROM (${chosen}) c
    LEFT JOIN (
      SELECT validator_id, 0 AS kind, slot AS k1, NULL::numeric AS k2,
        slot AS a, NULL::numeric AS b, signing_root
      FROM sigil_signed_blocks
      UNION ALL
      SELECT validator_id, 1 AS kind, target_epoch AS k1, source_epoch AS k2,
        source_epoch AS a, target_epoch AS b, signing_root
      FROM sigil_signed_attestations
    ) r ON r.validator_id = c.id
    ORDER BY c.ord, c.pubkey, r.kind, r.k1, r.k2, r.signing_root NULLS FIRST`;
  let current:
    | { pubkey: Buffer; blocks: InterchangeBlock[]; attestations: InterchangeAttestation[] }
    | undefined;
  const finish = (v: NonNullable<typeof current>): InterchangeValidator => ({
    pubkey: `0x${v.pubkey.toString("hex")}`,
    blocks: v.blocks,
    attestations: v.attestations,
  });
  for await (const batch of query.cursor(EXPORT_BATCH)) {
    if (closed()) throw new Error("postgres slashing protection store is closed");
    for (const row of batch) {
      if (current === undefined || !current.pubkey.equals(row.pubkey)) {
        if (current !== undefined) yield finish(current);
        current = { pubkey: row.pubkey, blocks: [], attestations: [] };
      }
      if (row.kind === null || row.a === null) continue;
      const signingRoot = row.signing_root === null ? undefined : new Uint8Array(row.signing_root);
      if (row.kind === 0) {
        current.blocks.push({ slot: BigInt(row.a), ...(signingRoot ? { signingRoot } : {}) });
      } else if (row.b !== null) {
        current.attestations.push({
          sourceEpoch: BigInt(row.a),
          targetEpoch: BigInt(row.b),
          ...(signingRoot ? { signingRoot } : {}),
        });
      }
    }
  }
  if (current !== undefined) yield finish(current);
}

/** The slashing protection tables, functions and migrations (migrations.ts). */
const DATABASE: PostgresDatabase = {
  what: "slashing protection",
  settings: "antislashing",
  // The check functions rely on (and insist on) READ COMMITTED; see migrations.ts.
  connection: { application_name: "sigil", default_transaction_isolation: "read committed" },
  versionTable: "sigil_schema_version",
  lockKey: MIGRATION_LOCK_KEY,
  migrations: MIGRATIONS,
  schemaError: (message) => new PostgresSchemaError(message),
};

/**
 * Opens the pool, checks that the server answers and migrates the schema. Rejects when the
 * database cannot be reached or is newer than this build, and, without `create`, when sigil's
 * tables are not there (SlashingDatabaseError "missing": only `sigil slashing init` creates them).
 */
export async function openPostgresStore(
  options: PostgresStoreOptions & { readonly create: boolean },
): Promise<SlashingStore> {
  const location = parsePostgresUrl(options.url, `${DATABASE.settings}.url`).display;
  const sql = await openMigratedPostgres(DATABASE, options, {
    create: options.create,
    missing: () =>
      new SlashingDatabaseError(
        "missing",
        `slashing protection database ${location} has no sigil tables (in the first schema of ` +
          "its search_path); sigil never creates them silently. If they existed, this is not the " +
          "database (or schema) they were in: point antislashing.url at it",
      ),
  });
  return new PostgresStore(sql, options.logger, location, options.poolSize);
}
