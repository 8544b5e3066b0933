// The key-source conformance suite: the same lifecycle checks against every key source of a real
// signer (started in this process, real HTTP), with cloud_kv on a DynamoDB-protocol server
// (dynalite) and the seal's share wrapped by AWS KMS through the KMS-protocol server.
//
// Sources: the filesystem's own descriptors (read-only: an operator adds and removes files and
// reloads), the Key Manager API's keystore files, cloud_kv through its own routes, and cloud_kv
// keys deleted through the Key Manager API. For each: import → sign → restart → signs; delete →
// 404 at once, after a refresh (reload), after a restart and unseal, and the source no longer
// holds it; concurrent imports and deletes of one key end in one consistent state.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { managementCall } from "../support/ceremony";
import { TempDir } from "../support/cli";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { itemStatus, setProcessEnv } from "../support/key-sources";
import { interopKeystore, type TestKeystore } from "../support/keystores";
import { type KmsSeal, startKmsSeal } from "../support/kms-seal";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest } from "../support/slashing";

const dir = new TempDir();
const PASSWORD = "key-source-conformance";
const TABLE = "conformance-keys";
const managedDir = join(dir.path, "managed");
const operatorDir = join(dir.path, "operator");
let dynamo: RunningDynamo;
let kmsSeal: KmsSeal;
let signer: InProcessSigner;
let management = "";
let restoreEnv = () => {};

async function start(): Promise<void> {
  signer = await startInProcessSigner(dir, "conformance", {
    yaml: [
      "key_sources:",
      `  filesystem: {paths: ["${managedDir}", "${operatorDir}"]}`,
      "  key_manager_api: {enabled: true}",
      "  cloud_kv:",
      `    table: ${TABLE}`,
      "    key_refresh_interval_minutes: 0",
      "    writable: {enabled: true}",
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ],
  });
}

/** Stop, start again (sealed), unseal through KMS. */
async function restart(): Promise<void> {
  await signer.stop();
  await start();
  await kmsSeal.unseal(signer.url);
}

beforeAll(async () => {
  mkdirSync(managedDir);
  mkdirSync(operatorDir);
  dynamo = await startDynamo();
  await dynamo.createSlashingTable(TABLE);
  kmsSeal = await startKmsSeal();
  // The signer's AWS clients (DynamoDB, KMS) read this process's environment.
  restoreEnv = setProcessEnv({ ...dynamo.processEnv, ...kmsSeal.env });
  await start();
  ({ management } = await kmsSeal.bootstrap(signer.url, signer.logs));
}, 120_000);

afterAll(async () => {
  await signer?.stop();
  await kmsSeal?.stop();
  await dynamo?.stop();
  restoreEnv();
  dir.remove();
});

const api = (method: string, path: string, body?: unknown) =>
  managementCall(signer.url, management, method, path, body);

let epoch = 10;
/** Signs a fresh attestation (never slashable): 200 when the key signs, 404 when it is unknown. */
async function signs(pubkey: string): Promise<number> {
  epoch += 2;
  const answer = await api(
    "POST",
    `/api/v1/eth2/sign/${pubkey}`,
    attestationRequest(epoch, epoch + 1, epoch).body,
  );
  expect([200, 404]).toContain(answer.status);
  return answer.status;
}

/** POST /reload (answered at once), then waits for the background reload to finish. */
async function reload(): Promise<void> {
  // As operators send it (curl -X POST): no body.
  const answer = await fetch(`${signer.url}/reload`, {
    method: "POST",
    headers: { authorization: `Bearer ${management}` },
  });
  expect(answer.status).toBe(202);
  expect(((await answer.json()) as { status: string }).status).toBe("accepted");
  await signer.signer.keysReloaded();
}

async function listed(pubkey: string): Promise<boolean> {
  const answer = await api("GET", "/eth/v1/keystores");
  expect(answer.status).toBe(200);
  return (answer.body.data as { validating_pubkey: string }[]).some(
    (k) => k.validating_pubkey === pubkey,
  );
}

async function kmDelete(pubkeys: string[]) {
  const answer = await api("DELETE", "/eth/v1/keystores", { pubkeys });
  expect(answer.status).toBe(200);
  return answer.body as {
    data: { status: string; message?: string }[];
    slashing_protection: string;
  };
}

/** Pubkeys with at least one record in an interchange. */
function historyOf(interchange: string): string[] {
  return (JSON.parse(interchange) as { data: { pubkey: string }[] }).data.map((v) => v.pubkey);
}

async function itemExists(pubkey: string): Promise<boolean> {
  return (await itemStatus(dynamo, TABLE, pubkey)) !== undefined;
}

interface SourceDriver {
  readonly name: string;
  /** Whether keys are imported and deleted through an API (else by an operator's files). */
  readonly writable: boolean;
  importKey(key: TestKeystore): Promise<string>;
  deleteKey(pubkey: string): Promise<string>;
  /** Whether the source itself (files, table) holds the key. */
  holds(pubkey: string): Promise<boolean>;
}

async function cloudKvImport(key: TestKeystore): Promise<string> {
  const answer = await api("POST", "/api/v1/signer/keys", {
    keystores: [key.keystore],
    passwords: [PASSWORD],
  });
  expect(answer.status).toBe(200);
  return String(answer.body.data[0].status);
}

const operatorFile = (pubkey: string) => join(operatorDir, `validator-${pubkey.slice(2, 14)}.yaml`);

const drivers: SourceDriver[] = [
  {
    name: "filesystem descriptors (read-only: the operator's files and a reload)",
    writable: false,
    async importKey(key) {
      const base = `validator-${key.pubkey.slice(2, 14)}`;
      writeFileSync(join(operatorDir, `${base}.json`), key.keystore);
      writeFileSync(join(operatorDir, `${base}.txt`), PASSWORD, { mode: 0o600 });
      writeFileSync(
        operatorFile(key.pubkey),
        `type: file-keystore\nkeystoreFile: ${base}.json\nkeystorePasswordFile: ${base}.txt\n`,
      );
      await reload();
      return (await listed(key.pubkey)) ? "imported" : "not loaded";
    },
    async deleteKey(pubkey) {
      // The Key Manager API refuses: the key is read-only, and nothing is touched.
      const refused = await kmDelete([pubkey]);
      expect(refused.data[0]?.status).toBe("error");
      expect(refused.data[0]?.message).toContain("read-only");
      expect(historyOf(refused.slashing_protection)).not.toContain(pubkey);
      expect(await signs(pubkey)).toBe(200);
      rmSync(operatorFile(pubkey));
      await reload();
      return (await listed(pubkey)) ? "still loaded" : "deleted";
    },
    holds: async (pubkey) => existsSync(operatorFile(pubkey)),
  },
  {
    name: "Key Manager API keystore files",
    writable: true,
    async importKey(key) {
      const answer = await api("POST", "/eth/v1/keystores", {
        keystores: [key.keystore],
        passwords: [PASSWORD],
      });
      expect(answer.status).toBe(200);
      return String(answer.body.data[0].status);
    },
    async deleteKey(pubkey) {
      return String((await kmDelete([pubkey])).data[0]?.status);
    },
    holds: async (pubkey) => existsSync(join(managedDir, `${pubkey}.yaml`)),
  },
  {
    name: "cloud_kv through its own routes",
    writable: true,
    importKey: cloudKvImport,
    async deleteKey(pubkey) {
      const answer = await api("DELETE", "/api/v1/signer/keys", { pubkeys: [pubkey] });
      expect(answer.status).toBe(200);
      return String(answer.body.data[0].status);
    },
    holds: itemExists,
  },
  {
    name: "cloud_kv keys deleted through the Key Manager API",
    writable: true,
    importKey: cloudKvImport,
    async deleteKey(pubkey) {
      return String((await kmDelete([pubkey])).data[0]?.status);
    },
    holds: itemExists,
  },
];

let nextIndex = 300;
const newKey = () => interopKeystore(nextIndex++, PASSWORD);

describe.each(drivers)("key source: $name", (driver) => {
  test("import → sign → restart (and unseal) → signs", async () => {
    const key = await newKey();
    expect(await signs(key.pubkey)).toBe(404);
    expect(await driver.importKey(key)).toBe("imported");
    expect(await driver.holds(key.pubkey)).toBe(true);
    expect(await signs(key.pubkey)).toBe(200);
    await restart();
    expect(await signs(key.pubkey)).toBe(200);
    expect(await listed(key.pubkey)).toBe(true);
  }, 60_000);

  test("delete → 404 at once, after a refresh, after a restart and unseal; the source holds it no more", async () => {
    const key = await newKey();
    expect(await driver.importKey(key)).toBe("imported");
    expect(await signs(key.pubkey)).toBe(200);
    expect(await driver.deleteKey(key.pubkey)).toBe("deleted");
    expect(await signs(key.pubkey)).toBe(404);
    expect(await driver.holds(key.pubkey)).toBe(false);
    await reload();
    expect(await signs(key.pubkey)).toBe(404);
    await restart();
    expect(await signs(key.pubkey)).toBe(404);
    expect(await listed(key.pubkey)).toBe(false);
    await reload();
    expect(await signs(key.pubkey)).toBe(404);
  }, 60_000);

  test.if(driver.writable)(
    `concurrent imports and deletes of one key end in one consistent state${driver.writable ? "" : " (not run: a read-only source imports and deletes nothing)"}`,
    async () => {
      const key = await newKey();
      const consistent = async () => {
        const held = await driver.holds(key.pubkey);
        expect({ signs: await signs(key.pubkey), listed: await listed(key.pubkey) }).toEqual({
          signs: held ? 200 : 404,
          listed: held,
        });
        return held;
      };
      const outcomes = new Set<string>();
      for (let round = 0; round < 6; round++) {
        // Half the rounds start with the key in place, half without.
        if (round % 2 === 0 && !(await driver.holds(key.pubkey))) await driver.importKey(key);
        const [imported, deleted] = await Promise.all([
          driver.importKey(key),
          driver.deleteKey(key.pubkey),
        ]);
        outcomes.add(`${imported}/${deleted}`);
        await consistent();
      }
      // Every answer was one of the two orders the per-key lock allows.
      for (const outcome of outcomes)
        expect([
          "imported/deleted",
          "duplicate/deleted",
          "imported/not_active",
          "imported/not_found",
        ]).toContain(outcome);
      const held = await consistent();
      await reload();
      expect(await consistent()).toBe(held);
      await restart();
      expect(await consistent()).toBe(held);
    },
    120_000,
  );
});

test("delete answers the interchange of deleted and not_active keys only: never of a refused one", async () => {
  const [readonlyKey, deletable, hiddenNone] = await Promise.all([newKey(), newKey(), newKey()]);
  if (!readonlyKey || !deletable || !hiddenNone) throw new Error("no keys");
  expect(await drivers[0]?.importKey(readonlyKey)).toBe("imported");
  expect(await drivers[1]?.importKey(deletable)).toBe("imported");
  expect(await signs(readonlyKey.pubkey)).toBe(200);
  expect(await signs(deletable.pubkey)).toBe(200);
  const answer = await kmDelete([readonlyKey.pubkey, deletable.pubkey, hiddenNone.pubkey]);
  expect(answer.data.map((d) => d.status)).toEqual(["error", "deleted", "not_found"]);
  expect(historyOf(answer.slashing_protection)).toEqual([deletable.pubkey]);
  expect(await signs(readonlyKey.pubkey)).toBe(200);
  // Deleted again: gone from memory, history kept, so not_active, with its history.
  const again = await kmDelete([deletable.pubkey]);
  expect(again.data).toEqual([{ status: "not_active" }]);
  expect(historyOf(again.slashing_protection)).toEqual([deletable.pubkey]);
});
