/**
 * Backend name → opener for slashing protection (`antislashing.backend`), and the one way into a
 * slashing protection database: serve, `sigil slashing init|import|export` and the Web3Signer
 * migration all open it here, so every one of them makes the same checks. Backends are imported
 * lazily, so that a signer on sqlite never loads the PostgreSQL or AWS clients.
 *
 * The checks, in order (docs/antislashing.md, "Which database"):
 *   1. It exists. Only `initialize` (`sigil slashing init`, `--init-slashing-protection`) creates a
 *      missing sqlite file, PostgreSQL tables or DynamoDB table: a signer that quietly started on a
 *      new, empty database would sign again what it signed before.
 *   2. sqlite: it is the file the last writer wrote, and no other process writes it (the backend).
 *   3. It belongs to the configured chain. Creation records the network's genesis validators
 *      root; a database recording another one is refused, and one recording none (made by an
 *      earlier sigil and never used) is bound only by `initialize`.
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Logger } from "../observability/log";
import { type PostgresSettings, poolOptions } from "../storage/postgres/settings";
import { SqliteFileError, sqliteFileProblem } from "../storage/sqlite/file-problem";
import { databaseFiles, missingDatabase } from "./backends/sqlite/files";
import { bytesEqual, bytesToHex } from "./encoding";
import { SlashingDatabaseError, type SlashingStore } from "./store";

export type SlashingBackend = SlashingStore["backend"];

/** The `antislashing` settings a backend is opened with (config/schema.ts validates them). */
export interface SlashingSettings extends PostgresSettings {
  readonly backend: SlashingBackend;
  /** sqlite: the database file. */
  readonly path: string;
  /** dynamodb */
  readonly table?: string;
}

/** The chain the configuration names, which a database must belong to. */
export interface ConfiguredChain {
  /** As operators name it: "mainnet", "mainnet (with network_config)". */
  readonly network: string;
  /** Unknown for a custom network whose network_config does not set it. */
  readonly genesisValidatorsRoot: Uint8Array | undefined;
}

export interface OpenOptions {
  /** Logs under the `antislashing` target. */
  readonly logger: Logger;
  /** sqlite: "background" moves WAL checkpoints off the event loop (the signer's choice). */
  readonly sqliteCheckpoints?: "inline" | "background";
  /**
   * sqlite: the database is opened and used on a thread of its own, the slashing thread
   * (backends/sqlite/thread-store.ts: the signer's choice; the CLI keeps it in process).
   */
  readonly sqliteThread?: boolean;
  /**
   * "write": serve, import, a migration (sqlite: the writer lock). "read": export, a dry run
   * (sqlite: read-only, beside a running signer; a database not yet bound is opened as it is).
   */
  readonly access: "write" | "read";
  /** Create a missing database, and bind one that records no root, to `chain`. */
  readonly initialize: boolean;
  readonly chain: ConfiguredChain;
}

export interface OpenedDatabase {
  readonly store: SlashingStore;
  /** The root the database records (null: a reader on a database never bound, or noop). */
  readonly genesisValidatorsRoot: Uint8Array | null;
  /** This open bound the database to the configured chain: it was created, or had no root. */
  readonly initialized: boolean;
}

/** A missing database's refusal, saying so when its directory is missing too (a wrong path?). */
function withMissingDirectory(error: SlashingDatabaseError, path: string): SlashingDatabaseError {
  const dir = dirname(resolve(path));
  if (error.problem !== "missing" || existsSync(dir)) return error;
  return new SlashingDatabaseError(
    "missing",
    `${error.message} Its directory ${dir} does not exist either: is antislashing.path right?`,
  );
}

/**
 * The refusal an open without `initialize` would give the sqlite database at `path` because it
 * does not exist, word for word, or undefined: `sigil config check` reports it without opening
 * (or locking) anything.
 */
export function missingSqliteDatabase(path: string): SlashingDatabaseError | undefined {
  const files = databaseFiles(path);
  if (existsSync(files.resolved)) return undefined;
  return withMissingDirectory(missingDatabase(files), path);
}

interface BackendOptions {
  readonly logger: Logger;
  readonly sqliteCheckpoints: "inline" | "background";
  readonly sqliteThread: boolean;
  readonly access: "write" | "read";
  readonly create: boolean;
}

type Opener = (settings: SlashingSettings, options: BackendOptions) => Promise<SlashingStore>;

const BACKENDS: Readonly<Record<SlashingBackend, Opener>> = {
  async sqlite(settings, { logger, sqliteCheckpoints, sqliteThread, access, create }) {
    const { path } = settings;
    // SQLite would call a directory "not a database (disk I/O error)", after the lock file was made.
    const fileOptions = { access, createDirectory: create } as const;
    if (statSync(path, { throwIfNoEntry: false })?.isDirectory()) {
      throw new SqliteFileError(path, sqliteFileProblem(path, fileOptions) ?? "a directory");
    }
    try {
      // Only a database about to be created gets its directory (owner-only).
      if (create) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      if (sqliteThread && access === "write") {
        const { openThreadedSqliteStore } = await import("./backends/sqlite/thread-store");
        return await openThreadedSqliteStore(path, {
          create,
          checkpoints: sqliteCheckpoints,
          logger,
        });
      }
      const { openSqliteStore } = await import("./backends/sqlite/store");
      return await openSqliteStore(path, {
        create,
        access,
        checkpoints: sqliteCheckpoints,
        logger,
      });
    } catch (error) {
      // The checks' own refusals stand; a failure to open the files gets its reason.
      if (error instanceof SlashingDatabaseError) throw withMissingDirectory(error, path);
      const problem = sqliteFileProblem(path, fileOptions);
      throw problem === undefined ? error : new SqliteFileError(path, problem, error);
    }
  },
  async postgres(settings, { logger, create }) {
    const { openPostgresStore } = await import("./backends/postgres/store");
    return openPostgresStore({ ...poolOptions(settings, logger), create });
  },
  async dynamodb(settings, { logger, create }) {
    const { openDynamoStore } = await import("./backends/dynamodb/store");
    const { createDynamoClient } = await import("../storage/dynamodb/client");
    return openDynamoStore({
      table: settings.table ?? "",
      client: createDynamoClient(),
      logger,
      create,
    });
  },
  async noop() {
    const { createNoopStore } = await import("./backends/noop/store");
    return createNoopStore();
  },
};

/**
 * Opens the slashing protection database `settings` names, after the checks above; throws
 * SlashingDatabaseError (nothing created or written) when one fails.
 */
export async function openSlashingDatabase(
  settings: SlashingSettings,
  options: OpenOptions,
): Promise<OpenedDatabase> {
  const logger = options.logger.child("antislashing");
  const { chain, initialize } = options;
  if (initialize && options.access === "read") {
    throw new Error("openSlashingDatabase: a reader cannot initialize a database");
  }
  const configured = chain.genesisValidatorsRoot;
  if (settings.backend !== "noop" && initialize && configured === undefined) {
    throw new SlashingDatabaseError(
      "unknown_chain",
      `cannot initialize the slashing protection database for ${chain.network}: ` +
        "network_config sets no genesis_validators_root, so the chain to bind it to is unknown. " +
        "Set network_config.genesis_validators_root (a beacon node answers it at " +
        "/eth/v1/beacon/genesis)",
    );
  }
  const store = await BACKENDS[settings.backend](settings, {
    logger,
    sqliteCheckpoints: options.sqliteCheckpoints ?? "inline",
    sqliteThread: options.sqliteThread === true,
    access: options.access,
    create: initialize,
  });
  if (store.backend === "noop") {
    return { store, genesisValidatorsRoot: null, initialized: false };
  }
  try {
    return await checkChain(store, options, logger);
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
}

async function checkChain(
  store: SlashingStore,
  { chain, initialize, access }: OpenOptions,
  logger: Logger,
): Promise<OpenedDatabase> {
  const configured = chain.genesisValidatorsRoot;
  const stored = await store.storedGenesisValidatorsRoot();
  if (stored === null) {
    if (initialize && configured !== undefined) {
      const bound = await store.bindGenesisValidatorsRoot(configured);
      if (!bytesEqual(bound, configured)) throw chainMismatch(store, bound, chain, configured);
      logger.info(
        `slashing protection database ${store.location} initialized for ${chain.network}: it holds no history`,
        { backend: store.backend, genesis_validators_root: bytesToHex(configured) },
      );
      return { store, genesisValidatorsRoot: bound, initialized: true };
    }
    if (access === "read") return { store, genesisValidatorsRoot: null, initialized: false };
    throw new SlashingDatabaseError(
      "not_initialized",
      `slashing protection database ${store.location} records no genesis validators root: it ` +
        "was never initialized (an earlier sigil made it and nothing was signed or imported)",
    );
  }
  if (configured === undefined) {
    logger.info(
      "network_config sets no genesis_validators_root: the database's chain is not checked against the configuration",
      { database: store.location, genesis_validators_root: bytesToHex(stored) },
    );
  } else if (!bytesEqual(stored, configured)) {
    throw chainMismatch(store, stored, chain, configured);
  }
  return { store, genesisValidatorsRoot: stored, initialized: false };
}

function chainMismatch(
  store: SlashingStore,
  stored: Uint8Array,
  chain: ConfiguredChain,
  configured: Uint8Array,
): SlashingDatabaseError {
  return new SlashingDatabaseError(
    "chain_mismatch",
    `slashing protection database ${store.location} belongs to the chain with genesis validators ` +
      `root ${bytesToHex(stored)}, but sigil is configured for ${chain.network} ` +
      `(${bytesToHex(configured)}): one database serves one chain. Point antislashing at this ` +
      "network's database, or correct `network`",
  );
}
