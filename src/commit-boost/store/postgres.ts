/**
 * Commit-Boost proxies in PostgreSQL (postgres.js), shared by every sigil instance on the
 * database: table `sigil_cb_proxies` and version table `sigil_cb_schema_version`, in the first
 * schema of the search_path, migrated under their own advisory lock. URL, TLS and pool settings
 * are handled as for signer_state, by the same code (../../storage/postgres/).
 */
import type { Sql } from "postgres";
import type { Migration } from "../../storage/postgres/migrate";
import { openMigratedPostgres, type PostgresDatabase } from "../../storage/postgres/open";
import type { PostgresPoolOptions } from "../../storage/postgres/settings";
import {
  checkProxyRecord,
  type ProxyRecord,
  type ProxyRow,
  type ProxyStore,
  ProxyStoreError,
  recordOfRow,
} from "../proxy-store";

/** Append-only: never edit a released migration, add a new one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "commit-boost proxies",
    sql: `
      CREATE TABLE sigil_cb_proxies (
        proxy                text PRIMARY KEY,
        scheme               text NOT NULL CHECK (scheme IN ('bls', 'ecdsa')),
        consensus            text NOT NULL,
        module               text NOT NULL CHECK (module <> ''),
        sealed               text NOT NULL,
        delegation_signature text NOT NULL,
        created_at           bigint NOT NULL
      );
      CREATE INDEX sigil_cb_proxies_by_module ON sigil_cb_proxies (module, created_at);
      CREATE INDEX sigil_cb_proxies_by_consensus ON sigil_cb_proxies (consensus);
    `,
  },
];

/** Distinct from slashing protection's and signer_state's migration locks. */
export const PROXY_MIGRATION_LOCK_KEY = "8316291889397497859";

class PostgresProxyStore implements ProxyStore {
  readonly backend = "postgres" as const;
  #closed = false;

  constructor(private readonly sql: Sql) {}

  #open(): Sql {
    if (this.#closed) throw new ProxyStoreError("postgres proxy store is closed");
    return this.sql;
  }

  async put(record: ProxyRecord): Promise<void> {
    checkProxyRecord(record);
    const sql = this.#open();
    const rows = await sql`
      INSERT INTO sigil_cb_proxies
        (proxy, scheme, consensus, module, sealed, delegation_signature, created_at)
      VALUES (${record.proxy}, ${record.scheme}, ${record.consensus}, ${record.module},
              ${record.sealed}, ${record.delegationSignature}, ${record.createdAt}::bigint)
      ON CONFLICT (proxy) DO NOTHING
      RETURNING proxy`;
    if (rows.length !== 1) throw new ProxyStoreError(`proxy ${record.proxy} already stored`);
  }

  async get(proxy: string): Promise<ProxyRecord | undefined> {
    const sql = this.#open();
    const [row] = await sql<ProxyRow[]>`
      SELECT proxy, scheme, consensus, module, sealed, delegation_signature,
             created_at::text AS created_at
      FROM sigil_cb_proxies WHERE proxy = ${proxy}`;
    return row === undefined ? undefined : recordOfRow(row);
  }

  async listByModule(module: string): Promise<ProxyRecord[]> {
    const sql = this.#open();
    const rows = await sql<ProxyRow[]>`
      SELECT proxy, scheme, consensus, module, sealed, delegation_signature,
             created_at::text AS created_at
      FROM sigil_cb_proxies WHERE module = ${module}
      ORDER BY created_at, proxy COLLATE "C"`;
    return rows.map(recordOfRow);
  }

  async deleteByConsensus(consensus: string): Promise<number> {
    const sql = this.#open();
    const rows = await sql`
      DELETE FROM sigil_cb_proxies WHERE consensus = ${consensus} RETURNING proxy`;
    return rows.length;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.sql.end({ timeout: 5 });
  }
}

const DATABASE: PostgresDatabase = {
  what: "commit_boost proxy store",
  settings: "commit_boost.proxy_store",
  connection: { application_name: "sigil-commit-boost" },
  versionTable: "sigil_cb_schema_version",
  lockKey: PROXY_MIGRATION_LOCK_KEY,
  migrations: MIGRATIONS,
  schemaError: (message) => new ProxyStoreError(message),
};

export async function openPostgresProxyStore(options: PostgresPoolOptions): Promise<ProxyStore> {
  return new PostgresProxyStore(await openMigratedPostgres(DATABASE, options));
}
