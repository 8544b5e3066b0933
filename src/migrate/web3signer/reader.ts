/**
 * Reads a Web3Signer slashing protection database (PostgreSQL, the schema of Web3Signer's own
 * migrations V1–V12: validators, signed_blocks, signed_attestations, low_watermarks, metadata,
 * database_version) in ONE read-only REPEATABLE READ transaction, so that the metadata, every
 * validator and every record come from one snapshot even if something still writes (Web3Signer
 * should be stopped first; docs/migrate-web3signer.md).
 *
 * Memory stays bounded: all rows come from one ordered statement through a cursor, a batch at a
 * time, grouped into validators as they arrive; one validator's records are held at once.
 *
 * The connection is sigil's (storage/postgres/connection.ts): TLS unless `?sslmode=disable`, the same
 * sslmode rules as `antislashing.url`. Errors never carry the URL's password.
 */
import type postgres from "postgres";
import { bytesToHex } from "../../antislashing/encoding";
import type { InterchangeAttestation, InterchangeBlock } from "../../antislashing/store";
import {
  createPostgresClient,
  type PostgresTarget,
  parsePostgresUrl,
} from "../../storage/postgres/connection";
import {
  uint64Column,
  type Web3SignerHighWatermark,
  type Web3SignerLowWatermark,
  type Web3SignerValidator,
} from "./convert";

/** database_version 7 introduced the table itself; 12 (high watermark) is the newest known. */
export const OLDEST_DATABASE_VERSION = 7;
export const NEWEST_DATABASE_VERSION = 12;

const TABLES = [
  "validators",
  "signed_blocks",
  "signed_attestations",
  "low_watermarks",
  "metadata",
  "database_version",
] as const;

/** Rows fetched per cursor batch. */
const BATCH_ROWS = 2000;

/** The database cannot be read, or is not a Web3Signer slashing protection database. */
export class Web3SignerDatabaseError extends Error {
  override readonly name = "Web3SignerDatabaseError";
}

export interface Web3SignerSnapshot {
  /** Where it was read, without credentials (for messages). */
  readonly display: string;
  readonly databaseVersion: number;
  /** null: Web3Signer never signed or imported anything with this database. */
  readonly genesisValidatorsRoot: Uint8Array | null;
  readonly highWatermark: Web3SignerHighWatermark | null;
  /** Every validator ordered by Web3Signer's id, each with its records; iterate once. */
  validators(): AsyncIterable<Web3SignerValidator>;
}

export interface ReadOptions {
  /** Connect (DNS, TCP, TLS) time limit; default 10 s. */
  readonly connectTimeoutMs?: number;
}

interface Layout {
  readonly version: number;
  readonly enabledColumn: boolean;
  readonly highWatermarkColumns: boolean;
}

interface Row {
  validator_id: number | null;
  kind: number;
  public_key: Buffer | null;
  enabled: boolean | null;
  a: string | null;
  b: string | null;
  c: string | null;
  signing_root: Buffer | null;
}

/** Throws Web3SignerDatabaseError (never echoing a password) when `url` cannot be used. */
export function checkDatabaseUrl(url: string, setting: string): void {
  try {
    parsePostgresUrl(url, setting);
  } catch (error) {
    throw new Web3SignerDatabaseError(redact(messageOf(error), url));
  }
}

/**
 * Connects to `url` (a flag value: errors name it `setting`), checks that it holds a Web3Signer
 * schema this sigil knows, and hands `use` a snapshot of it; closes the connection afterwards.
 * Errors of the database are Web3SignerDatabaseError; errors thrown by `use` pass through as they are.
 */
export async function readWeb3Signer<T>(
  url: string,
  setting: string,
  use: (snapshot: Web3SignerSnapshot) => Promise<T>,
  options: ReadOptions = {},
): Promise<T> {
  let target: PostgresTarget;
  try {
    target = parsePostgresUrl(url, setting);
  } catch (error) {
    throw new Web3SignerDatabaseError(redact(messageOf(error), url));
  }
  const sql = createPostgresClient(target, {
    poolSize: 1,
    forceIpv4: false,
    connectTimeoutMs: options.connectTimeoutMs,
    connection: { application_name: "sigil-migrate" },
  });
  const outcome: { result?: T; error?: unknown } = {};
  try {
    await sql.begin("isolation level repeatable read read only", async (tx) => {
      const snapshot = await openSnapshot(tx, target.display);
      try {
        outcome.result = await use(snapshot);
      } catch (error) {
        outcome.error = error;
        throw error;
      }
    });
    return outcome.result as T;
  } catch (error) {
    if ("error" in outcome && outcome.error === error) throw error;
    if (error instanceof Web3SignerDatabaseError) {
      throw new Web3SignerDatabaseError(redact(error.message, url));
    }
    throw new Web3SignerDatabaseError(
      redact(`cannot read the Web3Signer database ${target.display}: ${messageOf(error)}`, url),
    );
  } finally {
    await sql.end({ timeout: 5 }).catch(() => {});
  }
}

async function openSnapshot(tx: postgres.TransactionSql, display: string) {
  const layout = await inspect(tx, display);
  const metadata = await readMetadata(tx, layout, display);
  let iterated = false;
  const snapshot: Web3SignerSnapshot = {
    display,
    databaseVersion: layout.version,
    ...metadata,
    validators() {
      if (iterated) throw new Error("Web3Signer snapshot: validators() can be iterated once");
      iterated = true;
      return readValidators(tx, layout, display);
    },
  };
  return snapshot;
}

async function inspect(tx: postgres.TransactionSql, display: string): Promise<Layout> {
  const notAWeb3SignerDatabase = (why: string) =>
    new Web3SignerDatabaseError(
      `${display} is not a Web3Signer slashing protection database this sigil can read: ${why}`,
    );
  const missing = await tx<{ name: string }[]>`
    SELECT t.name FROM unnest(${[...TABLES]}::text[]) AS t (name) WHERE to_regclass(t.name) IS NULL`;
  if (missing.length > 0) {
    const names = missing.map((m) => m.name).join(", ");
    throw notAWeb3SignerDatabase(
      `table${missing.length > 1 ? "s" : ""} ${names} missing (in the search_path; ` +
        "append ?search_path=… to the URL if Web3Signer used another schema)",
    );
  }
  const [row] = await tx<{ version: number | null }[]>`
    SELECT version FROM database_version WHERE id = 1`;
  const version = row?.version ?? null;
  if (version === null) throw notAWeb3SignerDatabase("database_version has no row");
  if (version > NEWEST_DATABASE_VERSION) {
    throw notAWeb3SignerDatabase(
      `database_version ${version} is newer than the ${NEWEST_DATABASE_VERSION} this sigil knows ` +
        "(export with Web3Signer's `eth2 export` and use `sigil slashing import` instead)",
    );
  }
  if (version < OLDEST_DATABASE_VERSION) {
    throw notAWeb3SignerDatabase(`database_version ${version} is older than any Web3Signer wrote`);
  }
  const [columns] = await tx<{ enabled: boolean; high_watermark: boolean }[]>`
    SELECT
      EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('validators')
              AND attname = 'enabled' AND NOT attisdropped) AS enabled,
      EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('metadata')
              AND attname = 'high_watermark_slot' AND NOT attisdropped) AS high_watermark`;
  const layout = {
    version,
    enabledColumn: columns?.enabled === true,
    highWatermarkColumns: columns?.high_watermark === true,
  };
  // Web3Signer's migration 10 added validators.enabled, 12 the high watermark.
  if (version >= 10 && !layout.enabledColumn) {
    throw notAWeb3SignerDatabase(`database_version ${version} but no validators.enabled column`);
  }
  if (version >= 12 && !layout.highWatermarkColumns) {
    throw notAWeb3SignerDatabase(`database_version ${version} but no high watermark columns`);
  }
  return layout;
}

async function readMetadata(tx: postgres.TransactionSql, layout: Layout, display: string) {
  const [row] = layout.highWatermarkColumns
    ? await tx<{ gvr: Buffer; hw_slot: string | null; hw_epoch: string | null }[]>`
        SELECT genesis_validators_root AS gvr, high_watermark_slot::text AS hw_slot,
          high_watermark_epoch::text AS hw_epoch
        FROM metadata WHERE id = 1`
    : await tx<{ gvr: Buffer; hw_slot: null; hw_epoch: null }[]>`
        SELECT genesis_validators_root AS gvr, NULL AS hw_slot, NULL AS hw_epoch
        FROM metadata WHERE id = 1`;
  if (row === undefined) return { genesisValidatorsRoot: null, highWatermark: null };
  if (row.gvr.length !== 32) {
    throw new Web3SignerDatabaseError(
      `${display}: metadata.genesis_validators_root is ${row.gvr.length} bytes, not 32`,
    );
  }
  const number = (text: string | null, column: string) =>
    text === null ? null : uint64Column(text, `${display}: metadata.${column}`);
  const highWatermark = {
    slot: number(row.hw_slot, "high_watermark_slot"),
    epoch: number(row.hw_epoch, "high_watermark_epoch"),
  };
  return {
    genesisValidatorsRoot: new Uint8Array(row.gvr),
    highWatermark:
      highWatermark.slot === null && highWatermark.epoch === null ? null : highWatermark,
  };
}

interface Pending {
  readonly id: number;
  readonly pubkey: string;
  readonly enabled: boolean;
  readonly lowWatermark: Web3SignerLowWatermark | null;
  readonly blocks: InterchangeBlock[];
  readonly attestations: InterchangeAttestation[];
}

/**
 * One statement, ordered by validator id: the validator's own row (kind 0, with its low
 * watermark) first, then its blocks by slot (1), then its attestations by target (2).
 */
async function* readValidators(
  tx: postgres.TransactionSql,
  layout: Layout,
  display: string,
): AsyncGenerator<Web3SignerValidator> {
  const enabled = layout.enabledColumn ? tx`v.enabled` : tx`true`;
  const query = tx<Row[]>`
    SELECT r.validator_id, r.kind, r.public_key, r.enabled,
      r.a::text AS a, r.b::text AS b, r.c::text AS c, r.signing_root
    FROM (
      SELECT v.id AS validator_id, 0 AS kind, v.public_key, ${enabled} AS enabled,
        w.slot AS a, w.source_epoch AS b, w.target_epoch AS c, NULL::bytea AS signing_root,
        NULL::numeric AS k1, NULL::numeric AS k2
      FROM validators v LEFT JOIN low_watermarks w ON w.validator_id = v.id
      UNION ALL
      SELECT validator_id, 1, NULL, NULL, slot, NULL, NULL, signing_root, slot, NULL
      FROM signed_blocks
      UNION ALL
      SELECT validator_id, 2, NULL, NULL, source_epoch, target_epoch, NULL, signing_root,
        target_epoch, source_epoch
      FROM signed_attestations WHERE validator_id IS NOT NULL
    ) r
    ORDER BY r.validator_id, r.kind, r.k1, r.k2`;
  let current: Pending | undefined;
  const where = (id: number | null) => `${display}: validator id ${id}`;
  try {
    for await (const rows of query.cursor(BATCH_ROWS)) {
      for (const row of rows) {
        if (row.kind === 0) {
          if (current !== undefined) yield finish(current);
          current = header(row, where(row.validator_id));
          continue;
        }
        if (current === undefined || current.id !== row.validator_id) {
          throw new Web3SignerDatabaseError(
            `${where(row.validator_id)} has records but no row in validators`,
          );
        }
        if (row.kind === 1) current.blocks.push(block(row, where(current.id)));
        else current.attestations.push(attestation(row, where(current.id)));
      }
    }
  } catch (error) {
    if (error instanceof Web3SignerDatabaseError || error instanceof RangeError) {
      throw new Web3SignerDatabaseError(error.message);
    }
    throw new Web3SignerDatabaseError(
      `cannot read the Web3Signer database ${display}: ${messageOf(error)}`,
    );
  }
  if (current !== undefined) yield finish(current);
}

function header(row: Row, where: string): Pending {
  const key = row.public_key;
  if (key === null || key.length !== 48) {
    throw new Web3SignerDatabaseError(`${where}: public_key is not 48 bytes`);
  }
  const column = (text: string | null, name: string) =>
    text === null ? null : uint64Column(text, `${where}: low_watermarks.${name}`);
  const lowWatermark = {
    slot: column(row.a, "slot"),
    sourceEpoch: column(row.b, "source_epoch"),
    targetEpoch: column(row.c, "target_epoch"),
  };
  const none =
    lowWatermark.slot === null &&
    lowWatermark.sourceEpoch === null &&
    lowWatermark.targetEpoch === null;
  return {
    id: row.validator_id ?? -1,
    pubkey: bytesToHex(key),
    enabled: row.enabled !== false,
    lowWatermark: none ? null : lowWatermark,
    blocks: [],
    attestations: [],
  };
}

function signingRoot(row: Row, where: string): { signingRoot?: Uint8Array } {
  if (row.signing_root === null) return {};
  if (row.signing_root.length !== 32) {
    throw new Web3SignerDatabaseError(`${where}: a signing_root is not 32 bytes`);
  }
  return { signingRoot: new Uint8Array(row.signing_root) };
}

function block(row: Row, where: string): InterchangeBlock {
  return {
    slot: uint64Column(row.a ?? "", `${where}: signed_blocks.slot`),
    ...signingRoot(row, where),
  };
}

function attestation(row: Row, where: string): InterchangeAttestation {
  return {
    sourceEpoch: uint64Column(row.a ?? "", `${where}: signed_attestations.source_epoch`),
    targetEpoch: uint64Column(row.b ?? "", `${where}: signed_attestations.target_epoch`),
    ...signingRoot(row, where),
  };
}

function finish(pending: Pending): Web3SignerValidator {
  return {
    pubkey: pending.pubkey,
    enabled: pending.enabled,
    lowWatermark: pending.lowWatermark,
    blocks: pending.blocks,
    attestations: pending.attestations,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Neither the URL nor its password reaches a message, encoded or not. */
export function redact(message: string, url: string): string {
  let out = message.split(url).join("<database URL>");
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    return out;
  }
  for (const secret of [parsed.password, safeDecode(parsed.password)]) {
    if (secret.length > 0) out = out.split(secret).join("***");
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
