// Two signer processes on one cloud_kv table and one signer_state: each sees the other's writes,
// and a deactivated key leaves both, at their next refresh (key_refresh_interval_minutes: 1).
import { afterAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { create, defaultPbkdfModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { sealSecret } from "../../src/keys/cloud-kv/sealed-secret";
import { CloudKvTable } from "../../src/keys/cloud-kv/table";
import { combineShares } from "../../src/seal/shares";
import {
  bootstrapStateful,
  managementCall,
  submitShare,
  unwrapOwnShare,
} from "../support/ceremony";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { startDynamo } from "../support/dynamodb";
import { interopSecret } from "../support/interop";
import { registerTestSecret } from "../support/log-capture";

const dir = new TempDir();
afterAll(() => dir.remove());
const REFRESH_WAIT_MS = 75_000;

test("two instances see each other's imports and generated keys, and drop a deactivated key, after refresh", async () => {
  const dynamo = await startDynamo();
  await dynamo.createSlashingTable("shared");
  const config = dir.file(
    "instance.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}",
      "logging: {format: json}",
      "key_sources:",
      "  cloud_kv:",
      "    table: shared",
      "    key_refresh_interval_minutes: 1",
      "    keygen: {enabled: true}",
      "    writable: {enabled: true}",
      // A sqlite slashing database has one writer: each instance gets its own (b's below).
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ].join("\n"),
  );
  const env = dynamo.processEnv;
  const instances: RunningSigil[] = [];
  try {
    const a = await startSigil(["serve", "-c", config, "--init-slashing-protection"], env);
    instances.push(a);
    const { management, operator } = await bootstrapStateful(a.url, a.stderrText().split("\n"));
    const b = await startSigil(["serve", "-c", config, "--init-slashing-protection"], {
      ...env,
      SIGNER_ANTISLASHING__PATH: join(dir.path, "slashing-b.sqlite"),
    });
    instances.push(b);

    // A key both instances load at unseal, to be deactivated later.
    const master = registerTestSecret(
      await combineShares([
        new Uint8Array(Buffer.from(await unwrapOwnShare(a.url, operator), "base64")),
      ]),
      "cloud_kv master key",
    );
    const table = new CloudKvTable(dynamo.client(), "shared");
    const secret = interopSecret(40);
    const shared = `0x${Buffer.from(SecretKey.fromBytes(secret).toPublicKey().toBytes()).toString("hex")}`;
    await table.putNew({
      pubkey: shared,
      ciphertext: sealSecret(master, shared, secret),
      status: "active",
      origin: "imported",
      createdAt: 1,
      updatedAt: 1,
    });
    const sealed = await fetch(`${a.url}/api/v1/signer/sys/seal`, {
      method: "POST",
      headers: { authorization: `Bearer ${management}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(sealed.status).toBe(200);
    for (const instance of [a, b])
      expect((await submitShare(instance.url, "unseal", operator)).body.complete).toBe(true);

    const call = async (instance: RunningSigil, method: string, path: string, body?: unknown) =>
      (await managementCall(instance.url, management, method, path, body)).body as Record<
        string,
        unknown
      > &
        string[];
    const publicKeys = async (instance: RunningSigil) =>
      (await call(instance, "GET", "/api/v1/eth2/publicKeys")) as string[];
    expect(await publicKeys(a)).toEqual([shared]);
    expect(await publicKeys(b)).toEqual([shared]);

    // A imports a keystore; B generates a key; the shared key is deactivated in the table.
    const importedSecret = randomBytes(32);
    importedSecret[0] = 0x10;
    const importedPub = SecretKey.fromBytes(importedSecret).toPublicKey().toBytes();
    const keystore = await create(
      "two-instances",
      importedSecret,
      importedPub,
      "m/12381/3600/0/0/0",
      "",
      {
        ...defaultPbkdfModule(),
        params: { ...defaultPbkdfModule().params, c: 1024 },
      },
    );
    const imported = `0x${Buffer.from(importedPub).toString("hex")}`;
    expect(
      (
        await call(a, "POST", "/api/v1/signer/keys", {
          keystores: [JSON.stringify(keystore)],
          passwords: ["two-instances"],
        })
      ).data,
    ).toEqual([{ status: "imported" }]);
    const generated =
      (
        (await call(b, "POST", "/api/v1/signer/keys/generate", { count: 1 })).data as {
          pubkey: string;
        }[]
      )[0]?.pubkey ?? "";
    expect(await table.setStatus(shared, "active", "inactive", Date.now())).toBe(true);
    expect((await publicKeys(a)).sort()).toEqual([imported, shared].sort());
    expect((await publicKeys(b)).sort()).toEqual([generated, shared].sort());

    // Each instance refreshes a minute after its start: polled, not slept through, so the test
    // waits only as long as the refresh takes.
    const expected = [imported, generated].sort();
    const deadline = Date.now() + REFRESH_WAIT_MS;
    const lists = async () => [(await publicKeys(a)).sort(), (await publicKeys(b)).sort()];
    let seen = await lists();
    while (Date.now() < deadline && !Bun.deepEquals(seen, [expected, expected])) {
      await Bun.sleep(500);
      seen = await lists();
    }
    expect(seen).toEqual([expected, expected]);
    expect(a.stderrText()).toContain("cloud_kv keys refreshed");
  } finally {
    for (const instance of instances) await instance.stop();
    await dynamo.stop();
  }
}, 180_000);
