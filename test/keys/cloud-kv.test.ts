// The cloud_kv key source against a real DynamoDB-protocol server (dynalite): table validation,
// the 16-segment scan, decryption under the master key, refresh, and two instances on one table.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createNoopStore } from "../../src/antislashing/backends/noop/store";
import type { BlsBackend } from "../../src/bls/backend";
import { loadBlstBackend } from "../../src/bls/select";
import { sealSecret } from "../../src/keys/cloud-kv/sealed-secret";
import { type CloudKvItem, CloudKvTable, SCAN_SEGMENTS } from "../../src/keys/cloud-kv/table";
import { KeyService } from "../../src/keys/key-service";
import { KeyStore } from "../../src/keys/key-store";
import { CloudKvSource } from "../../src/keys/sources/cloud-kv";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { registerTestSecret, testLogger } from "../support/log-capture";

const lines: string[] = [];
const logger = testLogger("info", lines);

let dynamo: RunningDynamo;
let bls: BlsBackend;
const master = randomBytes(32);
registerTestSecret(master, "cloud_kv master key");

beforeAll(async () => {
  dynamo = await startDynamo();
  bls = await loadBlstBackend();
});
afterAll(() => dynamo?.stop());

/** A random valid validator key, sealed under `key` for its own pubkey. */
function newItem(key: Uint8Array = master, status = "active"): CloudKvItem & { secretHex: string } {
  for (;;) {
    const secret = randomBytes(32);
    try {
      const pubkey = `0x${Buffer.from(bls.importSecretKey(secret).publicKey).toString("hex")}`;
      const now = Date.now();
      return {
        pubkey,
        ciphertext: sealSecret(key, pubkey, secret),
        status,
        origin: "imported",
        createdAt: now,
        updatedAt: now,
        secretHex: secret.toString("hex"),
      };
    } catch {
      // Above the curve order: draw again.
    }
  }
}

async function tableWith(name: string, items: CloudKvItem[]): Promise<CloudKvTable> {
  await dynamo.createSlashingTable(name);
  const table = new CloudKvTable(dynamo.client(), name);
  await Promise.all(items.map((item) => table.putNew(item)));
  return table;
}

/** One key service per key store (it remembers what each source holds between loads). */
const services = new Map<KeyStore, KeyService>();

/** A load of the cloud_kv source into `keys`, through the key service, as unseal and refresh do. */
async function sync(table: CloudKvTable, keys: KeyStore, statusFilter = ["active"]) {
  let service = services.get(keys);
  if (!service) {
    const source = new CloudKvSource({
      table,
      statusFilter,
      maxConcurrentReads: 4,
      bls,
      masterKey: () => master,
      logger,
    });
    service = new KeyService({ keys, bls, slashing: createNoopStore(), sources: [source], logger });
    services.set(keys, service);
  }
  const summary = await service.load("cloud_kv");
  return { ...summary, failed: summary.failures.length };
}

describe("cloud_kv table", () => {
  test("validate: missing table and a wrong key schema are clear errors", async () => {
    await expect(new CloudKvTable(dynamo.client(), "nope").validate()).rejects.toThrow(
      'cloud_kv table "nope" does not exist',
    );
    await dynamo.createStateTable("wrong-schema");
    await expect(new CloudKvTable(dynamo.client(), "wrong-schema").validate()).rejects.toThrow(
      'partition key "pubkey"',
    );
    await dynamo.createSlashingTable("right-schema");
    await new CloudKvTable(dynamo.client(), "right-schema").validate();
  });

  test("load: every active key, in 16 segments; inactive, undecryptable and malformed items are skipped", async () => {
    const active = Array.from({ length: 120 }, () => newItem());
    const inactive = newItem(master, "inactive");
    const foreign = newItem(randomBytes(32));
    const swapped = { ...newItem(), ciphertext: (active[0] as CloudKvItem).ciphertext };
    const table = await tableWith("load", [...active, inactive, foreign, swapped]);
    const keys = new KeyStore();
    const result = await sync(table, keys);
    expect(result.loaded).toBe(120);
    expect(result.failed).toBe(2);
    expect((await table.scan(["active"], 4, () => {})).pages).toBeGreaterThanOrEqual(SCAN_SEGMENTS);
    for (const item of active) expect(keys.get(item.pubkey)?.source).toBe("cloud_kv");
    expect(keys.get(inactive.pubkey)).toBeUndefined();
    expect(keys.get(foreign.pubkey)).toBeUndefined();
    expect(keys.get(swapped.pubkey)).toBeUndefined();
    const log = lines.join("\n");
    expect(log).toContain(foreign.pubkey);
    for (const item of active.slice(0, 5)) expect(log).not.toContain(item.secretHex);
    // The status filter decides: with both statuses, the inactive key loads too.
    const both = new KeyStore();
    expect((await sync(table, both, ["active", "inactive"])).loaded).toBe(121);
  });

  test("refresh adds new active keys and drops deactivated ones; two instances see each other's writes", async () => {
    const first = Array.from({ length: 10 }, () => newItem());
    const tableA = await tableWith("shared", first);
    const tableB = new CloudKvTable(dynamo.client(), "shared");
    const instanceA = new KeyStore();
    const instanceB = new KeyStore();
    await sync(tableA, instanceA);
    await sync(tableB, instanceB);
    const added = newItem();
    expect(await tableB.putNew(added)).toBe(true);
    expect(await tableA.putNew(added)).toBe(false);
    const gone = first[3] as CloudKvItem;
    expect(await tableA.setStatus(gone.pubkey, "active", "inactive", Date.now())).toBe(true);
    expect(await tableB.setStatus(gone.pubkey, "active", "inactive", Date.now())).toBe(false);
    for (const [table, keys] of [
      [tableA, instanceA],
      [tableB, instanceB],
    ] as const) {
      const result = await sync(table, keys);
      expect(result).toMatchObject({ added: 1, removed: 1, loaded: 10 });
      expect(keys.get(added.pubkey)).toBeDefined();
      expect(keys.get(gone.pubkey)).toBeUndefined();
    }
  });

  test("a key already loaded from another source is not replaced", async () => {
    const item = newItem();
    const table = await tableWith("dup", [item]);
    const keys = new KeyStore();
    keys.add({
      pubkey: item.pubkey,
      key: bls.importSecretKey(Buffer.from(item.secretHex, "hex")),
      source: "filesystem",
      readonly: true,
    });
    const result = await sync(table, keys);
    expect(result.failed).toBe(1);
    expect(keys.get(item.pubkey)?.source).toBe("filesystem");
  });
});
