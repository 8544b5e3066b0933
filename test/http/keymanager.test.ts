import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultScryptModule } from "@chainsafe/bls-keystore";
import { type RunningSigner, startSigner } from "../../src/app/signer";
import { loadConfig } from "../../src/config/load";
import { TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { deleteKeys, importKeys, jsonInit, listKeys } from "../support/keymanager";
import { interopKeystore, type KdfModule, type TestKeystore } from "../support/keystores";
import { testLogger } from "../support/log-capture";
import { expectValidRequest, expectValidResponse, loadOpenApi } from "../support/openapi";
import { attestationRequest } from "../support/slashing";

const dir = new TempDir();
const PASSWORD = "key-manager-test-password";
type TestKey = TestKeystore;
const makeKey = (index: number, kdf?: KdfModule) => interopKeystore(index, PASSWORD, kdf);

let keys: TestKey[] = [];
let scryptKeys: TestKey[] = [];
beforeAll(async () => {
  keys = await Promise.all([10, 11, 12, 13].map((i) => makeKey(i)));
  scryptKeys = await Promise.all([20, 21].map((i) => makeKey(i, defaultScryptModule())));
});
afterAll(() => dir.remove());

const quiet = testLogger("off");

async function signer(
  name: string,
  extra = "",
): Promise<{ signer: RunningSigner; url: string; keysDir: string }> {
  const keysDir = join(dir.path, `${name}-keys`);
  mkdirSync(keysDir, { recursive: true });
  const file = dir.file(
    `${name}.yaml`,
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}\nmetrics: {listen_address: 127.0.0.1, listen_port: 0}",
      `key_sources: {filesystem: {paths: ["${keysDir}"]}, key_manager_api: {enabled: true, max_items_per_request: 3}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}`,
      extra,
    ].join("\n"),
  );
  const loaded = loadConfig({ argv: ["-c", file], env: {} });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  const running = await startSigner(loaded.config, quiet, process.env, {
    initSlashingProtection: true,
  });
  return { signer: running, url: running.http.url, keysDir };
}

function signAttestation(
  url: string,
  pubkey: string,
  source: number,
  target: number,
  salt: number,
) {
  return fetch(
    `${url}/api/v1/eth2/sign/${pubkey}`,
    jsonInit("POST", attestationRequest(source, target, salt).body),
  );
}

describe("Key Manager API", () => {
  test("import → sign → delete → signing refused → re-import with the history → slashable still refused", async () => {
    const a = await signer("flow-a");
    const key = keys[0] as TestKey;
    try {
      const imported = await importKeys(a.url, {
        keystores: [key.keystore],
        passwords: [PASSWORD],
      });
      expect(imported.status).toBe(200);
      expect(imported.body.data).toEqual([{ status: "imported" }]);
      expect((await signAttestation(a.url, key.pubkey, 10, 20, 1)).status).toBe(200);

      const deleted = await deleteKeys(a.url, [key.pubkey]);
      expect(deleted.status).toBe(200);
      expect(deleted.body.data).toEqual([{ status: "deleted" }]);
      const history = JSON.parse(deleted.body.slashing_protection) as {
        data: {
          pubkey: string;
          signed_attestations: { source_epoch: string; target_epoch: string }[];
        }[];
      };
      const record = history.data.find((v) => v.pubkey === key.pubkey);
      expect(
        record?.signed_attestations.map((x) => [
          Number(x.source_epoch) % 1000,
          Number(x.target_epoch) % 1000,
        ]),
      ).toEqual([[10, 20]]);
      expect((await signAttestation(a.url, key.pubkey, 11, 21, 2)).status).toBe(404);
      // Deleting again: the key is gone but its history remains.
      expect((await deleteKeys(a.url, [key.pubkey])).body.data).toEqual([{ status: "not_active" }]);

      // A fresh signer with an empty database receives the key together with its history.
      const b = await signer("flow-b");
      try {
        const moved = await importKeys(b.url, {
          keystores: [key.keystore],
          passwords: [PASSWORD],
          slashing_protection: deleted.body.slashing_protection,
        });
        expect(moved.body.data).toEqual([{ status: "imported" }]);
        const doubleVote = await signAttestation(b.url, key.pubkey, 10, 20, 99);
        expect(doubleVote.status).toBe(412);
        const surround = await signAttestation(b.url, key.pubkey, 9, 21, 100);
        expect(surround.status).toBe(412);
        expect((await signAttestation(b.url, key.pubkey, 20, 21, 101)).status).toBe(200);
      } finally {
        await b.signer.stop();
      }

      // Re-importing into the same signer: its own database kept the history.
      expect(
        (await importKeys(a.url, { keystores: [key.keystore], passwords: [PASSWORD] })).body.data,
      ).toEqual([{ status: "imported" }]);
      expect((await signAttestation(a.url, key.pubkey, 10, 20, 55)).status).toBe(412);
    } finally {
      await a.signer.stop();
    }
  });

  test("imports are written to disk (password file 0600) and load again after a restart", async () => {
    const first = await signer("restart");
    const key = keys[1] as TestKey;
    await importKeys(first.url, { keystores: [key.keystore], passwords: [PASSWORD] });
    await first.signer.stop();
    const files = readdirSync(first.keysDir).sort();
    expect(files).toEqual([`${key.pubkey}.json`, `${key.pubkey}.password`, `${key.pubkey}.yaml`]);
    expect(statSync(join(first.keysDir, `${key.pubkey}.password`)).mode & 0o777).toBe(0o600);

    const second = await signer("restart");
    try {
      expect((await listKeys(second.url)).data).toEqual([
        { validating_pubkey: key.pubkey, readonly: false },
      ]);
      expect((await signAttestation(second.url, key.pubkey, 1, 2, 3)).status).toBe(200);
      expect((await deleteKeys(second.url, [key.pubkey])).body.data).toEqual([
        { status: "deleted" },
      ]);
      expect(readdirSync(second.keysDir)).toEqual([]);
    } finally {
      await second.signer.stop();
    }
  });

  test("a key in the managed directory under another file name is read-only: deleting it could not stop it loading", async () => {
    const first = await signer("foreign");
    await first.signer.stop();
    const hex = Buffer.from(interopSecret(30)).toString("hex");
    writeFileSync(
      join(first.keysDir, "validator1.yaml"),
      `type: file-raw\nprivateKey: "0x${hex}"\n`,
    );
    const s = await signer("foreign");
    try {
      const listed = await listKeys(s.url);
      expect(listed.data).toHaveLength(1);
      expect(listed.data[0]?.readonly).toBe(true);
      const result = await deleteKeys(s.url, [listed.data[0]?.validating_pubkey ?? ""]);
      expect(result.body.data[0]?.status).toBe("error");
      expect(result.body.data[0]?.message).toContain("read-only");
      expect(readdirSync(s.keysDir)).toEqual(["validator1.yaml"]);
    } finally {
      await s.signer.stop();
    }
  });

  test("per-item errors: malformed keystore, wrong password, mismatched pubkey, duplicate", async () => {
    const s = await signer("items");
    try {
      const [good, other] = [keys[2] as TestKey, keys[3] as TestKey];
      const mismatched = JSON.stringify({
        ...JSON.parse(good.keystore),
        pubkey: other.pubkey.slice(2),
      });
      const result = await importKeys(s.url, {
        keystores: ["{not json", good.keystore, mismatched],
        passwords: [PASSWORD, "wrong-password", PASSWORD],
      });
      expect(result.status).toBe(200);
      expect(result.body.data.map((d) => d.status)).toEqual(["error", "error", "error"]);
      expect(result.body.data[0]?.message).toContain("not valid JSON");
      expect(result.body.data[1]?.message).toMatch(/password|checksum/i);
      expect(result.body.data[2]?.message).toMatch(/pubkey/i);
      expect(readdirSync(s.keysDir)).toEqual([]);
      expect((await listKeys(s.url)).data).toEqual([]);

      await importKeys(s.url, { keystores: [good.keystore], passwords: [PASSWORD] });
      const again = await importKeys(s.url, {
        keystores: [good.keystore, good.keystore],
        passwords: [PASSWORD, PASSWORD],
      });
      expect(again.body.data.map((d) => d.status)).toEqual(["duplicate", "duplicate"]);
    } finally {
      await s.signer.stop();
    }
  });

  test("whole-request errors are 400 and change nothing: too many items, mismatched arrays, invalid interchange", async () => {
    const s = await signer("whole");
    try {
      const four = keys.map((k) => k.keystore);
      const tooMany = await importKeys(s.url, {
        keystores: four,
        passwords: four.map(() => PASSWORD),
      });
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.code).toBe("invalid_request");
      expect(tooMany.body.message).toStartWith(
        "keystores: must be a list of keystore JSON strings",
      );
      expect(tooMany.body.message).toContain("key_manager_api.max_items_per_request (");
      const mismatch = await importKeys(s.url, { keystores: [four[0]], passwords: [] });
      expect(mismatch.status).toBe(400);
      expect(mismatch.body.message).toBe(
        "passwords: must hold one password per keystore (1), not 0",
      );
      // Another chain's history: refused whole, no key imported.
      const wrongChain = JSON.stringify({
        metadata: {
          interchange_format_version: "5",
          genesis_validators_root: `0x${"77".repeat(32)}`,
        },
        data: [],
      });
      await importKeys(s.url, { keystores: [keys[1]?.keystore], passwords: [PASSWORD] });
      // Signing stores this chain's genesis validators root in the database.
      await signAttestation(s.url, keys[1]?.pubkey ?? "", 1, 2, 3);
      const refused = await importKeys(s.url, {
        keystores: [keys[2]?.keystore],
        passwords: [PASSWORD],
        slashing_protection: wrongChain,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toContain("slashing_protection");
      const malformed = await importKeys(s.url, {
        keystores: [keys[2]?.keystore],
        passwords: [PASSWORD],
        slashing_protection: "{",
      });
      expect(malformed.status).toBe(400);
      expect((await listKeys(s.url)).data.map((k) => k.validating_pubkey)).toEqual([
        keys[1]?.pubkey ?? "",
      ]);
      expect(readdirSync(s.keysDir).filter((f) => f.includes(keys[2]?.pubkey ?? "-"))).toEqual([]);
      const badDelete = await fetch(
        `${s.url}/eth/v1/keystores`,
        jsonInit("DELETE", { pubkeys: ["0x1234"] }),
      );
      expect(badDelete.status).toBe(400);
      expect(((await badDelete.json()) as { message: string }).message).toBe(
        'pubkeys[0]: invalid public key "0x1234": expected 0x followed by 96 hex characters',
      );
    } finally {
      await s.signer.stop();
    }
  });

  test("keys outside the Key Manager's directory are read-only; unknown keys are not_found", async () => {
    const managedDir = join(dir.path, "readonly-keys");
    mkdirSync(managedDir);
    const file = dir.file(
      "readonly2.yaml",
      [
        "server: {listen_address: 127.0.0.1, listen_port: 0}\nmetrics: {listen_address: 127.0.0.1, listen_port: 0}",
        `key_sources: {filesystem: {paths: ["${managedDir}", "examples/keys"]}, key_manager_api: {enabled: true}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, "readonly.sqlite")}"}`,
      ].join("\n"),
    );
    const loaded = loadConfig({ argv: ["-c", file], env: {} });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const running = await startSigner(loaded.config, quiet, process.env, {
      initSlashingProtection: true,
    });
    try {
      const listed = await listKeys(running.http.url);
      expect(listed.data).toHaveLength(4);
      expect(listed.data.every((k) => k.readonly)).toBe(true);
      const example = listed.data[0]?.validating_pubkey ?? "";
      const result = await deleteKeys(running.http.url, [example, `0x${"ab".repeat(48)}`]);
      expect(result.body.data[0]?.status).toBe("error");
      expect(result.body.data[0]?.message).toContain("read-only");
      expect(result.body.data[1]).toEqual({ status: "not_found" });
      expect((await listKeys(running.http.url)).data).toHaveLength(4);
    } finally {
      await running.stop();
    }
  });

  test("the server keeps answering /upcheck while scrypt keystores decrypt", async () => {
    const s = await signer("busy");
    try {
      let done = false;
      const importing = importKeys(s.url, {
        keystores: scryptKeys.map((k) => k.keystore),
        passwords: scryptKeys.map(() => PASSWORD),
      }).finally(() => {
        done = true;
      });
      let answeredDuringImport = 0;
      while (!done) {
        const response = await fetch(`${s.url}/upcheck`);
        if (response.status === 200 && !done) answeredDuringImport++;
        await Bun.sleep(20);
      }
      expect((await importing).body.data.map((d) => d.status)).toEqual(["imported", "imported"]);
      expect(answeredDuringImport).toBeGreaterThan(5);
    } finally {
      await s.signer.stop();
    }
  });

  test("requests and responses match the Key Manager API's OpenAPI schemas", async () => {
    const spec = loadOpenApi("test/vectors/keymanager-api-spec/keymanager-oapi.yaml");
    const path = "/eth/v1/keystores";
    const s = await signer("openapi");
    try {
      const exchange = async (method: "get" | "post" | "delete", body?: unknown) => {
        if (body !== undefined) expect(expectValidRequest(spec, method, path, body)).toEqual([]);
        const response = await fetch(`${s.url}${path}`, jsonInit(method.toUpperCase(), body));
        const responseBody = await response.json();
        expect(expectValidResponse(spec, method, path, response.status, responseBody)).toEqual([]);
        return response.status;
      };
      const key = keys[0] as TestKey;
      expect(await exchange("get")).toBe(200);
      expect(
        await exchange("post", { keystores: [key.keystore, "{"], passwords: [PASSWORD, PASSWORD] }),
      ).toBe(200);
      expect(await exchange("get")).toBe(200);
      await signAttestation(s.url, key.pubkey, 3, 4, 5);
      expect(await exchange("delete", { pubkeys: [key.pubkey, `0x${"cd".repeat(48)}`] })).toBe(200);
      expect(
        await exchange("post", {
          keystores: ["a", "b", "c", "d"],
          passwords: ["a", "b", "c", "d"],
        }),
      ).toBe(400);
      expect(
        await exchange("delete", { pubkeys: [key.pubkey, key.pubkey, key.pubkey, key.pubkey] }),
      ).toBe(400);
    } finally {
      await s.signer.stop();
    }
  });

  test("the routes are absent (404) when the API is disabled", async () => {
    const file = dir.file(
      "disabled.yaml",
      `server: {listen_address: 127.0.0.1, listen_port: 0}\nmetrics: {listen_address: 127.0.0.1, listen_port: 0}\nantislashing: {backend: sqlite, path: "${join(dir.path, "disabled.sqlite")}"}\n`,
    );
    const loaded = loadConfig({ argv: ["-c", file], env: {} });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const running = await startSigner(loaded.config, quiet, process.env, {
      initSlashingProtection: true,
    });
    try {
      for (const method of ["GET", "POST", "DELETE"]) {
        const response = await fetch(
          `${running.http.url}/eth/v1/keystores`,
          jsonInit(method, method === "GET" ? undefined : {}),
        );
        expect(response.status).toBe(404);
        expect(((await response.json()) as { code: string }).code).toBe("not_found");
      }
    } finally {
      await running.stop();
    }
  });
});
