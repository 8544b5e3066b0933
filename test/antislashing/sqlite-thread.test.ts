import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore, SqliteSchemaError } from "../../src/antislashing/backends/sqlite/store";
import { openThreadedSqliteStore } from "../../src/antislashing/backends/sqlite/thread-store";
import {
  SlashingDatabaseError,
  SlashingImportError,
  type SlashingStore,
} from "../../src/antislashing/store";
import { TempDir } from "../support/cli";
import { slashingConformanceSuite } from "./conformance";
import { interchangeVectorSuite } from "./interchange-vectors";
import { slashingPropertySuite } from "./property";
import { GVR_A, interchange } from "./support";

const dir = new TempDir();
let counter = 0;
const freshPath = () => join(dir.path, `thread-${++counter}.sqlite`);
/** The signer's store: the database on the slashing thread, checkpoints in their own worker. */
const openFresh = () =>
  openThreadedSqliteStore(freshPath(), { create: true, checkpoints: "background" });

afterAll(() => dir.remove());

const CAPABILITIES = { strategy: "complete", prunes: true, stages: true } as const;
slashingConformanceSuite("sqlite on the slashing thread", openFresh, CAPABILITIES);
interchangeVectorSuite("sqlite on the slashing thread", openFresh, CAPABILITIES);
slashingPropertySuite("sqlite on the slashing thread", openFresh, CAPABILITIES);

/** The error an open rejects with, to compare the thread's with the in-process one. */
async function openError(open: Promise<SlashingStore>): Promise<Error> {
  try {
    await (await open).close();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the open to fail");
}

describe("opening on the slashing thread fails as in process", () => {
  test("a missing file: SlashingDatabaseError missing, the same words", async () => {
    const path = freshPath();
    const threaded = await openError(openThreadedSqliteStore(path, { create: false }));
    const inProcess = await openError(openSqliteStore(path, { create: false }));
    expect(threaded).toBeInstanceOf(SlashingDatabaseError);
    expect((threaded as SlashingDatabaseError).problem).toBe("missing");
    expect(threaded.message).toBe(inProcess.message);
  });

  test("a file another writer holds: SlashingDatabaseError in_use, the same words", async () => {
    const path = freshPath();
    const holder = await openSqliteStore(path, { create: true });
    try {
      const threaded = await openError(openThreadedSqliteStore(path, { create: false }));
      const inProcess = await openError(openSqliteStore(path, { create: false }));
      expect(threaded).toBeInstanceOf(SlashingDatabaseError);
      expect((threaded as SlashingDatabaseError).problem).toBe("in_use");
      expect(threaded.message).toBe(inProcess.message);
    } finally {
      await holder.close();
    }
  });

  test("a newer schema: SqliteSchemaError, the same words", async () => {
    const path = freshPath();
    await (await openSqliteStore(path, { create: true })).close();
    const db = new Database(path);
    db.run("UPDATE schema_version SET version = version + 1");
    db.close();
    const threaded = await openError(openThreadedSqliteStore(path, { create: false }));
    const inProcess = await openError(openSqliteStore(path, { create: false }));
    expect(threaded).toBeInstanceOf(SqliteSchemaError);
    expect(threaded.message).toBe(inProcess.message);
  });

  test("a failed import crosses as SlashingImportError, and nothing is written", async () => {
    const store = await openFresh();
    try {
      expect(await store.bindGenesisValidatorsRoot(GVR_A)).toEqual(GVR_A);
      const other = new Uint8Array(32).fill(0xb2);
      const error = await store.importInterchange(interchange(other, [])).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SlashingImportError);
      expect(await store.storedGenesisValidatorsRoot()).toEqual(GVR_A);
    } finally {
      await store.close();
    }
  });
});
