// The keystore cache and the Key Manager API together, through the real signer and real HTTP:
// keys imported while the signer runs are sealed into the cache, so the next start-up needs no
// KDF for them; deleted keys leave it; a keystore under a new password is reported, not cached.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type RunningSigner, startSigner } from "../../src/app/signer";
import { loadConfig } from "../../src/config/load";
import { TempDir } from "../support/cli";
import { deleteKeys, importKeys, listKeys } from "../support/keymanager";
import { interopKeystore, type TestKeystore } from "../support/keystores";
import { testLogger } from "../support/log-capture";

const dir = new TempDir();
const SHARED = "keystore-cache-km-password";
const OTHER = "a password no configured keystore uses";
type TestKey = TestKeystore;
const makeKey = (index: number, password: string) => interopKeystore(index, password);

let configured: TestKey[] = [];
let sameA: TestKey;
let sameB: TestKey;
let otherPassword: TestKey;
beforeAll(async () => {
  configured = await Promise.all([30, 31].map((i) => makeKey(i, SHARED)));
  [sameA, sameB, otherPassword] = await Promise.all([
    makeKey(32, SHARED),
    makeKey(33, SHARED),
    makeKey(34, OTHER),
  ]);
});
afterAll(() => dir.remove());

type LogRecord = Record<string, unknown>;

/**
 * A key directory holding `configured` (or `keys`) as operator-written descriptors, and its cache
 * path.
 */
function keyDirectory(
  name: string,
  keys: readonly TestKey[] = configured,
): { keysDir: string; cachePath: string } {
  const keysDir = join(dir.path, `${name}-keys`);
  mkdirSync(keysDir, { recursive: true });
  for (const [i, key] of keys.entries()) {
    writeFileSync(join(keysDir, `k${i}.json`), key.keystore);
    writeFileSync(join(keysDir, `k${i}.txt`), `${SHARED}\n`);
    writeFileSync(
      join(keysDir, `k${i}.yaml`),
      `type: file-keystore\nkeystoreFile: k${i}.json\nkeystorePasswordFile: k${i}.txt\n`,
    );
  }
  return { keysDir, cachePath: join(dir.path, `${name}-cache.json`) };
}

async function start(
  name: string,
  keysDir: string,
  cachePath: string,
): Promise<{ signer: RunningSigner; url: string; records: () => LogRecord[] }> {
  const file = dir.file(
    `${name}.yaml`,
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}\nmetrics: {listen_address: 127.0.0.1, listen_port: 0}",
      `key_sources: {filesystem: {paths: ["${keysDir}"], cache: {enabled: true, path: "${cachePath}"}}, key_manager_api: {enabled: true}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}`,
    ].join("\n"),
  );
  const loaded = loadConfig({ argv: ["-c", file], env: {} });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  const lines: string[] = [];
  const signer = await startSigner(loaded.config, testLogger("info", lines), process.env, {
    initSlashingProtection: true,
  });
  const records = () => lines.map((line) => JSON.parse(line) as LogRecord);
  return { signer, url: signer.http.url, records };
}

/** The start-up's `keystore cache` record: state, fromCache, sealed, rejected. */
function cacheRecord(records: LogRecord[]): LogRecord | undefined {
  return records.find((r) => r.msg === "keystore cache");
}

/** Imports through the API (which must answer 200); the status of each item. */
async function importStatuses(url: string, imported: TestKey[], passwords: string[]) {
  const { status, body } = await importKeys(url, {
    keystores: imported.map((k) => k.keystore),
    passwords,
  });
  expect(status).toBe(200);
  return body.data.map((d) => d.status);
}

/** Deletes through the API (which must answer 200); the status of each item. */
async function deleteStatuses(url: string, pubkeys: string[]) {
  const { status, body } = await deleteKeys(url, pubkeys);
  expect(status).toBe(200);
  return body.data.map((d) => d.status);
}

/** The pubkeys the cache file holds a sealed secret for (read as any tool would, with JSON). */
function cachedPubkeys(cachePath: string): string[] {
  const file = JSON.parse(readFileSync(cachePath, "utf8")) as { entries: { pubkey: string }[] };
  return file.entries.map((e) => e.pubkey).sort();
}

const sorted = (keys: TestKey[]) => keys.map((k) => k.pubkey).sort();

describe("keystore cache with the Key Manager API", () => {
  test("keys imported under a cached password are sealed at once; the restart decrypts none", async () => {
    const { keysDir, cachePath } = keyDirectory("same");
    const first = await start("same", keysDir, cachePath);
    try {
      expect(cacheRecord(first.records())).toMatchObject({ state: "new", sealed: 2 });
      expect(cachedPubkeys(cachePath)).toEqual(sorted(configured));
      expect(await importStatuses(first.url, [sameA, sameB], [SHARED, SHARED])).toEqual([
        "imported",
        "imported",
      ]);
      // Before any restart: the file already holds them.
      expect(cachedPubkeys(cachePath)).toEqual(sorted([...configured, sameA, sameB]));
    } finally {
      await first.signer.stop();
    }

    const second = await start("same", keysDir, cachePath);
    try {
      // Every key from the cache: no keystore KDF ran, nothing had to be sealed again.
      expect(cacheRecord(second.records())).toMatchObject({
        state: "valid",
        fromCache: 4,
        sealed: 0,
        rejected: 0,
      });
      const listed = (await listKeys(second.url)).data.map((d) => d.validating_pubkey);
      expect(listed.sort()).toEqual(sorted([...configured, sameA, sameB]));
    } finally {
      await second.signer.stop();
    }
  });

  test("a deleted key leaves the cache at once; imported again, it is sealed again", async () => {
    const { keysDir, cachePath } = keyDirectory("delete");
    const running = await start("delete", keysDir, cachePath);
    try {
      expect(await importStatuses(running.url, [sameA], [SHARED])).toEqual(["imported"]);
      expect(cachedPubkeys(cachePath)).toContain(sameA.pubkey);
      expect(await deleteStatuses(running.url, [sameA.pubkey])).toEqual(["deleted"]);
      expect(cachedPubkeys(cachePath)).toEqual(sorted(configured));
      expect(await importStatuses(running.url, [sameA], [SHARED])).toEqual(["imported"]);
      expect(cachedPubkeys(cachePath)).toEqual(sorted([...configured, sameA]));
    } finally {
      await running.signer.stop();
    }
  });

  test("a key under a new password is imported and named in a warning; the restart rebuilds", async () => {
    const { keysDir, cachePath } = keyDirectory("other");
    const first = await start("other", keysDir, cachePath);
    try {
      const before = readFileSync(cachePath, "utf8");
      expect(await importStatuses(first.url, [otherPassword], [OTHER])).toEqual(["imported"]);
      const warning = first
        .records()
        .find((r) => r.level === "warn" && String(r.msg).startsWith("imported keystore not in"));
      expect(warning).toMatchObject({
        pubkey: otherPassword.pubkey,
        reason: "its password is not one the cache was made with",
      });
      expect(String(warning?.msg)).toContain("the next start-up decrypts every keystore");
      // Nothing to write: the cache is unchanged.
      expect(readFileSync(cachePath, "utf8")).toBe(before);
    } finally {
      await first.signer.stop();
    }

    const second = await start("other", keysDir, cachePath);
    try {
      expect(cacheRecord(second.records())).toMatchObject({ state: "rebuilt", sealed: 3 });
      expect(cachedPubkeys(cachePath)).toEqual(sorted([...configured, otherPassword]));
    } finally {
      await second.signer.stop();
    }
  });

  test("no keystore at start-up, so no cache: the first import makes it, and the restart decrypts none", async () => {
    const { keysDir, cachePath } = keyDirectory("empty", []);
    const first = await start("empty", keysDir, cachePath);
    try {
      // Nothing to derive the cache's key from yet: no cache, no file.
      expect(cacheRecord(first.records())).toBeUndefined();
      expect(existsSync(cachePath)).toBe(false);
      expect(await importStatuses(first.url, [sameA], [SHARED])).toEqual(["imported"]);
      // Before any restart: the file is there, holding the imported key.
      expect(cachedPubkeys(cachePath)).toEqual([sameA.pubkey]);
      expect(
        first.records().find((r) => r.msg === "keystore cache" && r.made_by === "import"),
      ).toMatchObject({ state: "new" });
      // A later import under the same password is sealed into the same file.
      expect(await importStatuses(first.url, [sameB], [SHARED])).toEqual(["imported"]);
      expect(cachedPubkeys(cachePath)).toEqual(sorted([sameA, sameB]));
    } finally {
      await first.signer.stop();
    }

    const second = await start("empty", keysDir, cachePath);
    try {
      expect(cacheRecord(second.records())).toMatchObject({
        state: "valid",
        fromCache: 2,
        sealed: 0,
        rejected: 0,
      });
      expect(second.records().some((r) => r.msg === "keystore cache not found, building it")).toBe(
        false,
      );
    } finally {
      await second.signer.stop();
    }
  });
});
