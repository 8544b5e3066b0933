// sqlite specifics of the database-wide watermarks (backends/sqlite/watermarks.ts): what a reader
// of an older schema sees, and what a writer does with a row it cannot read.
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { block, GVR_A, pubkey, root } from "./support";

const dir = mkdtempSync(join(tmpdir(), "sigil-sqlite-watermarks-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a reader of a schema 4 database (no watermarks table) sees none; a writer adds it", async () => {
  const path = join(dir, "v4.sqlite");
  await (await openSqliteStore(path, { create: true })).close();
  const db = new Database(path);
  db.run("DROP TABLE database_watermarks");
  db.run("UPDATE schema_version SET version = 4");
  db.close();
  const reader = await openSqliteStore(path, { create: false, access: "read" });
  expect(await reader.databaseWatermarks()).toEqual({});
  await reader.close();
  const writer = await openSqliteStore(path, { create: false });
  const high = { epoch: 3n, slot: 96n };
  expect(await writer.changeWatermarks({ kind: "set_high", high })).toEqual({ high });
  await writer.close();
});

test("a row that is not a uint64 stops the check (503), it never reads as no bound", async () => {
  const path = join(dir, "corrupt.sqlite");
  const store = await openSqliteStore(path, { create: true });
  await store.changeWatermarks({ kind: "set_high", high: { epoch: 3n, slot: 96n } });
  await store.close();
  const db = new Database(path);
  db.run("UPDATE database_watermarks SET high_slot = 'ninety-six'");
  db.close();
  const reopened = await openSqliteStore(path, { create: false });
  try {
    await expect(
      reopened.checkAndInsertBlock(GVR_A, block(pubkey(1), 200, root("b"))),
    ).rejects.toThrow("database_watermarks.high_slot is not a uint64");
  } finally {
    await reopened.close();
  }
});
