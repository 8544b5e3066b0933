// Key generation, import/delete and the inventory of the cloud_kv source, over HTTP against a
// signer process and a DynamoDB-protocol server. Generated keys are checked against an
// independent EIP-2333 implementation (@chainsafe/bls-keygen) from the decrypted age backup.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { deriveKeyFromMnemonic } from "@chainsafe/bls-keygen";
import { SecretKey } from "@chainsafe/blst";
import { armor, Decrypter } from "age-encryption";
import { ageKeys, bootstrapStateful, managementCall, submitShare, sys } from "../support/ceremony";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { interopKeystore } from "../support/keystores";
import { registerTestSecret } from "../support/log-capture";
import { attestationRequest } from "../support/slashing";

const dir = new TempDir();
const PASSWORD = "cloud-kv-import-password";
let dynamo: RunningDynamo;
let sigil: RunningSigil;
let management = "";
let operator: Awaited<ReturnType<typeof bootstrapStateful>>["operator"];
let backupIdentity = "";

beforeAll(async () => {
  dynamo = await startDynamo();
  await dynamo.createSlashingTable("validators");
  const [backup] = await ageKeys(1);
  backupIdentity = backup?.identity ?? "";
  const config = dir.file(
    "cloud-kv-api.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}",
      "logging: {format: json}",
      "key_sources:",
      "  cloud_kv:",
      "    table: validators",
      "    key_refresh_interval_minutes: 0",
      `    keygen: {enabled: true, max_items_per_request: 10, backup: {enabled: true, recipients: ["${backup?.recipient}"]}}`,
      "    writable: {enabled: true, max_items_per_request: 3}",
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ].join("\n"),
  );
  sigil = await startSigil(
    ["serve", "-c", config, "--init-slashing-protection"],
    dynamo.processEnv,
  );
  ({ management, operator } = await bootstrapStateful(sigil.url, sigil.stderrText().split("\n")));
});
afterAll(async () => {
  await sigil?.stop();
  await dynamo?.stop();
  dir.remove();
});

const api = (method: string, path: string, body?: unknown) =>
  managementCall(sigil.url, management, method, path, body);

const signAttestation = (pubkey: string, source: number, target: number, salt: number) =>
  api("POST", `/api/v1/eth2/sign/${pubkey}`, attestationRequest(source, target, salt).body);

async function inventory(limit: number) {
  const all: { pubkey: string; source: string; status: string; loaded: boolean }[] = [];
  let after = "";
  for (;;) {
    const page = await api(
      "GET",
      `/api/v1/signer/keys?limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ""}`,
    );
    expect(page.status).toBe(200);
    expect(page.body.data.length).toBeLessThanOrEqual(limit);
    all.push(...page.body.data);
    if (!page.body.next) return all;
    after = page.body.next;
  }
}

const makeKeystore = (index: number) => interopKeystore(index, PASSWORD);

test("keygen: the age backup decrypts to a mnemonic that re-derives exactly the generated keys; they sign", async () => {
  const generated = await api("POST", "/api/v1/signer/keys/generate", { count: 4 });
  expect(generated.status).toBe(200);
  const keys = generated.body.data as { pubkey: string; derivation_path: string }[];
  expect(keys.map((k) => k.derivation_path)).toEqual(
    [0, 1, 2, 3].map((i) => `m/12381/3600/${i}/0/0`),
  );
  const backup = String(generated.body.mnemonic_backup);
  expect(backup).toStartWith("-----BEGIN AGE ENCRYPTED FILE-----");
  const decrypter = new Decrypter();
  decrypter.addIdentity(backupIdentity);
  const mnemonic = registerTestSecret(
    await decrypter.decrypt(armor.decode(backup), "text"),
    "generated mnemonic",
  );
  expect(mnemonic.split(" ")).toHaveLength(24);
  const oracle = keys.map((k) => {
    const secret = deriveKeyFromMnemonic(mnemonic, k.derivation_path);
    return `0x${Buffer.from(SecretKey.fromBytes(secret).toPublicKey().toBytes()).toString("hex")}`;
  });
  expect(keys.map((k) => k.pubkey)).toEqual(oracle);
  expect(sigil.stderrText()).not.toContain(mnemonic);
  expect((await signAttestation(keys[2]?.pubkey ?? "", 1, 2, 1)).status).toBe(200);
});

test("keygen refuses a bad count and a sealed signer, and changes nothing", async () => {
  const before = (await inventory(100)).length;
  for (const count of [0, 11, "3", 1.5]) {
    const refused = await api("POST", "/api/v1/signer/keys/generate", { count });
    expect(refused.status, JSON.stringify(count)).toBe(400);
    expect(refused.body.message).toContain("count: must be an integer from 1 to");
  }
  expect((await sys(sigil.url, "POST", "seal", {}, management)).status).toBe(200);
  expect((await api("POST", "/api/v1/signer/keys/generate", { count: 1 })).status).toBe(503);
  expect((await submitShare(sigil.url, "unseal", operator)).body.complete).toBe(true);
  expect((await inventory(100)).length).toBe(before);
});

test("import/delete round trip keeps the slashing history; bad inputs are clear and change nothing", async () => {
  const [a, b] = await Promise.all([makeKeystore(30), makeKeystore(31)]);
  if (!a || !b) throw new Error("no keystores");
  const imported = await api("POST", "/api/v1/signer/keys", {
    keystores: [a.keystore, b.keystore, a.keystore.replace(a.pubkey.slice(2), b.pubkey.slice(2))],
    passwords: [PASSWORD, "wrong-password", PASSWORD],
  });
  expect(imported.status).toBe(200);
  expect(imported.body.data.map((d: { status: string }) => d.status)).toEqual([
    "imported",
    "error",
    "duplicate",
  ]);
  expect(imported.body.data[1].message).toMatch(/password|checksum/i);
  expect(
    (await api("POST", "/api/v1/signer/keys", { keystores: [a.keystore], passwords: [PASSWORD] }))
      .body.data,
  ).toEqual([{ status: "duplicate" }]);
  const tooMany = await api("POST", "/api/v1/signer/keys", {
    keystores: Array(4).fill(b.keystore),
    passwords: Array(4).fill(PASSWORD),
  });
  expect(tooMany.status).toBe(400);
  expect(tooMany.body.message).toContain("writable.max_items_per_request (3)");
  expect((await inventory(100)).some((k) => k.pubkey === b.pubkey)).toBe(false);

  expect((await signAttestation(a.pubkey, 10, 20, 1)).status).toBe(200);
  const deleted = await api("DELETE", "/api/v1/signer/keys", { pubkeys: [a.pubkey] });
  expect(deleted.body.data).toEqual([{ status: "deleted" }]);
  const history = JSON.parse(deleted.body.slashing_protection) as {
    data: { pubkey: string; signed_attestations: unknown[] }[];
  };
  expect(history.data.find((v) => v.pubkey === a.pubkey)?.signed_attestations).toHaveLength(1);
  expect((await signAttestation(a.pubkey, 11, 21, 2)).status).toBe(404);
  expect((await api("DELETE", "/api/v1/signer/keys", { pubkeys: [a.pubkey] })).body.data).toEqual([
    { status: "not_active" },
  ]);

  const back = await api("POST", "/api/v1/signer/keys", {
    keystores: [a.keystore],
    passwords: [PASSWORD],
    slashing_protection: deleted.body.slashing_protection,
  });
  expect(back.body.data).toEqual([{ status: "imported" }]);
  expect((await signAttestation(a.pubkey, 10, 20, 99)).status).toBe(412);
  expect((await signAttestation(a.pubkey, 20, 21, 3)).status).toBe(200);
});

test("inventory: every key with source, status and loaded flag, in stable pages", async () => {
  const all = await inventory(2);
  const one = await inventory(1000);
  expect(all).toEqual(one);
  expect(all.length).toBe(5);
  expect(new Set(all.map((k) => `${k.pubkey}:${k.source}`)).size).toBe(5);
  for (const entry of all)
    expect(entry).toMatchObject({ source: "cloud_kv", status: "active", loaded: true });
  const bad = await api("GET", "/api/v1/signer/keys?limit=0");
  expect(bad.status).toBe(400);
});

test("a key-scoped token cannot import another key's history (issue 37): 403, nothing changed, that key still signs", async () => {
  const [victim, own] = await Promise.all([makeKeystore(40), makeKeystore(42)]);
  if (!victim || !own) throw new Error("no keystores");
  const loaded = await api("POST", "/api/v1/signer/keys", {
    keystores: [victim.keystore, own.keystore],
    passwords: [PASSWORD, PASSWORD],
  });
  expect(loaded.body.data).toEqual([{ status: "imported" }, { status: "imported" }]);
  const policy = {
    name: "own-key-writer",
    rules: [
      {
        effect: "allow",
        scopes: ["signer_keys_write", "signer_keys_list", "sign"],
        keys: [own.pubkey],
      },
    ],
  };
  expect((await api("POST", "/api/v1/signer/auth/policies", policy)).status).toBe(201);
  const created = await api("POST", "/api/v1/signer/auth/tokens", {
    policies: ["own-key-writer"],
    ttl_seconds: 3600,
  });
  expect(created.status).toBe(201);
  const token = registerTestSecret(String(created.body.token), "key-scoped token");
  const max = ((1n << 64n) - 1n).toString();
  const history = (pubkey: string) =>
    JSON.stringify({
      metadata: {
        interchange_format_version: "5",
        genesis_validators_root: attestationRequest(1, 2, 3).body.fork_info.genesis_validators_root,
      },
      data: [
        {
          pubkey,
          signed_blocks: [{ slot: max }],
          signed_attestations: [{ source_epoch: "0", target_epoch: max }],
        },
      ],
    });
  const attack = await managementCall(sigil.url, token, "POST", "/api/v1/signer/keys", {
    keystores: [],
    passwords: [],
    slashing_protection: history(victim.pubkey),
  });
  expect(attack.status).toBe(403);
  expect(attack.body.code).toBe("forbidden");
  expect(attack.body.message).toContain(
    `records of key ${victim.pubkey}, which this token may not import`,
  );
  expect((await signAttestation(victim.pubkey, 60, 61, 1)).status).toBe(200);
  expect((await signAttestation(victim.pubkey, 61, 62, 2)).status).toBe(200);
  // Its own key's far-future history is refused as signing it would be.
  const future = await managementCall(sigil.url, token, "POST", "/api/v1/signer/keys", {
    keystores: [own.keystore],
    passwords: [PASSWORD],
    slashing_protection: history(own.pubkey),
  });
  expect(future.status).toBe(400);
  expect(future.body.message).toContain("antislashing.max_future_epochs");
  expect((await signAttestation(own.pubkey, 60, 61, 3)).status).toBe(200);
});
