// Reloading the filesystem keys without a restart: POST /reload (Web3Signer's route: answered at
// once, reloaded in the background) against a signer in this process, and SIGHUP against a
// signer process. Added descriptors load, removed ones stop signing, changed ones are replaced;
// keys imported through the Key Manager API stay.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { importKeys, jsonInit, listKeys } from "../support/keymanager";
import { interopKeystore } from "../support/keystores";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());
const PASSWORD = "reload-password";

let epoch = 10;
async function signs(url: string, pubkey: string): Promise<number> {
  epoch += 2;
  return (
    await fetch(
      `${url}/api/v1/eth2/sign/${pubkey}`,
      jsonInit("POST", attestationRequest(epoch, epoch + 1, epoch).body),
    )
  ).status;
}

const rawDescriptor = (index: number) =>
  `type: file-raw\nprivateKey: "0x${Buffer.from(interopSecret(index)).toString("hex")}"\n`;

/** Writes a keystore descriptor (with its keystore and password files) named `name`. */
async function writeKeystore(keysDir: string, name: string, index: number, password = PASSWORD) {
  const key = await interopKeystore(index, password);
  writeFileSync(join(keysDir, `${name}.json`), key.keystore);
  writeFileSync(join(keysDir, `${name}.pass`), password, { mode: 0o600 });
  writeFileSync(
    join(keysDir, `${name}.yaml`),
    `type: file-keystore\nkeystoreFile: ${name}.json\nkeystorePasswordFile: ${name}.pass\n`,
  );
  return key.pubkey;
}

/** Imports interop key `index` through the Key Manager API, which must answer `imported`. */
async function importThroughKeyManager(url: string, index: number) {
  const key = await interopKeystore(index, PASSWORD);
  const answer = await importKeys(url, { keystores: [key.keystore], passwords: [PASSWORD] });
  expect(answer.body.data).toEqual([{ status: "imported" }]);
  return key;
}

async function publicKeys(url: string): Promise<string[]> {
  return ((await (await fetch(`${url}/api/v1/eth2/publicKeys`)).json()) as string[]).sort();
}

describe("POST /reload", () => {
  let signer: InProcessSigner;
  const keysDir = join(dir.path, "api-keys");
  const kmDir = join(dir.path, "api-km");

  afterAll(() => signer?.stop());

  const reload = async () => {
    const answer = await fetch(`${signer.url}/reload`, { method: "POST" });
    expect(answer.status).toBe(202);
    expect(await answer.json()).toEqual({
      status: "accepted",
      message:
        "Reload operation accepted and is running in the background. Use GET /reload to check status.",
    });
    await signer.signer.keysReloaded();
  };
  const status = async () =>
    (await (await fetch(`${signer.url}/reload`)).json()) as Record<string, unknown>;
  const logRecords = () => signer.logs.map((line) => JSON.parse(line) as Record<string, unknown>);

  test("adds, removes and replaces what the descriptors say; Key Manager keys stay; unchanged keys are not opened again", async () => {
    mkdirSync(keysDir);
    mkdirSync(kmDir);
    writeFileSync(join(keysDir, "raw-a.yaml"), rawDescriptor(0));
    const b = await writeKeystore(keysDir, "ks-b", 1);
    signer = await startInProcessSigner(dir, "reload-api", {
      yaml: [
        `key_sources: {filesystem: {paths: ["${kmDir}", "${keysDir}"]}, key_manager_api: {enabled: true}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, "reload-api.sqlite")}"}`,
      ],
    });
    expect(await status()).toEqual({ status: "idle" });
    const a = INTEROP_KEYS[0] as string;
    expect(await publicKeys(signer.url)).toEqual([a, b].sort());
    const km = await importThroughKeyManager(signer.url, 40);

    // Added: a raw key and a keystore. Removed: raw-a. Changed: ks-b now holds another key.
    writeFileSync(join(keysDir, "raw-c.yaml"), rawDescriptor(2));
    const d = await writeKeystore(keysDir, "ks-d", 3);
    rmSync(join(keysDir, "raw-a.yaml"));
    const bNow = await writeKeystore(keysDir, "ks-b", 5);
    await reload();
    // The imported key is kept as it is (no KDF): its files are what the import wrote.
    expect(
      logRecords()
        .filter((r) => r.msg === "filesystem keys loaded")
        .at(-1),
    ).toMatchObject({
      loaded: 4,
      unchanged: 1,
      failed: 0,
    });
    const c = INTEROP_KEYS[2] as string;
    expect(await publicKeys(signer.url)).toEqual([bNow, c, d, km.pubkey].sort());
    expect(await signs(signer.url, a)).toBe(404);
    expect(await signs(signer.url, b)).toBe(404);
    for (const pubkey of [bNow, c, d, km.pubkey]) expect(await signs(signer.url, pubkey)).toBe(200);
    expect(
      (await listKeys(signer.url)).data.find((k) => k.validating_pubkey === km.pubkey),
    ).toEqual({
      validating_pubkey: km.pubkey,
      readonly: false,
    });
    const done = await status();
    expect(done.status).toBe("completed");
    expect(typeof done.lastOperationTime).toBe("string");

    // A reload with nothing changed opens no key again (the Key Manager's own files included).
    await reload();
    const loads = logRecords().filter((r) => r.msg === "filesystem keys loaded");
    expect(loads.at(-1)).toMatchObject({ loaded: 4, unchanged: 4, failed: 0 });
    expect(await publicKeys(signer.url)).toEqual([bNow, c, d, km.pubkey].sort());

    // The same key under a new password: replaced, still signing.
    await writeKeystore(keysDir, "ks-d", 3, "another password");
    await reload();
    expect(
      logRecords()
        .filter((r) => r.msg === "filesystem keys loaded")
        .at(-1),
    ).toMatchObject({
      loaded: 4,
      unchanged: 3,
    });
    expect(await signs(signer.url, d)).toBe(200);
  }, 60_000);

  test("a descriptor that does not load: completed_with_errors, health DOWN; fixed, UP again", async () => {
    writeFileSync(join(keysDir, "broken.yaml"), "type: file-raw\nprivateKey: nope\n");
    await reload();
    const broken = await status();
    expect(broken.status).toBe("completed_with_errors");
    expect(broken.lastError).toBe("reload completed with 1 key loading error(s)");
    expect((await fetch(`${signer.url}/healthcheck`)).status).toBe(503);
    rmSync(join(keysDir, "broken.yaml"));
    await reload();
    expect((await status()).status).toBe("completed");
    expect((await fetch(`${signer.url}/healthcheck`)).status).toBe(200);
  });

  test("requests during a reload: every one answered at once, and what changed before the last is read", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`${signer.url}/reload`, { method: "POST" })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(202));
    writeFileSync(join(keysDir, "raw-late.yaml"), rawDescriptor(6));
    expect((await fetch(`${signer.url}/reload`, { method: "POST" })).status).toBe(202);
    await signer.signer.keysReloaded();
    expect(await publicKeys(signer.url)).toContain(await rawPubkey(6));
  });
});

/** The pubkey of interop raw key `index`. */
async function rawPubkey(index: number): Promise<string> {
  const { SecretKey } = await import("@chainsafe/blst");
  return `0x${Buffer.from(SecretKey.fromBytes(interopSecret(index)).toPublicKey().toBytes()).toString("hex")}`;
}

describe("SIGHUP", () => {
  let sigil: RunningSigil | undefined;
  afterAll(async () => {
    await sigil?.stop();
  });

  /** Polls the key list until `check` holds (the reload runs in the background). */
  async function eventually(url: string, check: (keys: string[]) => boolean): Promise<string[]> {
    for (let i = 0; i < 100; i++) {
      const keys = await publicKeys(url);
      if (check(keys)) return keys;
      await Bun.sleep(50);
    }
    throw new Error(`keys never matched: ${JSON.stringify(await publicKeys(url))}`);
  }

  test("reloads the descriptors (add, remove, change) and keeps Key Manager keys; the process keeps running", async () => {
    const keysDir = join(dir.path, "hup-keys");
    const kmDir = join(dir.path, "hup-km");
    mkdirSync(keysDir);
    mkdirSync(kmDir);
    writeFileSync(join(keysDir, "a.yaml"), rawDescriptor(0));
    writeFileSync(join(keysDir, "b.yaml"), rawDescriptor(1));
    const config = dir.file(
      "hup.yaml",
      [
        "server: {listen_address: 127.0.0.1, listen_port: 0}",
        "logging: {format: json}",
        `key_sources: {filesystem: {paths: ["${kmDir}", "${keysDir}"]}, key_manager_api: {enabled: true}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, "hup.sqlite")}"}`,
      ].join("\n"),
    );
    sigil = await startSigil(["serve", "-c", config, "--init-slashing-protection"]);
    const [a, b, c] = INTEROP_KEYS as [string, string, string];
    expect(await publicKeys(sigil.url)).toEqual([a, b].sort());
    const km = await importThroughKeyManager(sigil.url, 41);

    writeFileSync(join(keysDir, "c.yaml"), rawDescriptor(2));
    rmSync(join(keysDir, "a.yaml"));
    writeFileSync(join(keysDir, "b.yaml"), rawDescriptor(3));
    sigil.process.kill("SIGHUP");
    const d = INTEROP_KEYS[3] as string;
    const expected = [c, d, km.pubkey].sort();
    expect(await eventually(sigil.url, (keys) => keys.join() === expected.join())).toEqual(
      expected,
    );
    expect(await signs(sigil.url, a)).toBe(404);
    expect(await signs(sigil.url, b)).toBe(404);
    for (const pubkey of expected) expect(await signs(sigil.url, pubkey)).toBe(200);
    expect(sigil.stderrText()).toContain('"msg":"SIGHUP: reloading the keys"');
    expect(sigil.stderrText()).toContain('"msg":"keys reloaded"');
    expect(sigil.process.exitCode).toBeNull();
    expect(await sigil.stop()).toBe(0);
    sigil = undefined;
  }, 60_000);
});
