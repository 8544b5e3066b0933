/**
 * signer_state in SQLite (bun:sqlite).
 *
 * Layout (every name prefixed `sigil_state_`, so the file may even be shared with the sqlite
 * slashing-protection database, which uses other names):
 *   sigil_state_schema_version (version)
 *   sigil_state_policies (name PRIMARY KEY, rules TEXT = JSON array of rules, created_at, updated_at)
 *   sigil_state_tokens   (hash PRIMARY KEY, accessor UNIQUE, kind, policies TEXT = JSON array,
 *                         cidrs TEXT = JSON array, created_at ms, expires_at ms or NULL)
 *   sigil_state_seal     (id = 1 PRIMARY KEY: at most one row; body TEXT = the seal record's
 *                         JSON, exactly as given; version >= 1; updated_at ms)   [migration 2]
 * Only the SHA-256 of a token is stored, never the token.
 *
 * Durability and locking as in the slashing-protection backend: WAL, synchronous = FULL (a
 * revoke that returned survives a power cut), busy_timeout. Every write is one statement or one
 * `BEGIN IMMEDIATE` transaction, run synchronously (no await inside), so calls of one process run
 * one after the other and several processes on one file serialise on the write lock.
 * consumeToken is `DELETE … RETURNING` in an immediate transaction: of concurrent consumers
 * exactly one gets the row. putSeal is one conditional statement (`INSERT … ON CONFLICT DO
 * NOTHING` to create, `UPDATE … WHERE version = expected` to replace) in an immediate
 * transaction: the version is compared under the write lock, so of writers holding the same
 * version exactly one changes it.
 */
import type { Database } from "bun:sqlite";
import type { Policy } from "../auth/types";
import { openMigratedSqlite, type SqliteMigration } from "../storage/sqlite/migrate";
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

export interface SqliteStateOptions {
  /** How long a write waits for another process's lock before failing. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
}

/** Append-only: never edit a released migration, add a new one. */
export const MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    sql: [
      `CREATE TABLE sigil_state_policies (
         name       TEXT PRIMARY KEY NOT NULL CHECK (name <> ''),
         rules      TEXT NOT NULL CHECK (json_valid(rules) AND json_type(rules) = 'array'),
         created_at INTEGER NOT NULL,
         updated_at INTEGER NOT NULL
       ) STRICT, WITHOUT ROWID`,
      `CREATE TABLE sigil_state_tokens (
         hash       TEXT PRIMARY KEY NOT NULL CHECK (length(hash) = 64),
         accessor   TEXT NOT NULL UNIQUE CHECK (accessor <> ''),
         kind       TEXT NOT NULL CHECK (kind IN ('management', 'client', 'setup')),
         policies   TEXT NOT NULL CHECK (json_valid(policies) AND json_type(policies) = 'array'),
         cidrs      TEXT NOT NULL CHECK (json_valid(cidrs) AND json_type(cidrs) = 'array'),
         created_at INTEGER NOT NULL,
         expires_at INTEGER
       ) STRICT, WITHOUT ROWID`,
      "CREATE INDEX sigil_state_tokens_by_created ON sigil_state_tokens (created_at, accessor)",
      "CREATE INDEX sigil_state_tokens_by_expiry ON sigil_state_tokens (expires_at) WHERE expires_at IS NOT NULL",
    ],
  },
  {
    version: 2,
    sql: [
      `CREATE TABLE sigil_state_seal (
         id         INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
         body       TEXT NOT NULL CHECK (json_valid(body)),
         version    INTEGER NOT NULL CHECK (version >= 1),
         updated_at INTEGER NOT NULL
       ) STRICT`,
    ],
  },
];

export const SQLITE_STATE_SCHEMA_VERSION = MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);

const TOKEN_COLUMNS = "hash, accessor, kind, policies, cidrs, created_at, expires_at";

function isConstraintError(error: unknown): boolean {
  return (
    error instanceof Error &&
    "code" in error &&
    typeof error.code === "string" &&
    error.code.startsWith("SQLITE_CONSTRAINT")
  );
}

class SqliteStateStore implements SignerStateStore {
  readonly backend = "sqlite" as const;
  private closed = false;

  constructor(private readonly db: Database) {}

  private assertOpen(): void {
    if (this.closed) throw new Error("sqlite signer_state store is closed");
  }

  async createPolicy(policy: Policy): Promise<boolean> {
    this.assertOpen();
    const { name, rules } = encodePolicy(policy);
    const now = Date.now();
    const result = this.db
      .query(
        `INSERT INTO sigil_state_policies (name, rules, created_at, updated_at)
         VALUES ($name, $rules, $now, $now) ON CONFLICT (name) DO NOTHING`,
      )
      .run({ name, rules, now });
    return result.changes === 1;
  }

  async updatePolicy(policy: Policy): Promise<boolean> {
    this.assertOpen();
    const { name, rules } = encodePolicy(policy);
    const result = this.db
      .query("UPDATE sigil_state_policies SET rules = $rules, updated_at = $now WHERE name = $name")
      .run({ name, rules, now: Date.now() });
    return result.changes === 1;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    this.assertOpen();
    const row = this.db
      .query("SELECT name, rules FROM sigil_state_policies WHERE name = $name")
      .get({ name }) as { name: string; rules: string } | null;
    return row === null ? undefined : decodePolicy(row.name, row.rules);
  }

  async listPolicies(): Promise<Policy[]> {
    this.assertOpen();
    const rows = this.db
      .query("SELECT name, rules FROM sigil_state_policies ORDER BY name")
      .all() as { name: string; rules: string }[];
    return rows.map((row) => decodePolicy(row.name, row.rules));
  }

  async deletePolicy(name: string): Promise<boolean> {
    this.assertOpen();
    return (
      this.db.query("DELETE FROM sigil_state_policies WHERE name = $name").run({ name }).changes ===
      1
    );
  }

  async createToken(token: TokenRecord): Promise<void> {
    this.assertOpen();
    checkTokenRecord(token);
    try {
      this.db
        .query(
          `INSERT INTO sigil_state_tokens (${TOKEN_COLUMNS})
           VALUES ($hash, $accessor, $kind, $policies, $cidrs, $created_at, $expires_at)`,
        )
        .run({
          hash: token.hash,
          accessor: token.accessor,
          kind: token.kind,
          policies: JSON.stringify(token.policies),
          cidrs: JSON.stringify(token.cidrs),
          created_at: token.createdAt,
          expires_at: token.expiresAt ?? null,
        });
    } catch (error) {
      if (isConstraintError(error) && error instanceof Error && /UNIQUE/i.test(error.message)) {
        throw new TokenConflictError(
          `a token with accessor ${token.accessor} or the same hash already exists`,
        );
      }
      throw error;
    }
  }

  async findToken(hash: string): Promise<TokenRecord | undefined> {
    this.assertOpen();
    const row = this.db
      .query(`SELECT ${TOKEN_COLUMNS} FROM sigil_state_tokens WHERE hash = $hash`)
      .get({ hash }) as TokenRow | null;
    return row === null ? undefined : decodeTokenRow(row);
  }

  async listTokens(): Promise<TokenRecord[]> {
    this.assertOpen();
    const rows = this.db
      .query(`SELECT ${TOKEN_COLUMNS} FROM sigil_state_tokens ORDER BY created_at, accessor`)
      .all() as TokenRow[];
    return rows.map(decodeTokenRow);
  }

  async revokeToken(accessor: string): Promise<boolean> {
    this.assertOpen();
    return (
      this.db.query("DELETE FROM sigil_state_tokens WHERE accessor = $accessor").run({ accessor })
        .changes === 1
    );
  }

  async deleteExpiredTokens(now: number): Promise<number> {
    this.assertOpen();
    checkNow(now);
    return this.db
      .query("DELETE FROM sigil_state_tokens WHERE expires_at IS NOT NULL AND expires_at <= $now")
      .run({ now }).changes;
  }

  async consumeToken(hash: string): Promise<TokenRecord | undefined> {
    this.assertOpen();
    const row = this.db
      .transaction(
        () =>
          this.db
            .query(`DELETE FROM sigil_state_tokens WHERE hash = $hash RETURNING ${TOKEN_COLUMNS}`)
            .get({ hash }) as TokenRow | null,
      )
      .immediate();
    return row === null ? undefined : decodeTokenRow(row);
  }

  async getSeal(): Promise<SealSlot | undefined> {
    this.assertOpen();
    const row = this.db.query("SELECT body, version FROM sigil_state_seal WHERE id = 1").get() as {
      body: unknown;
      version: unknown;
    } | null;
    return row === null ? undefined : decodeSeal(row.body, row.version);
  }

  async putSeal(body: string, expectedVersion: number | undefined): Promise<boolean> {
    this.assertOpen();
    checkSealBody(body);
    checkExpectedVersion(expectedVersion);
    const now = Date.now();
    const changes = this.db
      .transaction(() =>
        expectedVersion === undefined
          ? this.db
              .query(
                `INSERT INTO sigil_state_seal (id, body, version, updated_at)
                 VALUES (1, $body, 1, $now) ON CONFLICT (id) DO NOTHING`,
              )
              .run({ body, now }).changes
          : this.db
              .query(
                `UPDATE sigil_state_seal SET body = $body, version = version + 1, updated_at = $now
                 WHERE id = 1 AND version = $expected`,
              )
              .run({ body, now, expected: expectedVersion }).changes,
      )
      .immediate();
    return changes === 1;
  }

  async ping(): Promise<void> {
    this.assertOpen();
    this.db.query("SELECT 1").get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close(false);
  }
}

/**
 * Opens (creating if needed, mode 0600) the signer_state database at `path` (":memory:" for
 * tests): WAL, synchronous = FULL, busy timeout, then pending migrations. Refuses a database whose
 * schema is newer than this build knows (StateSchemaError).
 */
export async function openSqliteState(
  path: string,
  options: SqliteStateOptions = {},
): Promise<SignerStateStore> {
  const db = openMigratedSqlite(
    path,
    { busyTimeoutMs: options.busyTimeoutMs },
    {
      what: "signer_state",
      versionTable: "sigil_state_schema_version",
      migrations: MIGRATIONS,
      schemaError: (message) => new StateSchemaError(message),
    },
  );
  return new SqliteStateStore(db);
}
