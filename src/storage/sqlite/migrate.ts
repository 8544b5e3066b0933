import type { Database } from "bun:sqlite";
import { type DurableSqliteOptions, openDurableSqlite } from "./open";

/** One schema version: its statements run in order, in the transaction that records it. */
export interface SqliteMigration {
  readonly version: number;
  readonly description?: string;
  readonly sql: readonly string[];
}

export interface SqliteMigrationPlan {
  /** What the database holds, for the error: "slashing protection", "signer_state". */
  readonly what: string;
  /** Table holding the schema version (a constant, never user input). */
  readonly versionTable: string;
  /** Append-only: a released migration is never edited (test/storage/frozen-migrations.test.ts). */
  readonly migrations: readonly SqliteMigration[];
  /** The error for a database newer than this build, worded by `message`. */
  readonly schemaError: (message: string) => Error;
}

/**
 * Opens `path` as openDurableSqlite does and applies pending migrations; the database is closed
 * again when they fail (or it is newer than this build).
 */
export function openMigratedSqlite(
  path: string,
  options: DurableSqliteOptions,
  plan: SqliteMigrationPlan,
): Database {
  const db = openDurableSqlite(path, options);
  try {
    runSqliteMigrations(db, plan);
  } catch (error) {
    db.close(false);
    throw error;
  }
  return db;
}

/**
 * Applies pending migrations in ONE immediate transaction (two processes opening one file migrate
 * it once), recording the version reached. A database at a newer version than this build knows
 * is refused: an older sigil must not guess at its meaning.
 */
export function runSqliteMigrations(db: Database, plan: SqliteMigrationPlan): void {
  const latest = plan.migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const table = plan.versionTable;
  db.transaction(() => {
    db.run(`CREATE TABLE IF NOT EXISTS ${table} (version INTEGER NOT NULL)`);
    const row = db.query(`SELECT MAX(version) AS version FROM ${table}`).get() as {
      version: number | bigint | null;
    } | null;
    const current = Number(row?.version ?? 0);
    if (current > latest) {
      throw plan.schemaError(
        `${plan.what} database has schema version ${current}, newer than this sigil knows (${latest}); refusing to open it (upgrade sigil)`,
      );
    }
    for (const migration of plan.migrations) {
      if (migration.version <= current) continue;
      for (const statement of migration.sql) db.run(statement);
      db.run(`DELETE FROM ${table}`);
      db.query(`INSERT INTO ${table} (version) VALUES ($version)`).run({
        version: migration.version,
      });
    }
  }).immediate();
}
