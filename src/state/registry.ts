/**
 * Backend name → opener for signer_state (`signer_state.backend`). Backends are imported lazily,
 * so that a signer on sqlite never loads the PostgreSQL or AWS clients. The composition root
 * (app/auth.ts) opens its store here.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "../observability/log";
import { type PostgresSettings, poolOptions } from "../storage/postgres/settings";
import { SqliteFileError, sqliteFileProblem } from "../storage/sqlite/file-problem";
import type { SignerStateStore } from "./store";

export type SignerStateBackend = SignerStateStore["backend"];

/** The `signer_state` settings a backend is opened with (config/schema.ts validates them). */
export interface SignerStateSettings extends PostgresSettings {
  readonly backend: SignerStateBackend;
  /** sqlite: the database file; default ./signer_state.sqlite. */
  readonly path?: string;
  /** dynamodb */
  readonly table?: string;
}

type Opener = (settings: SignerStateSettings, logger: Logger) => Promise<SignerStateStore>;

const BACKENDS: Readonly<Record<SignerStateBackend, Opener>> = {
  async sqlite(settings) {
    const path = settings.path ?? "./signer_state.sqlite";
    try {
      // The database directory is created (owner-only) so that a fresh install just works.
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const { openSqliteState } = await import("./sqlite");
      return await openSqliteState(path);
    } catch (error) {
      // SQLite says only "unable to open database file": find out why.
      const problem = sqliteFileProblem(path, { access: "write", createDirectory: true });
      throw problem === undefined ? error : new SqliteFileError(path, problem, error);
    }
  },
  async postgres(settings, logger) {
    const { openPostgresState } = await import("./postgres");
    return openPostgresState(poolOptions(settings, logger));
  },
  async dynamodb(settings, logger) {
    const { openDynamoState } = await import("./dynamodb");
    const { createDynamoClient } = await import("../storage/dynamodb/client");
    return openDynamoState({ table: settings.table ?? "", client: createDynamoClient(), logger });
  },
};

/** Opens the signer_state store `settings.backend` names. */
export function openSignerStateBackend(
  settings: SignerStateSettings,
  logger: Logger,
): Promise<SignerStateStore> {
  return BACKENDS[settings.backend](settings, logger.child("state"));
}
