import type { Sql } from "postgres";
import type { Logger } from "../../observability/log";

export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
}

export interface MigrationPlan {
  /** Table holding one row per applied migration (a constant, never user input). */
  readonly versionTable: string;
  /** Session advisory lock key (decimal bigint), distinct per schema. */
  readonly lockKey: string;
  readonly migrations: readonly Migration[];
  /** Log line for each applied migration, e.g. "slashing protection: database migrated". */
  readonly appliedMessage: string;
  /** The error to throw when the database is newer than this build. */
  readonly tooNew: (current: number, latest: number) => Error;
}

/**
 * Applies pending migrations under a session advisory lock, so that signers starting together
 * migrate once; each migration commits together with its version row. A database at a newer
 * version than this build knows is refused: an older sigil must not guess at its meaning.
 */
export async function runPostgresMigrations(
  sql: Sql,
  plan: MigrationPlan,
  logger?: Logger,
): Promise<void> {
  const latest = plan.migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const table = sql(plan.versionTable);
  const conn = await sql.reserve();
  try {
    await conn`SELECT pg_advisory_lock(${plan.lockKey}::bigint)`;
    try {
      await conn`
        CREATE TABLE IF NOT EXISTS ${table} (
          version integer PRIMARY KEY,
          description text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`;
      const [row] = await conn<
        { version: number | null }[]
      >`SELECT max(version) AS version FROM ${table}`;
      const current = row?.version ?? 0;
      if (current > latest) throw plan.tooNew(current, latest);
      for (const migration of plan.migrations) {
        if (migration.version <= current) continue;
        await conn.unsafe("BEGIN");
        try {
          await conn.unsafe(migration.sql);
          await conn`INSERT INTO ${table} (version, description) VALUES (${migration.version}, ${migration.description})`;
          await conn.unsafe("COMMIT");
        } catch (error) {
          await conn.unsafe("ROLLBACK").catch(() => {});
          throw error;
        }
        logger?.info(plan.appliedMessage, {
          version: migration.version,
          description: migration.description,
        });
      }
    } finally {
      await conn`SELECT pg_advisory_unlock(${plan.lockKey}::bigint)`.catch(() => {});
    }
  } finally {
    conn.release();
  }
}
