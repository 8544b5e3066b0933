import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { newToken } from "../../src/auth/tokens";
import { StateSchemaError } from "../../src/state/codec";
import { openSqliteState, SQLITE_STATE_SCHEMA_VERSION } from "../../src/state/sqlite";
import { TempDir } from "../support/cli";
import {
  managementRecord,
  sealBody,
  signerStateConformanceSuite,
  tokenRecord,
} from "./conformance";

const dir = new TempDir();
let counter = 0;
const freshPath = () => join(dir.path, `state-${++counter}.sqlite`);

afterAll(() => dir.remove());

signerStateConformanceSuite(
  "sqlite",
  async () => {
    const path = freshPath();
    return () => openSqliteState(path);
  },
  { shared: true },
);
/** Each connection to ":memory:" has a database of its own. */
signerStateConformanceSuite("sqlite :memory:", async () => () => openSqliteState(":memory:"), {
  shared: false,
});

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

  test("several processes on one file: the seal CAS holds across them (no lost update)", async () => {
    const path = freshPath();
    const setup = await openSqliteState(path);
    await setup.putSeal("[]", undefined);
    await setup.close();
    const go = join(dir.path, `go-${counter}`);
    // Each process waits for `go` (so that they run together), then appends its tag `rounds`
    // times with a read-modify-CAS loop; a lost update would drop a tag.
    const script = dir.file(
      `seal-writer-${counter}.ts`,
      `import { existsSync } from "node:fs";
       import { openSqliteState } from ${JSON.stringify(resolve("src/state/sqlite.ts"))};
       const [path, go, tag, rounds] = process.argv.slice(2);
       const store = await openSqliteState(path, { busyTimeoutMs: 30000 });
       while (!existsSync(go)) await Bun.sleep(5);
       for (let i = 0; i < Number(rounds); i++) {
         for (;;) {
           const slot = await store.getSeal();
           const next = JSON.stringify([...JSON.parse(slot.body), tag + "-" + i]);
           if (await store.putSeal(next, slot.version)) break;
           await Bun.sleep(Math.random() * 3);
         }
       }
       await store.close();`,
    );
    const processes = 4;
    const rounds = 15;
    const children = Array.from({ length: processes }, (_, p) =>
      Bun.spawn([process.execPath, script, path, go, `p${p}`, String(rounds)], {
        stdout: "ignore",
        stderr: "pipe",
      }),
    );
    await Bun.sleep(300);
    dir.file(`go-${counter}`, "");
    const codes = await Promise.all(children.map((c) => c.exited));
    const errors = await Promise.all(children.map((c) => new Response(c.stderr).text()));
    expect(errors.filter((e) => e.trim() !== "")).toEqual([]);
    expect(codes).toEqual(Array(processes).fill(0));
    const store = await openSqliteState(path);
    try {
      const slot = await store.getSeal();
      expect(slot?.version).toBe(1 + processes * rounds);
      const tags = JSON.parse(slot?.body ?? "[]") as string[];
      expect(tags).toHaveLength(processes * rounds);
      expect(new Set(tags).size).toBe(processes * rounds);
    } finally {
      await store.close();
    }
  }, 60_000);

  test("a file of schema version 1 is upgraded in place, keeping policies and tokens", async () => {
    const path = freshPath();
    // The released version 1 schema, frozen here as it shipped (never derive it from the code).
    const v1 = new Database(path, { create: true, strict: true });
    v1.run("PRAGMA journal_mode = WAL");
    v1.run("CREATE TABLE sigil_state_schema_version (version INTEGER NOT NULL)");
    v1.run(`CREATE TABLE sigil_state_policies (
         name       TEXT PRIMARY KEY NOT NULL CHECK (name <> ''),
         rules      TEXT NOT NULL CHECK (json_valid(rules) AND json_type(rules) = 'array'),
         created_at INTEGER NOT NULL,
         updated_at INTEGER NOT NULL
       ) STRICT, WITHOUT ROWID`);
    v1.run(`CREATE TABLE sigil_state_tokens (
         hash       TEXT PRIMARY KEY NOT NULL CHECK (length(hash) = 64),
         accessor   TEXT NOT NULL UNIQUE CHECK (accessor <> ''),
         kind       TEXT NOT NULL CHECK (kind IN ('management', 'client', 'setup')),
         policies   TEXT NOT NULL CHECK (json_valid(policies) AND json_type(policies) = 'array'),
         cidrs      TEXT NOT NULL CHECK (json_valid(cidrs) AND json_type(cidrs) = 'array'),
         created_at INTEGER NOT NULL,
         expires_at INTEGER
       ) STRICT, WITHOUT ROWID`);
    v1.run(
      "CREATE INDEX sigil_state_tokens_by_created ON sigil_state_tokens (created_at, accessor)",
    );
    v1.run(
      "CREATE INDEX sigil_state_tokens_by_expiry ON sigil_state_tokens (expires_at) WHERE expires_at IS NOT NULL",
    );
    v1.run("INSERT INTO sigil_state_schema_version (version) VALUES (1)");
    const client = tokenRecord("old-client");
    const root = managementRecord("old-root", 1);
    v1.run(
      `INSERT INTO sigil_state_policies VALUES ('signers', '[{"effect":"allow","scopes":["sign"]}]', 1, 1)`,
    );
    const insert = v1.query(
      "INSERT INTO sigil_state_tokens VALUES ($hash, $accessor, $kind, $policies, $cidrs, $created, $expires)",
    );
    for (const t of [client, root]) {
      insert.run({
        hash: t.hash,
        accessor: t.accessor,
        kind: t.kind,
        policies: JSON.stringify(t.policies),
        cidrs: JSON.stringify(t.cidrs),
        created: t.createdAt,
        expires: t.expiresAt ?? null,
      });
    }
    v1.close();

    const store = await openSqliteState(path);
    try {
      expect(await store.listTokens()).toStrictEqual([root, client]);
      expect(await store.listPolicies()).toStrictEqual([
        { name: "signers", rules: [{ effect: "allow", scopes: ["sign"] }] },
      ]);
      expect(await store.getSeal()).toBeUndefined();
      expect(await store.putSeal(sealBody("after-upgrade"), undefined)).toBe(true);
    } finally {
      await store.close();
    }
    const db = new Database(path, { readonly: true });
    try {
      expect(db.query("SELECT version FROM sigil_state_schema_version").all()).toEqual([
        { version: SQLITE_STATE_SCHEMA_VERSION },
      ]);
      expect(SQLITE_STATE_SCHEMA_VERSION).toBe(2);
    } finally {
      db.close();
    }
    const reopened = await openSqliteState(path);
    try {
      expect((await reopened.getSeal())?.version).toBe(1);
      expect(await reopened.findToken(client.hash)).toStrictEqual(client);
    } finally {
      await reopened.close();
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
    const slashing = await openSqliteStore(path, { create: true });
    const state = await openSqliteState(path);
    try {
      await state.createPolicy({ name: "p", rules: [] });
      await slashing.ping();
      expect(await state.listPolicies()).toHaveLength(1);
    } finally {
      await state.close();
      await slashing.close();
    }
    await (await openSqliteStore(path, { create: true })).close();
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
