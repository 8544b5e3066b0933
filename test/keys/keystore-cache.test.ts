import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import {
  decrypt as chainsafeDecrypt,
  create,
  defaultPbkdfModule,
  defaultScryptModule,
  type IKeystore,
} from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { createNoopStore } from "../../src/antislashing/backends/noop/store";
import { wireKeys } from "../../src/app/keys";
import { createNobleBackend } from "../../src/bls/noble";
import { loadConfig } from "../../src/config/load";
import { type FilesystemLoadResult, loadFilesystemKeys } from "../../src/keys/filesystem";
import { KeyStore } from "../../src/keys/key-store";
import { decryptKeystore, normalizePassword } from "../../src/keys/keystore";
import { CACHE_KDF_FLOOR, type CacheKeystore, cacheKdfCost } from "../../src/keys/keystore-cache";
import { registerTestSecret, testLogger } from "../support/log-capture";

// Real keystores made by another implementation (@chainsafe/bls-keystore), cheap enough to make
// and open quickly: PBKDF2 c=2^10 and scrypt n=2^14. The cache's own KDF keeps its real cost
// (scrypt n=2^18, about a second), so every cached load below pays that once.
const PBKDF2 = { ...defaultPbkdfModule(), params: { ...defaultPbkdfModule().params, c: 1024 } };
const SCRYPT = {
  ...defaultScryptModule(),
  params: { ...defaultScryptModule().params, n: 2 ** 14 },
};
const SHARED = "shared password";

const bls = createNobleBackend();
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

interface Fixture {
  secret: Uint8Array;
  pubkey: string;
  password: string;
}

/** A random valid BLS secret (top bits cleared, so below the curve order), registered for the log scan. */
function randomSecret(): Uint8Array {
  const secret = randomBytes(32);
  secret[0] = (secret[0] ?? 0) & 0x3f;
  secret[31] = (secret[31] ?? 0) | 1;
  return registerTestSecret(Uint8Array.from(secret), "keystore cache test secret");
}

async function makeKeystore(fixture: Fixture, kdf: typeof PBKDF2 | typeof SCRYPT) {
  const pubkey = Buffer.from(fixture.pubkey.slice(2), "hex");
  return create(fixture.password, fixture.secret, pubkey, "m/12381/3600/0/0/0", "", kdf);
}

function fixture(password: string): Fixture {
  const secret = randomSecret();
  return { secret, password, pubkey: `0x${hex(bls.importSecretKey(secret).publicKey)}` };
}

// k0..k5 PBKDF2, k6..k7 scrypt; k0, k1, k2, k5, k6 share a password. r8 is a raw key.
const PASSWORDS = [SHARED, SHARED, SHARED, "pw-3", "pw-4 ünïcødé\u0007", SHARED, SHARED, "pw-7"];
const KEYSTORES = PASSWORDS.length;
let keys: Fixture[] = [];
let raw: Fixture;
let root: string;
let template: string;
/** A cache built once from the template: valid for every copy of it (same bytes, same passwords). */
let golden: string;

function writeKeystore(dir: string, name: string, keystore: IKeystore, password: string) {
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(keystore));
  writeFileSync(join(dir, `${name}.txt`), `${password}\n`);
  writeFileSync(
    join(dir, `${name}.yaml`),
    `type: file-keystore\nkeystoreFile: ${name}.json\nkeystorePasswordFile: ${name}.txt\n`,
  );
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "sigil-keystore-cache-"));
  template = join(root, "template");
  keys = PASSWORDS.map((password) => fixture(registerTestSecret(password)));
  raw = fixture("");
  mkdirSync(template);
  const made = await Promise.all(keys.map((k, i) => makeKeystore(k, i >= 6 ? SCRYPT : PBKDF2)));
  for (const [i, keystore] of made.entries())
    writeKeystore(template, `k${i}`, keystore, keys[i]?.password ?? "");
  writeFileSync(join(template, "r8.yaml"), `type: file-raw\nprivateKey: "0x${hex(raw.secret)}"\n`);
  golden = join(root, "golden-cache.json");
  const built = await load(template, golden);
  if (built.kdfs !== KEYSTORES || built.result.failures.length > 0)
    throw new Error("no golden cache");
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A fresh copy of the key directory and a cache path beside it: empty, or a copy of `golden`. */
function setup(cached = false): { dir: string; cachePath: string } {
  const base = mkdtempSync(join(root, "case-"));
  const dir = join(base, "keys");
  cpSync(template, dir, { recursive: true });
  const cachePath = join(base, "keystore_cache.json");
  if (cached) cpSync(golden, cachePath);
  return { dir, cachePath };
}

interface Loaded {
  result: FilesystemLoadResult;
  /** Keystore KDF runs (the cache's own KDF is not one). */
  kdfs: number;
  maxInFlight: number;
  /** Every secret a keystore KDF returned, to check that the loader wiped it. */
  decrypted: Uint8Array[];
  records: Record<string, unknown>[];
}

async function load(dir: string, cachePath?: string, keepOpen = false): Promise<Loaded> {
  const lines: string[] = [];
  const logger = testLogger("debug", lines);
  let kdfs = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const decrypted: Uint8Array[] = [];
  // The seam: the real decryptKeystore, counted.
  const decrypt = async (keystore: unknown, password: string) => {
    kdfs++;
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    try {
      const secret = await decryptKeystore(keystore, password);
      decrypted.push(secret);
      return secret;
    } finally {
      inFlight--;
    }
  };
  const result = await loadFilesystemKeys({
    paths: [dir],
    keystoreConcurrency: 128,
    rawConcurrency: 128,
    bls,
    logger,
    decrypt,
    ...(cachePath === undefined ? {} : { cache: { path: cachePath, keepOpen } }),
  });
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { result, kdfs, maxInFlight, decrypted, records };
}

const pubkeysOf = (loaded: Loaded) =>
  loaded.result.keys.map(({ file, pubkey }) => [file.split("/").pop(), pubkey]);

function cacheLog(loaded: Loaded): Record<string, unknown> | undefined {
  return loaded.records.find((r) => r.msg === "keystore cache");
}

function warnings(loaded: Loaded): Record<string, unknown>[] {
  // The fixtures' files are written under the test's umask; their mode warnings are checked
  // in test/keys/filesystem.test.ts, not here.
  return loaded.records.filter(
    (r) => r.level === "warn" && !String(r.msg).includes("group or others"),
  );
}

interface CacheFileJson {
  kdf: { n: number; salt: string };
  check: string;
  entries: { id: string; pubkey: string; nonce: string; sealed: string }[];
}

const readCache = (path: string) => JSON.parse(readFileSync(path, "utf8")) as CacheFileJson;
const expectedKeys = () => [
  ...keys.map((k, i) => [`k${i}.yaml`, k.pubkey]),
  ["r8.yaml", raw.pubkey],
];

async function rekey(dir: string, i: number, password: string, kdf = PBKDF2) {
  const key = keys[i];
  if (!key) throw new Error(`no key ${i}`);
  writeKeystore(dir, `k${i}`, await makeKeystore({ ...key, password }, kdf), password);
}

describe("keystore cache", () => {
  test("first start builds it; the second loads every key from it without one keystore KDF", async () => {
    const { dir, cachePath } = setup();
    const first = await load(dir, cachePath);
    expect(first.result.failures).toEqual([]);
    expect(pubkeysOf(first)).toEqual(expectedKeys());
    expect(first.kdfs).toBe(KEYSTORES);
    expect(cacheLog(first)).toMatchObject({ state: "new", fromCache: 0, sealed: KEYSTORES });
    expect(statSync(cachePath).mode & 0o777).toBe(0o600);
    // One entry per keystore; the raw key is not cached.
    const file = readCache(cachePath);
    expect(file.entries.map((e) => e.pubkey).sort()).toEqual(keys.map((k) => k.pubkey).sort());
    expect(file.kdf.n).toBe(CACHE_KDF_FLOOR.n);
    const before = readFileSync(cachePath);

    const second = await load(dir, cachePath);
    expect(second.kdfs).toBe(0);
    expect(second.result.failures).toEqual([]);
    expect(pubkeysOf(second)).toEqual(pubkeysOf(first));
    expect(cacheLog(second)).toMatchObject({ state: "valid", fromCache: KEYSTORES, sealed: 0 });
    expect(warnings(second)).toEqual([]);
    // Nothing changed, so the file is not rewritten.
    expect(readFileSync(cachePath).equals(before)).toBe(true);

    // Each cached key signs exactly as the keystore's secret, opened by @chainsafe/bls-keystore
    // and signing with @chainsafe/blst: another keystore implementation and another BLS library.
    const message = randomBytes(32);
    for (const [i, key] of second.result.keys.entries()) {
      const name = `k${i}`;
      if (i >= KEYSTORES) break;
      const keystore = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as IKeystore;
      const secret = await chainsafeDecrypt(keystore, keys[i]?.password ?? "");
      const expected = SecretKey.fromBytes(secret).sign(message).toBytes();
      secret.fill(0);
      const signature = await bls.sign(key.key, message);
      expect(hex(signature)).toBe(hex(expected));
      expect(bls.verify(Buffer.from(key.pubkey.slice(2), "hex"), message, signature)).toBe(true);
    }
  });

  test("the file holds no secret and no password in clear", async () => {
    const bytes = readFileSync(golden);
    const text = bytes.toString("latin1").toLowerCase();
    for (const { secret, password } of [...keys, raw]) {
      const encodings = [
        hex(secret),
        Buffer.from(secret).toString("base64").toLowerCase(),
        Buffer.from(secret).toString("base64url").toLowerCase(),
      ];
      for (const encoded of encodings) expect(text.includes(encoded)).toBe(false);
      expect(bytes.includes(Buffer.from(secret))).toBe(false);
      if (password === "") continue;
      expect(bytes.includes(Buffer.from(password))).toBe(false);
      expect(bytes.includes(Buffer.from(password.normalize("NFKD")))).toBe(false);
    }
  });

  test("the loader wipes every secret a KDF returned, and runs no more KDFs at once than cores", async () => {
    const { dir } = setup();
    const loaded = await load(dir);
    expect(loaded.decrypted).toHaveLength(KEYSTORES);
    for (const secret of loaded.decrypted) expect(secret.every((b) => b === 0)).toBe(true);
    // All keystores are ready at once and keystoreConcurrency is 128: only the core cap holds it.
    expect(loaded.maxInFlight).toBe(Math.min(KEYSTORES, availableParallelism()));
  });

  test("a loose file mode is tightened to 0600 without decrypting anything", async () => {
    const { dir, cachePath } = setup(true);
    chmodSync(cachePath, 0o644);
    const again = await load(dir, cachePath);
    expect(again.kdfs).toBe(0);
    expect(statSync(cachePath).mode & 0o777).toBe(0o600);
  });

  test("a changed password file invalidates the whole cache", async () => {
    const { dir, cachePath } = setup(true);
    const salt = readCache(cachePath).kdf.salt;
    writeFileSync(join(dir, "k3.txt"), "not pw-3\n");
    const changed = await load(dir, cachePath);
    // Every keystore is decrypted again; the one whose password is now wrong fails as it would
    // without a cache.
    expect(changed.kdfs).toBe(KEYSTORES);
    expect(changed.result.failures).toEqual([
      { file: join(dir, "k3.yaml"), reason: expect.stringContaining("wrong password") },
    ]);
    expect(cacheLog(changed)).toMatchObject({ state: "rebuilt", sealed: KEYSTORES - 1 });
    expect(warnings(changed).map((w) => w.msg)).toContain("keystore cache ignored, rebuilding");
    expect(readCache(cachePath).kdf.salt).not.toBe(salt);

    // The keystore re-encrypted under its new password: another password set, another rebuild.
    await rekey(dir, 3, "pw-3 new");
    const rekeyed = await load(dir, cachePath);
    expect(rekeyed.kdfs).toBe(KEYSTORES);
    expect(rekeyed.result.failures).toEqual([]);
    expect((await load(dir, cachePath)).kdfs).toBe(0);
  });

  test("a changed keystore (same password) is decrypted again; its old entry is dropped", async () => {
    const { dir, cachePath } = setup(true);
    const before = new Set(readCache(cachePath).entries.map((e) => e.id));
    await rekey(dir, 2, SHARED);
    const changed = await load(dir, cachePath);
    expect(changed.kdfs).toBe(1);
    expect(changed.result.failures).toEqual([]);
    expect(pubkeysOf(changed)).toEqual(expectedKeys());
    expect(cacheLog(changed)).toMatchObject({
      state: "valid",
      fromCache: KEYSTORES - 1,
      sealed: 1,
    });
    const after = readCache(cachePath).entries.map((e) => e.id);
    expect(after).toHaveLength(KEYSTORES);
    expect(after.filter((id) => !before.has(id))).toHaveLength(1);
    expect((await load(dir, cachePath)).kdfs).toBe(0);
  });

  test("an added keystore under a password in use costs one KDF; under a new password, all", async () => {
    const { dir, cachePath } = setup(true);
    const extra = [fixture(SHARED), fixture(registerTestSecret("a brand new password"))];
    for (const [i, key] of extra.entries()) {
      writeKeystore(dir, `x${i}`, await makeKeystore(key, PBKDF2), key.password);
      const loaded = await load(dir, cachePath);
      expect(loaded.result.failures).toEqual([]);
      expect(loaded.result.keys.map((k) => k.pubkey)).toContain(key.pubkey);
      expect(loaded.kdfs).toBe(i === 0 ? 1 : KEYSTORES + 2);
      expect(readCache(cachePath).entries).toHaveLength(KEYSTORES + 1 + i);
    }
    expect((await load(dir, cachePath)).kdfs).toBe(0);
  });

  test("a removed keystore leaves the file; removing a password's last keystore rebuilds", async () => {
    const { dir, cachePath } = setup(true);
    // k1 shares its password: nothing to decrypt, but its sealed secret must leave the file.
    for (const ext of ["yaml", "json", "txt"]) unlinkSync(join(dir, `k1.${ext}`));
    const removed = await load(dir, cachePath);
    expect(removed.kdfs).toBe(0);
    expect(removed.result.keys.map((k) => k.pubkey)).not.toContain(keys[1]?.pubkey);
    expect(readCache(cachePath).entries.map((e) => e.pubkey)).not.toContain(keys[1]?.pubkey);
    expect(readCache(cachePath).entries).toHaveLength(KEYSTORES - 1);
    // k7 was the only keystore with "pw-7": the password set changes.
    unlinkSync(join(dir, "k7.yaml"));
    const rebuilt = await load(dir, cachePath);
    expect(rebuilt.kdfs).toBe(KEYSTORES - 2);
    expect(readCache(cachePath).entries).toHaveLength(KEYSTORES - 2);
  });

  test("a descriptor with the wrong password for a cached keystore still fails", async () => {
    const { dir, cachePath } = setup();
    writeFileSync(join(dir, "wrong.txt"), "not the password\n");
    writeFileSync(
      join(dir, "wrong.yaml"),
      "type: file-keystore\nkeystoreFile: k0.json\nkeystorePasswordFile: wrong.txt\n",
    );
    await load(dir, cachePath);
    const again = await load(dir, cachePath);
    // Only the wrong one runs a KDF (and fails); the right descriptor comes from the cache.
    expect(again.kdfs).toBe(1);
    expect(again.result.failures).toEqual([
      { file: join(dir, "wrong.yaml"), reason: expect.stringContaining("wrong password") },
    ]);
    expect(pubkeysOf(again)).toEqual(expectedKeys());
  });

  describe("a corrupted or foreign cache is ignored with a warning and rebuilt", () => {
    const corruptions: [string, (path: string) => void, number][] = [
      ["truncated", (p) => writeFileSync(p, readFileSync(p).subarray(0, 300)), KEYSTORES],
      [
        "not JSON after the marker",
        (p) => writeFileSync(p, '{"format":"sigil-keystore-cache"!'),
        KEYSTORES,
      ],
      ["empty", (p) => writeFileSync(p, ""), KEYSTORES],
      [
        "check value altered",
        (p) => rewrite(p, (f) => ({ ...f, check: flipHex(f.check) })),
        KEYSTORES,
      ],
      [
        "salt altered",
        (p) => rewrite(p, (f) => ({ ...f, kdf: { ...f.kdf, salt: flipHex(f.kdf.salt) } })),
        KEYSTORES,
      ],
      [
        "KDF cheaper than the keystores' (n=2^10)",
        (p) => rewrite(p, (f) => ({ ...f, kdf: { ...f.kdf, n: 1024 } })),
        KEYSTORES,
      ],
      [
        "KDF costlier than any keystore may ask (n=2^21), refused without running it",
        (p) => rewrite(p, (f) => ({ ...f, kdf: { ...f.kdf, n: 2 ** 21 } })),
        KEYSTORES,
      ],
      ["one sealed secret altered", (p) => rewrite(p, (f) => alterEntry(f, "sealed")), 1],
      ["one nonce altered", (p) => rewrite(p, (f) => alterEntry(f, "nonce")), 1],
      [
        "two entries' pubkeys swapped",
        (p) =>
          rewrite(p, (f) => {
            const [a, b, ...rest] = f.entries;
            if (!a || !b) throw new Error("too few entries");
            return {
              ...f,
              entries: [{ ...a, pubkey: b.pubkey }, { ...b, pubkey: a.pubkey }, ...rest],
            };
          }),
        2,
      ],
    ];

    test.each(corruptions)("%s", async (_name, corrupt, kdfs) => {
      const { dir, cachePath } = setup(true);
      corrupt(cachePath);
      const loaded = await load(dir, cachePath);
      expect(loaded.kdfs).toBe(kdfs);
      expect(loaded.result.failures).toEqual([]);
      expect(pubkeysOf(loaded)).toEqual(expectedKeys());
      expect(warnings(loaded).length).toBeGreaterThan(0);
      // Rebuilt: the next start needs no KDF.
      expect((await load(dir, cachePath)).kdfs).toBe(0);
    });

    test("another key set's cache", async () => {
      const a = setup(true);
      const b = setup();
      await rekey(b.dir, 3, "another pw-3");
      await load(b.dir, b.cachePath);
      cpSync(b.cachePath, a.cachePath);
      const loaded = await load(a.dir, a.cachePath);
      expect(loaded.kdfs).toBe(KEYSTORES);
      expect(cacheLog(loaded)).toMatchObject({ state: "rebuilt" });
      expect(warnings(loaded)).toEqual([
        expect.objectContaining({
          msg: "keystore cache ignored, rebuilding",
          reason: expect.stringContaining("does not open with the current passwords"),
        }),
      ]);
    });
  });

  test("a file at the path that is not a cache is left alone, and the keys still load", async () => {
    const { dir, cachePath } = setup();
    const foreign = Buffer.concat([Buffer.from("SQLite format 3\0"), randomBytes(100)]);
    writeFileSync(cachePath, foreign);
    const loaded = await load(dir, cachePath);
    expect(loaded.kdfs).toBe(KEYSTORES);
    expect(pubkeysOf(loaded)).toEqual(expectedKeys());
    expect(warnings(loaded)).toEqual([
      expect.objectContaining({ msg: "keystore cache not used: path left alone" }),
    ]);
    expect(readFileSync(cachePath).equals(foreign)).toBe(true);
  });

  test("a cache that cannot be written is a warning, not a failure", async () => {
    const { dir } = setup();
    const cachePath = join(dir, "missing-dir", "cache.json");
    const loaded = await load(dir, cachePath);
    expect(loaded.result.failures).toEqual([]);
    expect(warnings(loaded).map((w) => w.msg)).toEqual(["keystore cache not written"]);
    expect(existsSync(cachePath)).toBe(false);
  });
});

test("key_sources.filesystem.cache turns the cache on for the configured keys, relative to the working directory", async () => {
  const { dir } = setup();
  const base = join(dir, "..");
  const env = {
    SIGNER_KEY_SOURCES__FILESYSTEM__PATHS: JSON.stringify([dir]),
    SIGNER_KEY_SOURCES__FILESYSTEM__CACHE__ENABLED: "true",
    SIGNER_KEY_SOURCES__FILESYSTEM__CACHE__PATH: "./wired-cache.json",
  };
  const loaded = loadConfig({ argv: [], env });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  const quiet = testLogger("off");
  const cwd = process.cwd();
  process.chdir(base);
  try {
    const keys = new KeyStore();
    const wired = await wireKeys(loaded.config, {
      keys,
      bls,
      slashing: createNoopStore(),
      logger: quiet,
      others: [],
      onLoad: () => {},
    });
    wired.close();
    expect(keys.count("filesystem")).toBe(KEYSTORES + 1);
    expect(wired.service.lastLoad("filesystem")?.failures).toEqual([]);
  } finally {
    process.chdir(cwd);
  }
  expect(readCache(join(base, "wired-cache.json")).entries).toHaveLength(KEYSTORES);
  const defaults = loadConfig({ argv: [], env: {} });
  if (!defaults.ok) throw new Error(JSON.stringify(defaults.problems));
  expect(defaults.config.key_sources.filesystem.cache).toEqual({
    enabled: false,
    path: "./keystore_cache.json",
  });
});

describe("the cache kept open for the Key Manager API", () => {
  const identity = (password: string, kdf: CacheKeystore["kdf"]): CacheKeystore => ({
    keystoreHash: randomBytes(32),
    password: normalizePassword(password),
    kdf,
  });
  const PBKDF2_COST = { fn: "pbkdf2", c: 1024 } as const;

  test("only a load asked to keep it open returns it", async () => {
    const { dir, cachePath } = setup(true);
    expect((await load(dir, cachePath)).result.cache).toBeUndefined();
    const opened = (await load(dir, cachePath, true)).result.cache;
    expect(opened).toBeDefined();
    opened?.close();
  });

  test("seals a keystore its master covers, refuses a new password or a costlier scrypt, drops by pubkey", async () => {
    const { dir, cachePath } = setup(true);
    const cache = (await load(dir, cachePath, true)).result.cache;
    if (!cache) throw new Error("no open cache");
    const added = fixture(SHARED);
    expect(cache.add(identity(SHARED, PBKDF2_COST), added.pubkey, added.secret)).toBe("sealed");
    expect(cache.add(identity("never configured", PBKDF2_COST), added.pubkey, added.secret)).toBe(
      "new_password",
    );
    const costlier = { fn: "scrypt", ...CACHE_KDF_FLOOR, p: 2 } as const;
    expect(cache.add(identity(SHARED, costlier), added.pubkey, added.secret)).toBe("costlier_kdf");
    // Nothing is written before flush.
    expect(readCache(cachePath).entries).toHaveLength(KEYSTORES);
    cache.flush();
    expect(readCache(cachePath).entries.map((e) => e.pubkey)).toEqual(
      expect.arrayContaining([added.pubkey]),
    );
    expect(readCache(cachePath).entries).toHaveLength(KEYSTORES + 1);
    // k0 and the added key: every entry of the pubkey goes.
    cache.drop(added.pubkey);
    cache.drop(keys[0]?.pubkey ?? "");
    cache.flush();
    const left = readCache(cachePath).entries.map((e) => e.pubkey);
    expect(left).toHaveLength(KEYSTORES - 1);
    expect(left).not.toContain(added.pubkey);
    expect(left).not.toContain(keys[0]?.pubkey);
    cache.close();
    expect(() => cache.add(identity(SHARED, PBKDF2_COST), added.pubkey, added.secret)).toThrow(
      "not open",
    );
  });
});

describe("cacheKdfCost", () => {
  const at = (kdf: CacheKeystore["kdf"]): CacheKeystore => ({
    keystoreHash: new Uint8Array(32),
    password: new Uint8Array(0),
    kdf,
  });

  test("the standard scrypt cost is the floor, whatever cheaper keystores use", () => {
    expect(cacheKdfCost([])).toEqual(CACHE_KDF_FLOOR);
    expect(CACHE_KDF_FLOOR).toEqual({ n: 2 ** 18, r: 8, p: 1 });
    const cheap = [at({ fn: "pbkdf2", c: 2 ** 18 }), at({ fn: "scrypt", n: 2 ** 14, r: 8, p: 1 })];
    expect(cacheKdfCost(cheap)).toEqual(CACHE_KDF_FLOOR);
  });

  test("a costlier scrypt keystore raises it to that keystore's cost", () => {
    const costly = { fn: "scrypt" as const, n: 2 ** 20, r: 8, p: 1 };
    expect(cacheKdfCost([at(costly), at({ fn: "scrypt", n: 2 ** 19, r: 8, p: 1 })])).toEqual({
      n: 2 ** 20,
      r: 8,
      p: 1,
    });
  });
});

function flipHex(value: string): string {
  const last = value.at(-1) === "0" ? "1" : "0";
  return value.slice(0, -1) + last;
}

function rewrite(path: string, change: (file: CacheFileJson) => CacheFileJson): void {
  const file = JSON.parse(readFileSync(path, "utf8")) as CacheFileJson & Record<string, unknown>;
  writeFileSync(path, JSON.stringify(change(file)));
}

function alterEntry(file: CacheFileJson, field: "sealed" | "nonce"): CacheFileJson {
  const [first, ...rest] = file.entries;
  if (!first) throw new Error("no entries");
  return { ...file, entries: [{ ...first, [field]: flipHex(first[field]) }, ...rest] };
}
