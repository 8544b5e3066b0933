import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { SQLITE_SCHEMA_VERSION } from "../../src/antislashing/backends/sqlite/migrations";
import { openSqliteStore, SqliteSchemaError } from "../../src/antislashing/backends/sqlite/store";
import { collectInterchange, interchangeSource } from "../../src/antislashing/interchange";
import { SlashingDatabaseError, SlashingImportError } from "../../src/antislashing/store";
import { TempDir } from "../support/cli";
import { slashingConformanceSuite } from "./conformance";
import { interchangeVectorSuite } from "./interchange-vectors";
import { slashingPropertySuite } from "./property";
import { block, exported, GVR_A, iAtt, iBlock, interchange, pubkey, root, vote } from "./support";

const dir = new TempDir();
let counter = 0;
const freshPath = () => join(dir.path, `slashing-${++counter}.sqlite`);
const openFresh = () => openSqliteStore(freshPath(), { create: true });

afterAll(() => dir.remove());

/** Full history, prunable; checks are staged: decided at the commit, durable at the WAL sync. */
const SQLITE_CAPABILITIES = { strategy: "complete", prunes: true, stages: true } as const;
slashingConformanceSuite("sqlite", openFresh, SQLITE_CAPABILITIES);
interchangeVectorSuite("sqlite", openFresh, SQLITE_CAPABILITIES);
slashingPropertySuite("sqlite", openFresh, SQLITE_CAPABILITIES);

describe("sqlite backend specifics", () => {
  test("WAL, owner-only file, schema version recorded", async () => {
    const path = freshPath();
    const store = await openSqliteStore(path, { create: true });
    await store.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const db = new Database(path, { readonly: true });
    try {
      expect(db.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(db.query("SELECT version FROM schema_version").all()).toEqual([
        { version: SQLITE_SCHEMA_VERSION },
      ]);
    } finally {
      db.close();
    }
  });

  test("records survive close and reopen", async () => {
    const path = freshPath();
    const first = await openSqliteStore(path, { create: true });
    expect(await first.checkAndInsertBlock(GVR_A, block(pubkey(1), 10, root("x")))).toEqual({
      outcome: "new",
    });
    await first.close();
    const second = await openSqliteStore(path, { create: true });
    try {
      expect(
        await second.checkAndInsertBlock(GVR_A, block(pubkey(1), 10, root("y"))),
      ).toMatchObject({
        outcome: "refused",
        reason: "double_block_proposal",
      });
    } finally {
      await second.close();
    }
  });

  test("refuses a database with a newer schema version", async () => {
    const path = freshPath();
    await (await openSqliteStore(path, { create: true })).close();
    const db = new Database(path);
    db.run("UPDATE schema_version SET version = version + 1");
    db.close();
    await expect(openSqliteStore(path, { create: true })).rejects.toBeInstanceOf(SqliteSchemaError);
  });

  test("upgrading from schema 3 changes no decision: a floor below the oldest record rises to it", async () => {
    const path = freshPath();
    const pk = pubkey(9);
    const store = await openSqliteStore(path, { create: true });
    await store.importInterchange(
      interchange(GVR_A, [
        {
          pubkey: pk,
          blocks: [iBlock(200, root(200))],
          attestations: [iAtt(20, 30, root(20, 30))],
          floors: { blockSlot: 99n, sourceEpoch: 10n, targetEpoch: 14n },
        },
      ]),
    );
    await store.close();
    // A schema 3 database holding the same rows: there the lowest record was the watermark.
    const db = new Database(path);
    db.run("UPDATE schema_version SET version = 3");
    db.run("DROP TABLE database_watermarks"); // schema 5's
    db.close();
    const upgraded = await openSqliteStore(path, { create: true });
    try {
      expect(await upgraded.checkAndInsertBlock(GVR_A, block(pk, 150, root("b")))).toMatchObject({
        outcome: "refused",
        reason: "block_slot_below_low_watermark",
      });
      expect(
        await upgraded.checkAndInsertAttestation(GVR_A, vote(pk, 12, 16, root("a"))),
      ).toMatchObject({ outcome: "refused", reason: "attestation_source_below_low_watermark" });
      expect(await upgraded.checkAndInsertBlock(GVR_A, block(pk, 201, root("b")))).toEqual({
        outcome: "new",
      });
    } finally {
      await upgraded.close();
    }
  });

  test("one writer per file: a second is refused naming the holder's pid; readers are not", async () => {
    const path = freshPath();
    const writer = await openSqliteStore(path, { create: true });
    try {
      expect(await writer.checkAndInsertBlock(GVR_A, block(pubkey(7), 3, root("w")))).toEqual({
        outcome: "new",
      });
      const second = await openSqliteStore(path, { create: true }).then(
        () => "opened",
        (error: unknown) => error,
      );
      expect(second).toBeInstanceOf(SlashingDatabaseError);
      expect((second as SlashingDatabaseError).problem).toBe("in_use");
      expect((second as Error).message).toContain(`in use by process ${process.pid}`);
      expect((second as Error).message).toContain(`${path}.lock`);
      // An export reads beside the writer, and sees what it committed.
      const reader = await openSqliteStore(path, { create: false, access: "read" });
      try {
        const exported = await collectInterchange(await reader.exportInterchange());
        expect(exported.validators.map((v) => v.pubkey)).toEqual([pubkey(7)]);
        await expect(
          reader.checkAndInsertBlock(GVR_A, block(pubkey(7), 4, root("r"))),
        ).rejects.toThrow();
      } finally {
        await reader.close();
      }
    } finally {
      await writer.close();
    }
    // Closing the writer releases the lock.
    await (await openSqliteStore(path, { create: false })).close();
  });

  test("full uint64 range: values above 2^63 keep their order and round trip", async () => {
    const store = await openSqliteStore(freshPath(), { create: true });
    try {
      const max = (1n << 64n) - 1n;
      const pk = pubkey(9);
      await store.importInterchange(
        interchange(GVR_A, [
          { pubkey: pk, blocks: [iBlock(5), iBlock(max - 1n)], attestations: [iAtt(3, 1n << 63n)] },
        ]),
      );
      expect(await store.checkAndInsertBlock(GVR_A, block(pk, max, root("m")))).toEqual({
        outcome: "new",
      });
      expect(await store.checkAndInsertBlock(GVR_A, block(pk, 6, root("six")))).toEqual({
        outcome: "new",
      });
      expect(await store.checkAndInsertBlock(GVR_A, block(pk, 5, root("five")))).toMatchObject({
        reason: "double_block_proposal",
      });
      expect(
        await store.checkAndInsertAttestation(GVR_A, vote(pk, 4, (1n << 63n) - 1n, root("s"))),
      ).toMatchObject({
        reason: "surrounded_vote",
      });
      expect(await store.checkAndInsertAttestation(GVR_A, vote(pk, 3, max, root("t")))).toEqual({
        outcome: "new",
      });
      const exported = await store.exportInterchange([pk]);
      const all = [];
      for await (const v of exported.validators()) all.push(v);
      expect(all[0]?.blocks.map((b) => b.slot)).toEqual([5n, 6n, max - 1n, max]);
      expect(all[0]?.attestations.map((a) => a.targetEpoch)).toEqual([1n << 63n, max]);
    } finally {
      await store.close();
    }
  });

  test("a large import is staged in batches and copied whole; a failure after some batches writes nothing", async () => {
    const store = await openSqliteStore(freshPath(), { create: true });
    try {
      const validators = Array.from({ length: 120 }, (_, v) => ({
        pubkey: pubkey(v, 77),
        blocks: Array.from({ length: 50 }, (_, i) =>
          iBlock(i * 7, i % 2 === 0 ? root(v, i) : undefined),
        ),
        attestations: Array.from({ length: 50 }, (_, i) => iAtt(i, i + 1)),
      }));
      const metadata = {
        interchange_format_version: "5" as const,
        genesis_validators_root: `0x${"a1".repeat(32)}`,
      };
      const broken = interchangeSource(metadata, async function* () {
        yield* validators;
        throw new SlashingImportError("$.data[120]: broken on purpose");
      });
      await expect(store.importInterchange(broken)).rejects.toBeInstanceOf(SlashingImportError);
      await expect(store.exportInterchange()).rejects.toBeInstanceOf(Error);
      expect(await store.importInterchange(interchange(GVR_A, validators))).toEqual({
        validators: 120,
        blocks: 6000,
        attestations: 6000,
      });
      const { validators: back } = await collectInterchange(await store.exportInterchange());
      expect(back.length).toBe(120);
      expect(back.reduce((n, v) => n + v.blocks.length + v.attestations.length, 0)).toBe(12000);
    } finally {
      await store.close();
    }
  });

  test("messages signed while an import is streaming are kept when the import fails", async () => {
    const store = await openSqliteStore(freshPath(), { create: true });
    try {
      const signer = pubkey(1, 5);
      const metadata = {
        interchange_format_version: "5" as const,
        genesis_validators_root: `0x${"a1".repeat(32)}`,
      };
      const source = interchangeSource(metadata, async function* () {
        yield { pubkey: pubkey(2, 5), blocks: [iBlock(100)], attestations: [] };
        // A signature request served between two chunks of the import.
        expect(
          await store.checkAndInsertBlock(GVR_A, block(signer, 9, root("signed meanwhile"))),
        ).toEqual({
          outcome: "new",
        });
        throw new SlashingImportError("$.data[1]: broken on purpose");
      });
      await expect(store.importInterchange(source)).rejects.toBeInstanceOf(SlashingImportError);
      expect([...(await exported(store)).keys()]).toEqual([signer]);
    } finally {
      await store.close();
    }
  });
});
