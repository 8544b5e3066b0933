// Upgrades from every released schema version (test/storage/fixtures, README.md there): today's
// code opens each database the sigil of that version wrote, migrates it, and must keep its records
// and its answers: the same export, the same decisions for the same messages (a slashable message
// recorded before the upgrade is still refused), the same schema as a database it creates fresh.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { LATEST_SCHEMA_VERSION } from "../../src/antislashing/backends/postgres/migrations";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import { SQLITE_SCHEMA_VERSION } from "../../src/antislashing/backends/sqlite/migrations";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { interchangeToString } from "../../src/antislashing/interchange";
import type { SlashingStore } from "../../src/antislashing/store";
import type { Policy } from "../../src/auth/types";
import { openPostgresState, POSTGRES_STATE_SCHEMA_VERSION } from "../../src/state/postgres";
import { openSqliteState, SQLITE_STATE_SCHEMA_VERSION } from "../../src/state/sqlite";
import type { SignerStateStore, TokenRecord } from "../../src/state/store";
import { TempDir } from "../support/cli";
import { type PostgresServer, startPostgres } from "../support/postgres";
import {
  fixtureName,
  hasDatabaseWatermarks,
  type ProbeAnswer,
  probeList,
  RELEASES,
  type Release,
  SCENARIO_GVR,
  STATE_SCENARIO,
  toBytes,
} from "./fixtures/scenario";
import { dumpSchema, restoreDump } from "./pg-dump";

const FIXTURES = join(import.meta.dir, "fixtures");
const dir = new TempDir();
let server: PostgresServer;
const admins: postgres.Sql[] = [];

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  await Promise.all(admins.map((a) => a.end({ timeout: 1 })));
  await server?.stop();
  dir.remove();
});

type StoredWatermark = { readonly epoch: string; readonly slot: string };

interface SlashingManifest {
  readonly release: Release;
  readonly export: unknown;
  /** The database-wide watermarks, in the schemas that hold them (decimal text). */
  readonly watermarks?: { readonly low?: StoredWatermark; readonly high?: StoredWatermark };
  readonly answers: readonly ProbeAnswer[];
}

interface StateManifest {
  readonly release: Release;
  readonly policies: Policy[];
  readonly tokens: TokenRecord[];
  readonly seal: { body: string; version: number } | null;
}

function manifest<T>(release: Release): T {
  return JSON.parse(readFileSync(join(FIXTURES, `${fixtureName(release)}.json`), "utf8")) as T;
}

/** A writable copy of a fixture database, owner-only as sigil would have left it. */
function copyOf(release: Release): string {
  const path = join(dir.path, `${fixtureName(release)}-${Date.now()}.db`);
  copyFileSync(join(FIXTURES, `${fixtureName(release)}.db`), path);
  chmodSync(path, 0o600);
  return path;
}

function sqliteVersion(path: string, table: string): number {
  const db = new Database(path, { readonly: true });
  try {
    const row = db.query(`SELECT MAX(version) AS version FROM ${table}`).get() as {
      version: number;
    };
    return row.version;
  } finally {
    db.close();
  }
}

function sqliteSchema(path: string): unknown[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
      .all();
  } finally {
    db.close();
  }
}

function admin(url: string): postgres.Sql {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  admins.push(sql);
  return sql;
}

/** A fresh schema holding the fixture's dump, and its URL. */
async function restored(release: Release): Promise<{ url: string; sql: postgres.Sql }> {
  const url = await server.createSchema();
  const sql = admin(url);
  await restoreDump(sql, readFileSync(join(FIXTURES, `${fixtureName(release)}.sql`), "utf8"));
  return { url, sql };
}

async function pgVersions(sql: postgres.Sql, table: string): Promise<number[]> {
  const rows = await sql.unsafe<{ version: number }[]>(
    `SELECT version FROM ${table} ORDER BY version`,
  );
  return rows.map((r) => r.version);
}

const upTo = (latest: number) => Array.from({ length: latest }, (_, i) => i + 1);

/** Removes one function's definition from a dump (for the superseded V4 text). */
function withoutFunction(schema: string, name: string): string {
  const start = schema.indexOf(`CREATE OR REPLACE FUNCTION ${name}(`);
  if (start < 0) return schema;
  const end = schema.indexOf("$function$;", schema.indexOf("AS $function$", start)) + 11;
  return schema.slice(0, start) + schema.slice(end);
}

/** Exports, then asks every probe, as make.ts asked the old code. */
async function checkSlashing(store: SlashingStore, expected: SlashingManifest): Promise<void> {
  expect(JSON.parse(await interchangeToString(await store.exportInterchange()))).toEqual(
    expected.export,
  );
  // Kept as they were; a schema before them upgrades to none.
  const mark = (m: StoredWatermark) => ({ epoch: BigInt(m.epoch), slot: BigInt(m.slot) });
  const { low, high } = expected.watermarks ?? {};
  expect(await store.databaseWatermarks()).toEqual({
    ...(low === undefined ? {} : { low: mark(low) }),
    ...(high === undefined ? {} : { high: mark(high) }),
  });
  const answers: ProbeAnswer[] = [];
  for (const probe of probeList()) {
    const gvr = toBytes(SCENARIO_GVR);
    const decision =
      probe.kind === "block"
        ? await store.checkAndInsertBlock(gvr, probe.message)
        : await store.checkAndInsertAttestation(gvr, probe.message);
    answers.push({
      probe: probe.name,
      outcome: decision.outcome,
      ...(decision.outcome === "refused" ? { reason: decision.reason } : {}),
    });
  }
  expect(answers).toEqual([...expected.answers]);
}

/** The fixture itself is not vacuous: it records slashable messages its sigil refused. */
function expectRefusesSlashing(expected: SlashingManifest): void {
  const reasons = new Set(expected.answers.map((a) => a.reason));
  const bounded = hasDatabaseWatermarks(expected.release);
  expect(expected.watermarks !== undefined).toBe(bounded);
  for (const reason of [
    "double_block_proposal",
    "double_vote",
    "surrounding_vote",
    "surrounded_vote",
    "block_slot_below_low_watermark",
    ...(bounded
      ? ["block_slot_at_or_above_high_watermark", "attestation_at_or_above_high_watermark"]
      : []),
  ]) {
    expect(reasons.has(reason)).toBe(true);
  }
}

async function checkState(store: SignerStateStore, expected: StateManifest): Promise<void> {
  expect(await store.listPolicies()).toStrictEqual(expected.policies);
  expect(await store.listTokens()).toStrictEqual(expected.tokens);
  expect((await store.getSeal()) ?? null).toStrictEqual(expected.seal);
  // They still behave: a kept token is consumed once, a kept name cannot be created again, and
  // the seal record (new in version 2) can be written.
  const setup = STATE_SCENARIO.tokens[2];
  expect((await store.consumeToken(setup.hash))?.accessor).toBe(setup.accessor);
  expect(await store.consumeToken(setup.hash)).toBeUndefined();
  expect(await store.createPolicy({ name: "signers", rules: [] })).toBe(false);
  const version = expected.seal?.version;
  expect(await store.putSeal('{"after": "upgrade"}', version)).toBe(true);
  expect(await store.getSeal()).toStrictEqual({
    body: '{"after": "upgrade"}',
    version: (version ?? 0) + 1,
  });
}

const of = (family: Release["family"]) => RELEASES.filter((r) => r.family === family);

describe("slashing protection, sqlite: every released schema version upgrades", () => {
  for (const release of of("slashing-sqlite")) {
    test(`schema ${release.version} (sigil ${release.commit})`, async () => {
      const expected = manifest<SlashingManifest>(release);
      expectRefusesSlashing(expected);
      const path = copyOf(release);
      expect(sqliteVersion(path, "schema_version")).toBe(release.version);
      const store = await openSqliteStore(path, { create: true });
      try {
        await checkSlashing(store, expected);
      } finally {
        await store.close();
      }
      expect(sqliteVersion(path, "schema_version")).toBe(SQLITE_SCHEMA_VERSION);
      const fresh = join(dir.path, `fresh-${Date.now()}.db`);
      await (await openSqliteStore(fresh, { create: true })).close();
      expect(sqliteSchema(path)).toEqual(sqliteSchema(fresh));
    });
  }
});

describe("slashing protection, postgres: every released schema version upgrades", () => {
  for (const release of of("slashing-postgres")) {
    const label = release.superseded ? ", its first text" : "";
    test(`schema ${release.version} (sigil ${release.commit}${label})`, async () => {
      const expected = manifest<SlashingManifest>(release);
      expectRefusesSlashing(expected);
      const { url, sql } = await restored(release);
      expect(await pgVersions(sql, "sigil_schema_version")).toEqual(upTo(release.version));
      const store = await openPostgresStore({ create: true, url, poolSize: 2, forceIpv4: false });
      try {
        await checkSlashing(store, expected);
      } finally {
        await store.close();
      }
      expect(await pgVersions(sql, "sigil_schema_version")).toEqual(upTo(LATEST_SCHEMA_VERSION));
      const freshUrl = await server.createSchema();
      await (
        await openPostgresStore({ create: true, url: freshUrl, poolSize: 1, forceIpv4: false })
      ).close();
      const upgraded = (await dumpSchema(sql)).schema;
      const fresh = (await dumpSchema(admin(freshUrl))).schema;
      if (release.superseded) {
        // Only the function 206d1bc rewrote differs; nothing migrates it (same version).
        expect(upgraded).not.toBe(fresh);
        const name = "sigil_import_validator_with_floors";
        expect(withoutFunction(upgraded, name)).toBe(withoutFunction(fresh, name));
      } else {
        expect(upgraded).toBe(fresh);
      }
    });
  }
});

describe("signer_state, sqlite: every released schema version upgrades", () => {
  for (const release of of("state-sqlite")) {
    test(`schema ${release.version} (sigil ${release.commit})`, async () => {
      const path = copyOf(release);
      expect(sqliteVersion(path, "sigil_state_schema_version")).toBe(release.version);
      const store = await openSqliteState(path);
      try {
        await checkState(store, manifest<StateManifest>(release));
      } finally {
        await store.close();
      }
      expect(sqliteVersion(path, "sigil_state_schema_version")).toBe(SQLITE_STATE_SCHEMA_VERSION);
      const fresh = join(dir.path, `fresh-state-${Date.now()}.db`);
      await (await openSqliteState(fresh)).close();
      expect(sqliteSchema(path)).toEqual(sqliteSchema(fresh));
    });
  }
});

describe("signer_state, postgres: every released schema version upgrades", () => {
  for (const release of of("state-postgres")) {
    test(`schema ${release.version} (sigil ${release.commit})`, async () => {
      const { url, sql } = await restored(release);
      expect(await pgVersions(sql, "sigil_state_schema_version")).toEqual(upTo(release.version));
      const store = await openPostgresState({ url, poolSize: 2, forceIpv4: false });
      try {
        await checkState(store, manifest<StateManifest>(release));
      } finally {
        await store.close();
      }
      expect(await pgVersions(sql, "sigil_state_schema_version")).toEqual(
        upTo(POSTGRES_STATE_SCHEMA_VERSION),
      );
      const freshUrl = await server.createSchema();
      await (await openPostgresState({ url: freshUrl, poolSize: 1, forceIpv4: false })).close();
      expect((await dumpSchema(sql)).schema).toBe((await dumpSchema(admin(freshUrl))).schema);
    });
  }
});
