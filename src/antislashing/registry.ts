/**
 * Backend name → opener for slashing protection (`antislashing.backend`). Backends are imported
 * lazily, so that a signer on sqlite never loads the PostgreSQL or AWS clients. The composition
 * root (app/slashing.ts) and the offline CLI commands open their store here.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "../observability/log";
import { type PostgresSettings, poolOptions } from "../storage/postgres/settings";
import type { SlashingStore } from "./store";

export type SlashingBackend = SlashingStore["backend"];

/** The `antislashing` settings a backend is opened with (config/schema.ts validates them). */
export interface SlashingSettings extends PostgresSettings {
  readonly backend: SlashingBackend;
  /** sqlite: the database file. */
  readonly path: string;
  /** dynamodb */
  readonly table?: string;
}

export interface OpenOptions {
  /** Logs under the `antislashing` target. */
  readonly logger: Logger;
  /** sqlite: "background" moves WAL checkpoints off the event loop (the signer's choice). */
  readonly sqliteCheckpoints: "inline" | "background";
}

type Opener = (settings: SlashingSettings, options: OpenOptions) => Promise<SlashingStore>;

const BACKENDS: Readonly<Record<SlashingBackend, Opener>> = {
  async sqlite(settings, { logger, sqliteCheckpoints }) {
    // The database directory is created (owner-only) so that a fresh install just works.
    mkdirSync(dirname(settings.path), { recursive: true, mode: 0o700 });
    const { openSqliteStore } = await import("./backends/sqlite/store");
    return openSqliteStore(settings.path, { checkpoints: sqliteCheckpoints, logger });
  },
  async postgres(settings, { logger }) {
    const { openPostgresStore } = await import("./backends/postgres/store");
    return openPostgresStore(poolOptions(settings, logger));
  },
  async dynamodb(settings, { logger }) {
    const { openDynamoStore } = await import("./backends/dynamodb/store");
    const { createDynamoClient } = await import("../storage/dynamodb/client");
    return openDynamoStore({ table: settings.table ?? "", client: createDynamoClient(), logger });
  },
  async noop() {
    const { createNoopStore } = await import("./backends/noop/store");
    return createNoopStore();
  },
};

/** Opens the slashing protection store `settings.backend` names. */
export function openSlashingBackend(
  settings: SlashingSettings,
  logger: Logger,
  /** sqlite: "background" moves WAL checkpoints off the event loop (the signer's choice). */
  sqliteCheckpoints: "inline" | "background" = "inline",
): Promise<SlashingStore> {
  return BACKENDS[settings.backend](settings, {
    logger: logger.child("antislashing"),
    sqliteCheckpoints,
  });
}
