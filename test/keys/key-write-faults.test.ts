// Fault injection on every key writer, at the IO edge: cloud_kv through a DynamoDB-protocol proxy
// in front of dynalite that fails chosen writes (the signer's real AWS SDK client talks to it),
// the Key Manager API's files through a read-only directory and target paths that cannot be
// written. A batch is all or nothing from the caller's view: after a failed write nothing of the
// batch is left in the source or in memory (or, when undoing failed too, what is left is named
// and never loaded), the answer says what happened, and no write reaches the store after it.
// Also: a load that read the table before a write does not undo that write.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { managementCall } from "../support/ceremony";
import { TempDir } from "../support/cli";
import { type RunningDynamoProxy, startDynamoProxy } from "../support/dynamo-proxy";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { itemStatus as itemStatusIn, makeReadOnly, setProcessEnv } from "../support/key-sources";
import { deleteKeys, importKeys, jsonInit, listKeys } from "../support/keymanager";
import { interopKeystore, type TestKeystore } from "../support/keystores";
import { type KmsSeal, startKmsSeal } from "../support/kms-seal";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest } from "../support/slashing";

const dir = new TempDir();
const PASSWORD = "key-write-faults";
afterAll(() => dir.remove());

let nextIndex = 500;
const newKeys = (n: number) =>
  Promise.all(Array.from({ length: n }, () => interopKeystore(nextIndex++, PASSWORD)));

let epoch = 10;
async function signStatus(url: string, pubkey: string, token?: string): Promise<number> {
  epoch += 2;
  const init = jsonInit("POST", attestationRequest(epoch, epoch + 1, epoch).body);
  if (token) (init.headers as Record<string, string>).authorization = `Bearer ${token}`;
  return (await fetch(`${url}/api/v1/eth2/sign/${pubkey}`, init)).status;
}

describe("cloud_kv writer, through a DynamoDB proxy that fails chosen writes", () => {
  const TABLE = "fault-keys";
  let dynamo: RunningDynamo;
  let proxy: RunningDynamoProxy;
  let kmsSeal: KmsSeal;
  let signer: InProcessSigner;
  let management = "";
  let restoreEnv = () => {};

  const start = async () => {
    signer = await startInProcessSigner(dir, "faults-cloud-kv", {
      yaml: [
        "key_sources:",
        `  filesystem: {paths: ["${join(dir.path, "faults-km")}"]}`,
        "  key_manager_api: {enabled: true}",
        "  cloud_kv:",
        `    table: ${TABLE}`,
        "    key_refresh_interval_minutes: 0",
        "    keygen: {enabled: true, max_concurrent_keygen: 8}",
        "    writable: {enabled: true, max_concurrent_writes: 8}",
        `antislashing: {backend: sqlite, path: "${join(dir.path, "faults.sqlite")}"}`,
        `signer_state: {backend: sqlite, path: "${join(dir.path, "faults-state.sqlite")}"}`,
      ],
    });
  };

  beforeAll(async () => {
    mkdirSync(join(dir.path, "faults-km"));
    dynamo = await startDynamo();
    await dynamo.createSlashingTable(TABLE);
    proxy = await startDynamoProxy(dynamo.endpoint, dynamo.processEnv);
    kmsSeal = await startKmsSeal();
    restoreEnv = setProcessEnv({ ...proxy.processEnv, ...kmsSeal.env });
    await start();
    ({ management } = await kmsSeal.bootstrap(signer.url, signer.logs));
  }, 120_000);

  afterAll(async () => {
    await signer?.stop();
    await proxy?.stop();
    await kmsSeal?.stop();
    await dynamo?.stop();
    restoreEnv();
  });

  const api = (method: string, path: string, body?: unknown) =>
    managementCall(signer.url, management, method, path, body);
  const signs = (pubkey: string) => signStatus(signer.url, pubkey, management);

  /** Every item of the table, read straight from dynalite (not through the proxy). */
  async function items(): Promise<Map<string, string>> {
    const { Items } = await dynamo.client().send(new ScanCommand({ TableName: TABLE }));
    return new Map((Items ?? []).map((i) => [String(i.pubkey?.S), String(i.status?.S)]));
  }

  const itemStatus = (pubkey: string) => itemStatusIn(dynamo, TABLE, pubkey);

  async function reload(): Promise<void> {
    const answer = await fetch(`${signer.url}/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${management}` },
    });
    expect(answer.status).toBe(202);
    await signer.signer.keysReloaded();
  }

  /** Sends `send`, notes when its answer arrived, waits, and returns the writes made after it. */
  async function writesAfterAnswer<T>(
    send: () => Promise<T>,
  ): Promise<{ answer: T; late: number }> {
    const answer = await send();
    const answeredAt = Date.now();
    // Longer than the SDK's retry back-off: a retry still pending would arrive meanwhile.
    await Bun.sleep(1500);
    return { answer, late: proxy.writes.filter((w) => w.at > answeredAt).length };
  }

  /** None of `keys` is in the table or signs. */
  async function nothingOf(keys: TestKeystore[]) {
    for (const key of keys) {
      expect(await itemStatus(key.pubkey)).toBeUndefined();
      expect(await signs(key.pubkey)).toBe(404);
    }
  }

  const importBody = (keys: TestKeystore[]) => ({
    keystores: keys.map((k) => k.keystore),
    passwords: keys.map(() => PASSWORD),
  });

  test("keygen: the 3rd PutItem fails for good → 502 with the truth, every item written removed, none loaded, no write after the answer", async () => {
    const before = await items();
    const loadedBefore = (await api("GET", "/api/v1/signer/status")).body.keys.cloud_kv;
    const seen = proxy.writes.length;
    proxy.failNth("PutItem", proxy.writes.filter((w) => w.operation === "PutItem").length + 3);
    try {
      const { answer, late } = await writesAfterAnswer(() =>
        api("POST", "/api/v1/signer/keys/generate", { count: 5 }),
      );
      expect(answer.status).toBe(502);
      expect(answer.body.code).toBe("key_write_failed");
      expect(answer.body.message).toStartWith(
        "key generation failed and no key was kept: writing 0x",
      );
      expect(answer.body.message).toContain("InternalServerError");
      expect(answer.body.message).toMatch(/; 4 of 5 keys this request had written were removed$/);
      expect(answer.body.mnemonic_backup).toBeUndefined();
      expect(late).toBe(0);
      const batch = proxy.writes.slice(seen);
      // Every write of the batch ended up undone: the four items that landed were deleted.
      const landed = new Set(
        batch
          .filter((w) => w.operation === "PutItem" && w.outcome === "forwarded")
          .map((w) => w.pubkey),
      );
      expect(landed.size).toBe(4);
      const deleted = batch.filter((w) => w.operation === "DeleteItem").map((w) => w.pubkey);
      for (const pubkey of landed) expect(deleted).toContain(pubkey);
      expect(await items()).toEqual(before);
      expect((await api("GET", "/api/v1/signer/status")).body.keys.cloud_kv).toBe(loadedBefore);
      for (const pubkey of landed) expect(await signs(String(pubkey))).toBe(404);
    } finally {
      proxy.clear();
    }
  });

  test("import: the 2nd PutItem fails → every keystore answers error, nothing in the table or in memory", async () => {
    const keys = await newKeys(3);
    const failing = keys[1]?.pubkey;
    proxy.failWrites(
      (w) => w.operation === "PutItem" && w.pubkey === failing,
      "AccessDeniedException",
    );
    try {
      const { answer, late } = await writesAfterAnswer(() =>
        api("POST", "/api/v1/signer/keys", importBody(keys)),
      );
      expect(answer.status).toBe(200);
      const data = answer.body.data as { status: string; message: string }[];
      expect(data.map((d) => d.status)).toEqual(["error", "error", "error"]);
      for (const item of data) {
        expect(item.message).toStartWith(
          `not imported: writing ${failing} to the cloud_kv source failed`,
        );
        expect(item.message).toContain("AccessDeniedException");
      }
      expect(late).toBe(0);
      await nothingOf(keys);
    } finally {
      proxy.clear();
    }
    // The same request, once the store accepts writes, imports all three.
    const again = await api("POST", "/api/v1/signer/keys", importBody(keys));
    expect(again.body.data.map((d: { status: string }) => d.status)).toEqual([
      "imported",
      "imported",
      "imported",
    ]);
    for (const key of keys) expect(await itemStatus(key.pubkey)).toBe("active");
  });

  test("import: a commit (UpdateItem to active) fails → the committed items are removed too", async () => {
    const keys = await newKeys(3);
    const failing = keys[2]?.pubkey;
    proxy.failWrites((w) => w.operation === "UpdateItem" && w.pubkey === failing);
    try {
      const { answer, late } = await writesAfterAnswer(() =>
        api("POST", "/api/v1/signer/keys", importBody(keys)),
      );
      expect(answer.body.data.map((d: { status: string }) => d.status)).toEqual([
        "error",
        "error",
        "error",
      ]);
      expect(late).toBe(0);
      await nothingOf(keys);
    } finally {
      proxy.clear();
    }
  });

  test("undoing fails too: the key left is named, stays `sigil_writing`, and never loads (refresh, restart and unseal)", async () => {
    const keys = await newKeys(3);
    const [left, undone, failing] = keys.map((k) => k.pubkey);
    proxy.failWrites((w) => w.operation === "PutItem" && w.pubkey === failing);
    proxy.failWrites((w) => w.operation === "DeleteItem" && w.pubkey === left);
    try {
      const { answer, late } = await writesAfterAnswer(() =>
        api("POST", "/api/v1/signer/keys", importBody(keys)),
      );
      const data = answer.body.data as { status: string; message: string }[];
      expect(data.map((d) => d.status)).toEqual(["error", "error", "error"]);
      expect(data[0]?.message).toStartWith(
        "not imported, and left in the cloud_kv source (its removal failed: InternalServerError",
      );
      expect(data[1]?.message).toStartWith("not imported: ");
      for (const item of data) expect(item.message).toContain(`in the source, not loaded: ${left}`);
      expect(late).toBe(0);
    } finally {
      proxy.clear();
    }
    expect(await itemStatus(left as string)).toBe("sigil_writing");
    expect(await itemStatus(undone as string)).toBeUndefined();
    expect(await signs(left as string)).toBe(404);
    await reload();
    expect(await signs(left as string)).toBe(404);
    const inventory = await api("GET", "/api/v1/signer/keys");
    expect(
      (inventory.body.data as { pubkey: string; status: string; loaded: boolean }[]).find(
        (k) => k.pubkey === left,
      ),
    ).toMatchObject({ status: "sigil_writing", loaded: false });
    await signer.stop();
    await start();
    await kmsSeal.unseal(signer.url);
    expect(await signs(left as string)).toBe(404);
    // The operator deletes it by name.
    const removed = await api("DELETE", "/api/v1/signer/keys", { pubkeys: [left] });
    expect(removed.body.data).toEqual([{ status: "deleted" }]);
    expect(await itemStatus(left as string)).toBeUndefined();
  }, 60_000);

  test("undoing a committed item fails: named in the answer, and this signer's refreshes leave it out", async () => {
    const keys = await newKeys(3);
    const [left, failing] = [keys[0]?.pubkey as string, keys[2]?.pubkey as string];
    proxy.failWrites((w) => w.operation === "UpdateItem" && w.pubkey === failing);
    proxy.failWrites((w) => w.operation === "DeleteItem" && w.pubkey === left);
    try {
      const answer = await api("POST", "/api/v1/signer/keys", importBody(keys));
      expect(answer.body.data[0].message).toContain(`not loaded: ${left}`);
    } finally {
      proxy.clear();
    }
    expect(await itemStatus(left)).toBe("active");
    expect(await signs(left)).toBe(404);
    await reload();
    expect(await signs(left)).toBe(404);
    const health = await fetch(`${signer.url}/healthcheck`);
    const check = (
      (await health.json()) as { checks: { id: string; status: string }[] }
    ).checks.find((c) => c.id === "keys");
    expect(check?.status).toBe("DOWN");
    expect((await api("DELETE", "/api/v1/signer/keys", { pubkeys: [left] })).body.data).toEqual([
      { status: "deleted" },
    ]);
    await reload();
    expect(await itemStatus(left)).toBeUndefined();
  });

  test("a refresh that read the table before a delete and an import does not undo either", async () => {
    const [gone, added] = await newKeys(2);
    if (!gone || !added) throw new Error("no keys");
    await api("POST", "/api/v1/signer/keys", importBody([gone]));
    expect(await signs(gone.pubkey)).toBe(200);
    // The refresh's Scan reaches the table now; its answers (holding `gone`) are held back.
    const release = proxy.hold("Scan", "response");
    let refreshed: Promise<void> | undefined;
    try {
      refreshed = reload();
      await Bun.sleep(200);
      const deleted = await api("DELETE", "/eth/v1/keystores", { pubkeys: [gone.pubkey] });
      expect(deleted.body.data).toEqual([{ status: "deleted" }]);
      const imported = await api("POST", "/api/v1/signer/keys", importBody([added]));
      expect(imported.body.data).toEqual([{ status: "imported" }]);
    } finally {
      release();
    }
    await refreshed;
    expect(await signs(gone.pubkey)).toBe(404);
    expect(await signs(added.pubkey)).toBe(200);
    await reload();
    expect(await signs(gone.pubkey)).toBe(404);
    expect(await signs(added.pubkey)).toBe(200);
  });
});

describe("cloud_kv writer out of time", () => {
  const TABLE = "slow-keys";
  test("writes stop before the deadline: the batch is undone and answered before the listener's 503", async () => {
    const dynamo = await startDynamo();
    const kmsSeal = await startKmsSeal();
    let restore = () => {};
    let signer: InProcessSigner | undefined;
    let proxy: RunningDynamoProxy | undefined;
    try {
      await dynamo.createSlashingTable(TABLE);
      proxy = await startDynamoProxy(dynamo.endpoint, dynamo.processEnv);
      restore = setProcessEnv({ ...proxy.processEnv, ...kmsSeal.env });
      signer = await startInProcessSigner(dir, "faults-slow", {
        yaml: [
          "key_sources:",
          "  cloud_kv:",
          `    table: ${TABLE}`,
          "    key_refresh_interval_minutes: 0",
          // 5 s: writes may start for 4 s, the last second is kept for undoing them.
          "    writable: {enabled: true, max_concurrent_writes: 1, request_timeout_seconds: 5}",
          `antislashing: {backend: sqlite, path: "${join(dir.path, "slow.sqlite")}"}`,
          `signer_state: {backend: sqlite, path: "${join(dir.path, "slow-state.sqlite")}"}`,
        ],
      });
      const { management } = await kmsSeal.bootstrap(signer.url, signer.logs);
      const keys = await newKeys(3);
      const release = proxy.hold("PutItem");
      const started = Date.now();
      const answering = managementCall(signer.url, management, "POST", "/api/v1/signer/keys", {
        keystores: keys.map((k) => k.keystore),
        passwords: keys.map(() => PASSWORD),
      });
      await Bun.sleep(4300);
      release();
      const answer = await answering;
      const answeredAt = Date.now();
      expect(answeredAt - started).toBeLessThan(5000);
      expect(answer.status).toBe(200);
      for (const item of answer.body.data as { status: string; message: string }[]) {
        expect(item.status).toBe("error");
        expect(item.message).toContain("the request ran out of time before its keys were written");
      }
      await Bun.sleep(1000);
      expect(proxy.writes.filter((w) => w.at > answeredAt)).toEqual([]);
      // One PutItem was sent (and undone); the other two never left.
      expect(proxy.writes.filter((w) => w.operation === "PutItem")).toHaveLength(1);
      const { Items } = await dynamo.client().send(new ScanCommand({ TableName: TABLE }));
      expect(Items ?? []).toEqual([]);
    } finally {
      await signer?.stop();
      await proxy?.stop();
      restore();
      await kmsSeal.stop();
      await dynamo.stop();
    }
  }, 60_000);
});

describe("Key Manager files writer", () => {
  let signer: InProcessSigner;
  const keysDir = join(dir.path, "km-faults");
  beforeAll(async () => {
    mkdirSync(keysDir);
    signer = await startInProcessSigner(dir, "faults-files", {
      yaml: [
        `key_sources: {filesystem: {paths: ["${keysDir}"]}, key_manager_api: {enabled: true}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, "files.sqlite")}"}`,
      ],
    });
  });
  afterAll(() => signer?.stop());

  /** Imports, notes the directory at the answer, and checks it did not change after. */
  async function importAndSettle(keys: TestKeystore[]) {
    const answer = await importKeys(signer.url, {
      keystores: keys.map((k) => k.keystore),
      passwords: keys.map(() => PASSWORD),
    });
    const atAnswer = readdirSync(keysDir).sort();
    await Bun.sleep(300);
    expect(readdirSync(keysDir).sort()).toEqual(atAnswer);
    return { answer, files: atAnswer };
  }

  async function nothingLoaded(keys: TestKeystore[]) {
    expect((await listKeys(signer.url)).data).toEqual([]);
    for (const key of keys) expect(await signStatus(signer.url, key.pubkey)).toBe(404);
  }

  test("a read-only directory: every keystore answers error, nothing written, nothing loaded", async () => {
    const keys = await newKeys(2);
    const undo = makeReadOnly(keysDir);
    let result: Awaited<ReturnType<typeof importAndSettle>>;
    try {
      result = await importAndSettle(keys);
    } finally {
      undo();
    }
    expect(result.answer.status).toBe(200);
    for (const item of result.answer.body.data) {
      expect(item.status).toBe("error");
      expect(item.message).toStartWith(
        `not imported: writing ${keys[0]?.pubkey} to the filesystem source failed`,
      );
      expect(item.message).toMatch(/EPERM|EACCES|permission|not permitted/i);
    }
    expect(result.files).toEqual([]);
    await nothingLoaded(keys);
  });

  test("the 3rd key's password file cannot be written: the first two keys' files are removed", async () => {
    const keys = await newKeys(3);
    const blocker = join(keysDir, `${keys[2]?.pubkey}.password`);
    mkdirSync(join(blocker, "occupied"), { recursive: true });
    try {
      const { answer, files } = await importAndSettle(keys);
      expect(answer.body.data.map((d) => d.status)).toEqual(["error", "error", "error"]);
      expect(answer.body.data[0]?.message).toContain(
        `writing ${keys[2]?.pubkey} to the filesystem source failed`,
      );
      // The third key's keystore file was written before its password file failed: removed too.
      expect(answer.body.data[0]?.message).toContain(
        "3 keys this request had written were removed",
      );
      expect(files).toEqual([`${keys[2]?.pubkey}.password`]);
      await nothingLoaded(keys);
    } finally {
      rmSync(blocker, { recursive: true });
    }
  });

  test("the 2nd descriptor cannot be written: the 1st, already loadable, is removed with every file", async () => {
    const keys = await newKeys(3);
    const blocker = join(keysDir, `${keys[1]?.pubkey}.yaml`);
    mkdirSync(join(blocker, "occupied"), { recursive: true });
    try {
      const { answer, files } = await importAndSettle(keys);
      expect(answer.body.data.map((d) => d.status)).toEqual(["error", "error", "error"]);
      expect(files).toEqual([`${keys[1]?.pubkey}.yaml`]);
      await nothingLoaded(keys);
      // A reload reads the directory: still nothing.
      const reloaded = await fetch(`${signer.url}/reload`, { method: "POST" });
      expect(reloaded.status).toBe(202);
      await signer.signer.keysReloaded();
      await nothingLoaded(keys);
    } finally {
      rmSync(blocker, { recursive: true });
    }
    // Nothing was left behind: the same import now succeeds whole.
    const again = await importKeys(signer.url, {
      keystores: keys.map((k) => k.keystore),
      passwords: keys.map(() => PASSWORD),
    });
    expect(again.body.data.map((d) => d.status)).toEqual(["imported", "imported", "imported"]);
    expect(
      (
        await deleteKeys(
          signer.url,
          keys.map((k) => k.pubkey),
        )
      ).body.data,
    ).toHaveLength(3);
  });

  test("a descriptor that cannot be removed: delete answers error and the key keeps signing", async () => {
    const [key] = await newKeys(1);
    if (!key) throw new Error("no key");
    const imported = await importKeys(signer.url, {
      keystores: [key.keystore],
      passwords: [PASSWORD],
    });
    expect(imported.body.data).toEqual([{ status: "imported" }]);
    const undo = makeReadOnly(keysDir);
    let answer: Awaited<ReturnType<typeof deleteKeys>>;
    try {
      answer = await deleteKeys(signer.url, [key.pubkey]);
    } finally {
      undo();
    }
    expect(answer.body.data[0]?.status).toBe("error");
    expect(answer.body.data[0]?.message).toContain("the key stays loaded and signing");
    // Slashing data only for deleted and not_active keys.
    expect(JSON.parse(answer.body.slashing_protection).data).toEqual([]);
    expect(await signStatus(signer.url, key.pubkey)).toBe(200);
    expect(readdirSync(keysDir)).toContain(`${key.pubkey}.yaml`);
    expect((await deleteKeys(signer.url, [key.pubkey])).body.data).toEqual([{ status: "deleted" }]);
  });
});
