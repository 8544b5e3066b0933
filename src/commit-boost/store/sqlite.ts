/**
 * Commit-Boost proxies in SQLite (bun:sqlite): table `sigil_cb_proxies` and its version table
 * `sigil_cb_schema_version`, names that never clash with signer_state's or slashing
 * protection's, so the file may be the signer_state one. WAL, synchronous = FULL: a proxy whose
 * delegation was returned survives a power cut.
 */
import type { Database } from "bun:sqlite";
import { openMigratedSqlite, type SqliteMigration } from "../../storage/sqlite/migrate";
import {
  checkProxyRecord,
  type ProxyRecord,
  type ProxyRow,
  type ProxyStore,
  ProxyStoreError,
  recordOfRow,
} from "../proxy-store";

/** Append-only: never edit a released migration, add a new one. */
export const MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    sql: [
      `CREATE TABLE sigil_cb_proxies (
         proxy                TEXT PRIMARY KEY NOT NULL,
         scheme               TEXT NOT NULL CHECK (scheme IN ('bls', 'ecdsa')),
         consensus            TEXT NOT NULL,
         module               TEXT NOT NULL CHECK (module <> ''),
         sealed               TEXT NOT NULL,
         delegation_signature TEXT NOT NULL,
         created_at           INTEGER NOT NULL
       ) STRICT, WITHOUT ROWID`,
      "CREATE INDEX sigil_cb_proxies_by_module ON sigil_cb_proxies (module, created_at)",
      "CREATE INDEX sigil_cb_proxies_by_consensus ON sigil_cb_proxies (consensus)",
    ],
  },
];

class SqliteProxyStore implements ProxyStore {
  readonly backend = "sqlite" as const;
  #closed = false;

  constructor(private readonly db: Database) {}

  #open(): Database {
    if (this.#closed) throw new ProxyStoreError("sqlite proxy store is closed");
    return this.db;
  }

  async put(record: ProxyRecord): Promise<void> {
    checkProxyRecord(record);
    const result = this.#open()
      .query(
        `INSERT INTO sigil_cb_proxies
           (proxy, scheme, consensus, module, sealed, delegation_signature, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (proxy) DO NOTHING`,
      )
      .run(
        record.proxy,
        record.scheme,
        record.consensus,
        record.module,
        record.sealed,
        record.delegationSignature,
        record.createdAt,
      );
    if (result.changes !== 1) throw new ProxyStoreError(`proxy ${record.proxy} already stored`);
  }

  async get(proxy: string): Promise<ProxyRecord | undefined> {
    const row = this.#open()
      .query<ProxyRow, [string]>("SELECT * FROM sigil_cb_proxies WHERE proxy = ?")
      .get(proxy);
    return row === null ? undefined : recordOfRow(row);
  }

  async listByModule(module: string): Promise<ProxyRecord[]> {
    return this.#open()
      .query<ProxyRow, [string]>(
        "SELECT * FROM sigil_cb_proxies WHERE module = ? ORDER BY created_at, proxy",
      )
      .all(module)
      .map(recordOfRow);
  }

  async deleteByConsensus(consensus: string): Promise<number> {
    const result = this.#open()
      .query("DELETE FROM sigil_cb_proxies WHERE consensus = ?")
      .run(consensus);
    return result.changes;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.db.close(false);
  }
}

/** Opens (creating if needed) the proxy table in the SQLite file at `path`. */
export async function openSqliteProxyStore(path: string): Promise<ProxyStore> {
  const db = openMigratedSqlite(
    path,
    {},
    {
      what: "commit_boost proxy store",
      versionTable: "sigil_cb_schema_version",
      migrations: MIGRATIONS,
      schemaError: (message) => new ProxyStoreError(message),
    },
  );
  return new SqliteProxyStore(db);
}
