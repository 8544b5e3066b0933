/**
 * signer_state in PostgreSQL (postgres.js), shareable by several signer processes.
 *
 * The URL, TLS (sslmode, TLS on by default) and force_ipv4 are handled exactly as for the
 * slashing-protection database, by the same code (../storage/postgres/);
 * only the setting named in error messages differs (`signer_state.url`).
 *
 * Layout, in the first schema of the session's search_path (several chains or deployments can
 * share a database with one schema each, `?search_path=…`), every name prefixed `sigil_state_`:
 *   sigil_state_schema_version (version, description, applied_at)
 *   sigil_state_policies (name PRIMARY KEY, rules jsonb = array of rules, created_at, updated_at)
 *   sigil_state_tokens   (hash PRIMARY KEY, accessor UNIQUE, kind, policies jsonb, cidrs jsonb,
 *                         created_at bigint ms, expires_at bigint ms or NULL)
 *   sigil_state_seal     (id = 1 PRIMARY KEY: at most one row; body json = the seal record,
 *                         kept as the exact text given (json, not jsonb, which would reorder and
 *                         reformat it); version bigint >= 1; updated_at)   [migration 2]
 * Only the SHA-256 of a token is stored, never the token. Migrations run on open, under their own
 * session advisory lock (not the slashing-protection one), each in one transaction with its
 * version row; a database at a newer version than this build knows is refused.
 *
 * Atomicity: create is `INSERT … ON CONFLICT DO NOTHING`, update `UPDATE … WHERE name`, consume
 * `DELETE … RETURNING` (of concurrent deletes of one row, the others wait for the first and then
 * find nothing): one statement each, so exactly-once holds across processes. putSeal is the same:
 * create `INSERT … ON CONFLICT DO NOTHING`, replace `UPDATE … WHERE version = expected` (a
 * concurrent updater waits for the first and then re-checks the version, finding it changed);
 * the returned row count says who won.
 */
import postgres from "postgres";
import type { Policy } from "../auth/types";
import { PostgresConfigError } from "../storage/postgres/connection";
import type { Migration } from "../storage/postgres/migrate";
import { openMigratedPostgres, type PostgresDatabase } from "../storage/postgres/open";
import type { PostgresPoolOptions } from "../storage/postgres/settings";
import {
  checkExpectedVersion,
  checkNow,
  checkSealBody,
  checkTokenRecord,
  decodePolicy,
  decodeSeal,
  decodeTokenRow,
  encodePolicy,
  StateSchemaError,
  TokenConflictError,
  type TokenRow,
} from "./codec";
import type { SealSlot, SignerStateStore, TokenRecord } from "./store";

export { PostgresConfigError };

/** `signer_state.url`, `.pool_size`, `.force_ipv4` (storage/postgres/open.ts). */
export type PostgresStateOptions = PostgresPoolOptions;

/** Append-only: never edit a released migration, add a new one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "policies and tokens",
    sql: `
      CREATE TABLE sigil_state_policies (
        name       text PRIMARY KEY CHECK (name <> ''),
        rules      jsonb NOT NULL CHECK (jsonb_typeof(rules) = 'array'),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE sigil_state_tokens (
        hash       text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
        accessor   text NOT NULL UNIQUE CHECK (accessor <> ''),
        kind       text NOT NULL CHECK (kind IN ('management', 'client', 'setup')),
        policies   jsonb NOT NULL CHECK (jsonb_typeof(policies) = 'array'),
        cidrs      jsonb NOT NULL CHECK (jsonb_typeof(cidrs) = 'array'),
        created_at bigint NOT NULL,
        expires_at bigint
      );
      CREATE INDEX sigil_state_tokens_by_created ON sigil_state_tokens (created_at, accessor COLLATE "C");
      CREATE INDEX sigil_state_tokens_by_expiry ON sigil_state_tokens (expires_at)
        WHERE expires_at IS NOT NULL;
    `,
  },
  {
    version: 2,
    description: "seal record",
    sql: `
      CREATE TABLE sigil_state_seal (
        id         smallint PRIMARY KEY CHECK (id = 1),
        body       json NOT NULL,
        version    bigint NOT NULL CHECK (version >= 1),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
];

export const POSTGRES_STATE_SCHEMA_VERSION = MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);
/** pg_advisory_lock key of the signer_state migrations (the slashing ones use another). */
export const STATE_MIGRATION_LOCK_KEY = "8316291889397497858";

type Sql = postgres.Sql;

class PostgresStateStore implements SignerStateStore {
  readonly backend = "postgres" as const;
  private closed = false;

  constructor(private readonly sql: Sql) {}

  private assertOpen(): void {
    if (this.closed) throw new Error("postgres signer_state store is closed");
  }

  async createPolicy(policy: Policy): Promise<boolean> {
    this.assertOpen();
    const { name, rules } = encodePolicy(policy);
    const rows = await this.sql`
      INSERT INTO sigil_state_policies (name, rules) VALUES (${name}, ${rules}::text::jsonb)
      ON CONFLICT (name) DO NOTHING
      RETURNING name`;
    return rows.length === 1;
  }

  async updatePolicy(policy: Policy): Promise<boolean> {
    this.assertOpen();
    const { name, rules } = encodePolicy(policy);
    const rows = await this.sql`
      UPDATE sigil_state_policies SET rules = ${rules}::text::jsonb, updated_at = now()
      WHERE name = ${name}
      RETURNING name`;
    return rows.length === 1;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    this.assertOpen();
    const [row] = await this.sql<{ name: string; rules: string }[]>`
      SELECT name, rules::text AS rules FROM sigil_state_policies WHERE name = ${name}`;
    return row === undefined ? undefined : decodePolicy(row.name, row.rules);
  }

  async listPolicies(): Promise<Policy[]> {
    this.assertOpen();
    const rows = await this.sql<{ name: string; rules: string }[]>`
      SELECT name, rules::text AS rules FROM sigil_state_policies ORDER BY name COLLATE "C"`;
    return rows.map((row) => decodePolicy(row.name, row.rules));
  }

  async deletePolicy(name: string): Promise<boolean> {
    this.assertOpen();
    const rows = await this.sql`
      DELETE FROM sigil_state_policies WHERE name = ${name} RETURNING name`;
    return rows.length === 1;
  }

  async createToken(token: TokenRecord): Promise<void> {
    this.assertOpen();
    checkTokenRecord(token);
    try {
      await this.sql`
        INSERT INTO sigil_state_tokens
          (hash, accessor, kind, policies, cidrs, created_at, expires_at)
        VALUES (${token.hash}, ${token.accessor}, ${token.kind},
                ${JSON.stringify(token.policies)}::text::jsonb, ${JSON.stringify(token.cidrs)}::text::jsonb,
                ${token.createdAt}::bigint, ${token.expiresAt ?? null}::bigint)`;
    } catch (error) {
      if (error instanceof postgres.PostgresError && error.code === "23505") {
        throw new TokenConflictError(
          `a token with accessor ${token.accessor} or the same hash already exists`,
        );
      }
      throw error;
    }
  }

  async findToken(hash: string): Promise<TokenRecord | undefined> {
    this.assertOpen();
    const [row] = await this.sql<TokenRow[]>`
      SELECT hash, accessor, kind, policies::text AS policies, cidrs::text AS cidrs,
        created_at, expires_at FROM sigil_state_tokens WHERE hash = ${hash}`;
    return row === undefined ? undefined : decodeTokenRow(row);
  }

  async listTokens(): Promise<TokenRecord[]> {
    this.assertOpen();
    const rows = await this.sql<TokenRow[]>`
      SELECT hash, accessor, kind, policies::text AS policies, cidrs::text AS cidrs,
        created_at, expires_at FROM sigil_state_tokens
      ORDER BY created_at, accessor COLLATE "C"`;
    return rows.map(decodeTokenRow);
  }

  async revokeToken(accessor: string): Promise<boolean> {
    this.assertOpen();
    const rows = await this.sql`
      DELETE FROM sigil_state_tokens WHERE accessor = ${accessor} RETURNING hash`;
    return rows.length === 1;
  }

  async deleteExpiredTokens(now: number): Promise<number> {
    this.assertOpen();
    checkNow(now);
    const result = await this.sql`
      DELETE FROM sigil_state_tokens
      WHERE expires_at IS NOT NULL AND expires_at <= ${Math.floor(now)}::bigint`;
    return result.count;
  }

  async consumeToken(hash: string): Promise<TokenRecord | undefined> {
    this.assertOpen();
    const [row] = await this.sql<TokenRow[]>`
      DELETE FROM sigil_state_tokens WHERE hash = ${hash}
      RETURNING hash, accessor, kind, policies::text AS policies, cidrs::text AS cidrs,
        created_at, expires_at`;
    return row === undefined ? undefined : decodeTokenRow(row);
  }

  async getSeal(): Promise<SealSlot | undefined> {
    this.assertOpen();
    const [row] = await this.sql<{ body: string; version: string }[]>`
      SELECT body::text AS body, version FROM sigil_state_seal WHERE id = 1`;
    return row === undefined ? undefined : decodeSeal(row.body, row.version);
  }

  async putSeal(body: string, expectedVersion: number | undefined): Promise<boolean> {
    this.assertOpen();
    checkSealBody(body);
    checkExpectedVersion(expectedVersion);
    const rows =
      expectedVersion === undefined
        ? await this.sql`
            INSERT INTO sigil_state_seal (id, body, version) VALUES (1, ${body}::text::json, 1)
            ON CONFLICT (id) DO NOTHING
            RETURNING version`
        : await this.sql`
            UPDATE sigil_state_seal
            SET body = ${body}::text::json, version = version + 1, updated_at = now()
            WHERE id = 1 AND version = ${expectedVersion}::bigint
            RETURNING version`;
    return rows.length === 1;
  }

  async ping(): Promise<void> {
    this.assertOpen();
    await this.sql`SELECT 1`;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.sql.end({ timeout: 5 });
  }
}

const DATABASE: PostgresDatabase = {
  what: "signer_state",
  settings: "signer_state",
  connection: { application_name: "sigil-state" },
  versionTable: "sigil_state_schema_version",
  lockKey: STATE_MIGRATION_LOCK_KEY,
  migrations: MIGRATIONS,
  schemaError: (message) => new StateSchemaError(message),
};

/**
 * Opens the pool, checks that the server answers and migrates the schema. Rejects when the URL is
 * invalid (PostgresConfigError), the database cannot be reached, or its schema is newer than this
 * build (StateSchemaError).
 */
export async function openPostgresState(options: PostgresStateOptions): Promise<SignerStateStore> {
  return new PostgresStateStore(await openMigratedPostgres(DATABASE, options));
}
