import type { Database } from "bun:sqlite";

/** One schema version: its statements run in order, in the transaction that records it. */
export interface SqliteMigration {
  readonly version: number;
  readonly description?: string;
  readonly sql: readonly string[];
}

export interface SqliteMigrationPlan {
  /** Table holding the schema version (a constant, never user input). */
  readonly versionTable: string;
  /** Append-only: a released migration is never edited (test/storage/frozen-migrations.test.ts). */
  readonly migrations: readonly SqliteMigration[];
  /** The error to throw when the database is newer than this build. */
  readonly tooNew: (current: number, latest: number) => Error;
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
    if (current > latest) throw plan.tooNew(current, latest);
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
