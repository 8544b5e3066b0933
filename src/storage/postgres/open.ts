import type postgres from "postgres";
import { createPostgresClient, PostgresConfigError, parsePostgresUrl } from "./connection";
import { type Migration, runPostgresMigrations } from "./migrate";
import type { PostgresPoolOptions } from "./settings";

/** What a store keeps in its database, and how it is named in settings, logs and errors. */
export interface PostgresDatabase {
  /** Log and error prefix: "slashing protection", "signer_state". */
  readonly what: string;
  /** The settings' section: "antislashing" (`antislashing.url`, …), "signer_state". */
  readonly settings: string;
  /** Session settings sent at connect, `application_name` among them. */
  readonly connection: Readonly<Record<string, string>>;
  readonly versionTable: string;
  /** Session advisory lock key of the migrations (decimal bigint), distinct per store. */
  readonly lockKey: string;
  readonly migrations: readonly Migration[];
  /** The error for a database newer than this build, worded by `message`. */
  readonly schemaError: (message: string) => Error;
}

/**
 * Opens the pool, checks that the server answers and migrates the schema; warns when the
 * connection is not encrypted or the server not authenticated. Rejects when the URL or pool size
 * is invalid (PostgresConfigError), the database cannot be reached, or its schema is newer than
 * this build (`database.schemaError`); the pool is closed then.
 */
export async function openMigratedPostgres(
  database: PostgresDatabase,
  options: PostgresPoolOptions,
  /**
   * Whether a database without the store's tables may be given them. Without `create` (the
   * default is to create), such a database is refused with `missing()` before anything is written.
   */
  existing: { readonly create: boolean; readonly missing: () => Error } = {
    create: true,
    missing: () => new Error("unreachable"),
  },
): Promise<postgres.Sql> {
  const { what, settings } = database;
  const target = parsePostgresUrl(options.url, `${settings}.url`);
  if (!Number.isInteger(options.poolSize) || options.poolSize < 1) {
    throw new PostgresConfigError(
      `${settings}.pool_size must be a positive integer, not ${options.poolSize}`,
    );
  }
  const logger = options.logger;
  if (target.tls.mode === "disable") {
    logger?.warn(`${what}: PostgreSQL connection is NOT encrypted (sslmode=disable)`, {
      database: target.display,
    });
  } else if (target.tls.mode !== "verify-full") {
    logger?.info(
      `${what}: PostgreSQL server certificate is not fully verified; use sslmode=verify-full on untrusted networks`,
      { database: target.display },
    );
  }
  const sql = createPostgresClient(target, {
    poolSize: options.poolSize,
    forceIpv4: options.forceIpv4,
    connectTimeoutMs: options.connectTimeoutMs,
    connection: database.connection,
    onPlaintextFallback: () =>
      logger?.warn(`${what}: server offers no TLS, connecting in plaintext (sslmode=prefer)`, {
        database: target.display,
      }),
  });
  const latest = database.migrations.reduce((max, m) => Math.max(max, m.version), 0);
  try {
    if (!existing.create) {
      const [found] = await sql<{ table: string | null }[]>`
        SELECT to_regclass(${database.versionTable})::text AS table`;
      if (found?.table == null) throw existing.missing();
    }
    await runPostgresMigrations(
      sql,
      {
        versionTable: database.versionTable,
        lockKey: database.lockKey,
        migrations: database.migrations,
        appliedMessage: `${what}: database migrated`,
        tooNew: (current) =>
          database.schemaError(
            `the ${what} database has schema version ${current}, newer than the ` +
              `${latest} this sigil knows: upgrade sigil (refusing to touch it)`,
          ),
      },
      logger,
    );
  } catch (error) {
    await sql.end({ timeout: 0 }).catch(() => {});
    throw error;
  }
  logger?.info(`${what}: PostgreSQL ready`, {
    database: target.display,
    pool_size: options.poolSize,
    force_ipv4: options.forceIpv4,
    schema_version: latest,
  });
  return sql;
}
