import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite";
import { newToken } from "../../src/auth/tokens";
import { StateSchemaError } from "../../src/state/codec";
import { openSqliteState, SQLITE_STATE_SCHEMA_VERSION } from "../../src/state/sqlite";
import { TempDir } from "../support/cli";
import { managementRecord, signerStateConformanceSuite, tokenRecord } from "./conformance";

const dir = new TempDir();
let counter = 0;
const freshPath = () => join(dir.path, `state-${++counter}.sqlite`);

afterAll(() => dir.remove());

signerStateConformanceSuite("sqlite", () => openSqliteState(freshPath()));
signerStateConformanceSuite("sqlite :memory:", () => openSqliteState(":memory:"));

describe("sqlite signer_state specifics", () => {
  test("WAL, owner-only file, schema version recorded", async () => {
    const path = freshPath();
    await (await openSqliteState(path)).close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const db = new Database(path, { readonly: true });
    try {
      expect(db.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(db.query("SELECT version FROM sigil_state_schema_version").all()).toEqual([
        { version: SQLITE_STATE_SCHEMA_VERSION },
      ]);
    } finally {
      db.close();
    }
  });

  test("reopen keeps policies and tokens", async () => {
    const path = freshPath();
    const policy = {
      name: "signers",
      rules: [{ effect: "allow" as const, scopes: ["sign" as const] }],
    };
    const client = tokenRecord("kept");
    const root = managementRecord("root", 1);
    const first = await openSqliteState(path);
    await first.createPolicy(policy);
    await first.createToken(client);
    await first.createToken(root);
    await first.close();
    const second = await openSqliteState(path);
    try {
      expect(await second.listPolicies()).toStrictEqual([policy]);
      expect(await second.listTokens()).toStrictEqual([root, client]);
      expect(await second.createPolicy(policy)).toBe(false);
      expect(await second.consumeToken(client.hash)).toStrictEqual(client);
    } finally {
      await second.close();
    }
    const third = await openSqliteState(path);
    try {
      expect(await third.findToken(client.hash)).toBeUndefined();
      expect(await third.listTokens()).toStrictEqual([root]);
    } finally {
      await third.close();
    }
  });

  test("two stores on one file see each other's writes; consume is exactly-once across them", async () => {
    const path = freshPath();
    const a = await openSqliteState(path);
    const b = await openSqliteState(path);
    try {
      await a.createPolicy({ name: "p", rules: [] });
      expect(await b.getPolicy("p")).toStrictEqual({ name: "p", rules: [] });
      expect(await b.createPolicy({ name: "p", rules: [] })).toBe(false);
      const record = tokenRecord("shared", { kind: "setup", cidrs: [] });
      await b.createToken(record);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).consumeToken(record.hash)),
      );
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("the database file holds the hash, never the token", async () => {
    const path = freshPath();
    const issued = newToken();
    const store = await openSqliteState(path);
    await store.createToken(tokenRecord("x", { accessor: issued.accessor, hash: issued.hash }));
    await store.close();
    const bytes = [path, `${path}-wal`]
      .filter((p) => existsSync(p))
      .map((p) => readFileSync(p).toString("latin1"))
      .join("");
    expect(bytes).toContain(issued.hash);
    expect(bytes).not.toContain(issued.token);
  });

  test("may share its file with the sqlite slashing-protection database", async () => {
    const path = freshPath();
    const slashing = await openSqliteStore(path);
    const state = await openSqliteState(path);
    try {
      await state.createPolicy({ name: "p", rules: [] });
      await slashing.ping();
      expect(await state.listPolicies()).toHaveLength(1);
    } finally {
      await state.close();
      await slashing.close();
    }
    await (await openSqliteStore(path)).close();
    await (await openSqliteState(path)).close();
  });

  test("a database from a newer sigil is refused", async () => {
    const path = freshPath();
    await (await openSqliteState(path)).close();
    const db = new Database(path);
    db.run("UPDATE sigil_state_schema_version SET version = 999");
    db.close();
    await expect(openSqliteState(path)).rejects.toThrow(StateSchemaError);
  });
});
