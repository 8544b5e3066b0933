// The cloud_kv key source inside a running signer process: keys in a DynamoDB-protocol table
// (dynalite), sealed under the master key, load at unseal, sign, and leave memory on seal.
import { afterAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createNobleBackend } from "../../src/bls/noble";
import { sealSecret } from "../../src/keys/cloud-kv/sealed-secret";
import { CloudKvTable } from "../../src/keys/cloud-kv/table";
import { combineShares } from "../../src/seal/shares";
import { bootstrapStateful, submitShare, sys, unwrapOwnShare } from "../support/ceremony";
import { runSigilAsync, startSigil, TempDir } from "../support/cli";
import { startDynamo } from "../support/dynamodb";
import { attestationRequest } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

test("cloud_kv keys load at unseal, sign, and are dropped on seal; a key that does not decrypt is skipped", async () => {
  const dynamo = await startDynamo();
  await dynamo.createSlashingTable("validators");
  const config = dir.file(
    "cloud-kv.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}",
      "logging: {format: json}",
      "key_sources: {cloud_kv: {table: validators, key_refresh_interval_minutes: 0}}",
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ].join("\n"),
  );
  const sigil = await startSigil(
    ["serve", "-c", config, "--init-slashing-protection"],
    dynamo.processEnv,
  );
  try {
    const { management, operator } = await bootstrapStateful(
      sigil.url,
      sigil.stderrText().split("\n"),
    );
    // The operators, together, can rebuild the master key: the test seeds the table with it.
    const share = new Uint8Array(Buffer.from(await unwrapOwnShare(sigil.url, operator), "base64"));
    const master = await combineShares([share]);
    const bls = createNobleBackend();
    const table = new CloudKvTable(dynamo.client(), "validators");
    const pubkeys: string[] = [];
    while (pubkeys.length < 20) {
      const secret = randomBytes(32);
      let pubkey: string;
      try {
        pubkey = `0x${Buffer.from(bls.importSecretKey(secret).publicKey).toString("hex")}`;
      } catch {
        continue;
      }
      const now = Date.now();
      const status = pubkeys.length === 0 ? "inactive" : "active";
      await table.putNew({
        pubkey,
        ciphertext: sealSecret(master, pubkey, secret),
        status,
        origin: "imported",
        createdAt: now,
        updatedAt: now,
      });
      pubkeys.push(pubkey);
    }
    const undecryptable = `0x${"ab".repeat(48)}`;
    await table.putNew({
      pubkey: undecryptable,
      ciphertext: sealSecret(randomBytes(32), undecryptable, randomBytes(32)),
      status: "active",
      origin: "imported",
      createdAt: 1,
      updatedAt: 1,
    });

    // Seal and unseal: the load happens at unseal.
    expect((await sys(sigil.url, "POST", "seal", {}, management)).status).toBe(200);
    expect((await submitShare(sigil.url, "unseal", operator)).body.complete).toBe(true);
    const headers = { authorization: `Bearer ${management}`, "content-type": "application/json" };
    const status = (await (
      await fetch(`${sigil.url}/api/v1/signer/status`, { headers })
    ).json()) as { keys: Record<string, number> };
    expect(status.keys.cloud_kv).toBe(19);
    const listed = (await (
      await fetch(`${sigil.url}/api/v1/eth2/publicKeys`, { headers })
    ).json()) as string[];
    expect(listed.sort()).toEqual(pubkeys.slice(1).sort());
    expect(sigil.stderrText()).toContain(undecryptable);

    const key = pubkeys[5] as string;
    const { body: request, message } = attestationRequest(1, 2, 3);
    const signed = await fetch(`${sigil.url}/api/v1/eth2/sign/${key}`, {
      method: "POST",
      headers: { ...headers, accept: "application/json" },
      body: JSON.stringify(request),
    });
    expect(signed.status).toBe(200);
    // Checked against the signing root from the Lodestar oracle, with the key's pubkey.
    const { signature } = (await signed.json()) as { signature: string };
    const hex = (h: string) => new Uint8Array(Buffer.from(h.slice(2), "hex"));
    expect(bls.verify(hex(key), hex(message.signingRoot), hex(signature))).toBe(true);

    // keygen and writable are off: their routes do not exist; the inventory does, so its path
    // answers the other methods 405 with `Allow: GET`.
    const route = (method: string, path: string) =>
      fetch(`${sigil.url}${path}`, { method, headers, body: method === "GET" ? undefined : "{}" });
    expect((await route("POST", "/api/v1/signer/keys/generate")).status).toBe(404);
    for (const method of ["POST", "DELETE"]) {
      const refused = await route(method, "/api/v1/signer/keys");
      expect(refused.status).toBe(405);
      expect(refused.headers.get("allow")).toBe("GET");
    }
    const inventory = (await (await route("GET", "/api/v1/signer/keys")).json()) as {
      data: { status: string; loaded: boolean }[];
    };
    expect(inventory.data.filter((k) => k.loaded)).toHaveLength(19);
    expect(inventory.data.filter((k) => k.status === "inactive" && !k.loaded)).toHaveLength(1);

    // Seal: the cloud_kv keys leave memory with the master key.
    expect((await sys(sigil.url, "POST", "seal", {}, management)).status).toBe(200);
    expect(sigil.stderrText()).toContain("cloud_kv keys dropped from memory");
    expect((await submitShare(sigil.url, "unseal", operator)).body.complete).toBe(true);
    const again = (await (
      await fetch(`${sigil.url}/api/v1/signer/status`, { headers })
    ).json()) as { keys: Record<string, number> };
    expect(again.keys.cloud_kv).toBe(19);
  } finally {
    await sigil.stop();
    await dynamo.stop();
  }
}, 120_000);

test("a missing cloud_kv table stops start-up with a one-line reason", async () => {
  const dynamo = await startDynamo();
  try {
    const config = dir.file(
      "missing-table.yaml",
      [
        "server: {listen_address: 127.0.0.1, listen_port: 0}",
        "key_sources: {cloud_kv: {table: not-there}}",
        `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing-2.sqlite")}"}`,
        `signer_state: {backend: sqlite, path: "${join(dir.path, "state-2.sqlite")}"}`,
      ].join("\n"),
    );
    const result = await runSigilAsync(
      ["serve", "-c", config, "--init-slashing-protection"],
      dynamo.processEnv,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('cannot start: cloud_kv table "not-there" does not exist');
  } finally {
    await dynamo.stop();
  }
}, 60_000);
