import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createCipheriv, createHash, pbkdf2Sync, randomBytes } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BlsBackend } from "../../src/bls/backend";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { type BlsWorkerPool, createPooledBackend } from "../../src/bls/pool";
import { type FilesystemLoadResult, loadFilesystemKeys } from "../../src/keys/filesystem";
import { createSemaphore } from "../../src/keys/semaphore";
import { testLogger } from "../support/log-capture";

const CURVE_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n;
const VECTORS = join(import.meta.dir, "../vectors/eip2335-keystores");

/** Interop validator key i: SHA-256(i as 32-byte LE), read little-endian, mod r, 32-byte BE. */
function interopSecret(i: number): Uint8Array {
  const le = Buffer.alloc(32);
  le.writeUInt32LE(i, 0);
  const digest = createHash("sha256").update(le).digest();
  const scalar = BigInt(`0x${Buffer.from(digest).reverse().toString("hex")}`) % CURVE_ORDER;
  return Buffer.from(scalar.toString(16).padStart(64, "0"), "hex");
}

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;
const hex32 = (text: string | undefined) =>
  Uint8Array.from(Buffer.from((text ?? "").slice(2), "hex"));

/** Test-only EIP-2335 writer with a cheap PBKDF2 (c = 2^10). */
function encryptKeystore(
  secret: Uint8Array,
  password: string,
  pubkey: string | undefined,
): Record<string, unknown> {
  const salt = randomBytes(32);
  const iv = randomBytes(16);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: EIP-2335 password processing
  const pw = Buffer.from(password.normalize("NFKD").replace(/[\u0000-\u001f\u007f-\u009f]/g, ""));
  const dk = pbkdf2Sync(pw, salt, 1024, 32, "sha256");
  const cipher = createCipheriv("aes-128-ctr", dk.subarray(0, 16), iv);
  const message = Buffer.concat([cipher.update(secret), cipher.final()]);
  const checksum = createHash("sha256").update(dk.subarray(16, 32)).update(message).digest();
  return {
    crypto: {
      kdf: {
        function: "pbkdf2",
        params: { dklen: 32, c: 1024, prf: "hmac-sha256", salt: salt.toString("hex") },
        message: "",
      },
      checksum: { function: "sha256", params: {}, message: checksum.toString("hex") },
      cipher: {
        function: "aes-128-ctr",
        params: { iv: iv.toString("hex") },
        message: message.toString("hex"),
      },
    },
    ...(pubkey === undefined ? {} : { pubkey: pubkey.slice(2) }),
    path: "m/12381/3600/0/0/0",
    uuid: crypto.randomUUID(),
    version: 4,
  };
}

const bls = createNobleBackend();
const secrets = Array.from({ length: 8 }, (_, i) => interopSecret(i));
const pubkeys = secrets.map((s) => hex(bls.importSecretKey(s).publicKey));
const secretHex = secrets.map(hex);

// The well-known interop pubkeys (EIP-3076 tests, client docs) pin the derivation above.
test("interop keys 0-2 have the published pubkeys", () => {
  expect(pubkeys.slice(0, 3)).toEqual([
    "0xa99a76ed7796f7be22d5b7e85deeb7c5677e88e511e0b337618f8c4eb61349b4bf2d153f649f7b53359fe8b94a38e44c",
    "0xb89bebc699769726a318c8e9971bd3171297c61aea4a6578a7a4f94b547dcba5bac16a89108b6b6a1fe3695d1a874a0b",
    "0xa3a32b0f8b4ddb83f1a0a853d81dd725dfe577d4f4c3db8ece52ce2b026eca84815c1a7e8e92a4de3d755733bf7e4a9b",
  ]);
});

const VECTOR_PUBKEY =
  "0x9612d7a727c9d0a22e185a1c768478dfe919cada9266988cb32359c11f2b7b27f4ae4040902382ae2910c15e2b420d07";
const PASSWORD_WITH_SPACES = "  pass phrase with spaces ";

let root: string;
let dirA: string;
let dirB: string;
let missingDir: string;
let plainFile: string;
/** Each broken file (relative to dirA unless absolute) and the reason substring it must produce. */
let broken: [string, string][];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "sigil-keys-"));
  dirA = join(root, "a");
  dirB = join(root, "b");
  mkdirSync(dirA);
  mkdirSync(dirB);
  mkdirSync(join(dirA, "keystores"));
  mkdirSync(join(dirA, "sub"));
  missingDir = join(root, "does-not-exist");
  plainFile = join(root, "plain-file.txt");
  writeFileSync(plainFile, "not a directory\n");

  const a = (name: string, text: string) => writeFileSync(join(dirA, name), text);
  const raw = (i: number, extra = "") => `type: file-raw\n${extra}privateKey: ${secretHex[i]}\n`;
  const keystoreDescriptor = (ks: string, pw: string) =>
    `type: "file-keystore"\nkeyType: "BLS"\nkeystoreFile: "${ks}"\nkeystorePasswordFile: "${pw}"\n`;
  const writeKeystore = (name: string, i: number, password: string, pubkey?: string) =>
    a(name, JSON.stringify(encryptKeystore(secrets[i] ?? new Uint8Array(), password, pubkey)));

  // --- Good keys -------------------------------------------------------------------------------
  a("raw0.yaml", raw(0, "keyType: BLS\n")); // unquoted 0x… must stay a string
  a("raw1.yml", `# interop key 1\ntype: 'file-raw'\nprivateKey: '${secretHex[1]}'\n`);
  // Keystore with relative paths (resolved against the descriptor), a password with spaces and
  // a CRLF final line ending.
  writeKeystore("keystores/k2.json", 2, PASSWORD_WITH_SPACES, pubkeys[2]);
  a("keystores/k2.password", `${PASSWORD_WITH_SPACES}\r\n`);
  a("ks2.yaml", keystoreDescriptor("keystores/k2.json", "keystores/k2.password"));
  // The published EIP-2335 vector (PBKDF2 2^18), absolute paths, password file ending in "\n".
  const vector = JSON.parse(
    readFileSync(join(VECTORS, "valid/chainsafe_pbkdf2_testpassword.json"), "utf8"),
  ) as { keystore: unknown; password: string };
  a("vector.json", JSON.stringify(vector.keystore));
  a("vector.password", `${vector.password}\n`);
  a("vector.yaml", keystoreDescriptor(join(dirA, "vector.json"), join(dirA, "vector.password")));
  // Multi-document file: a raw key and a keystore without pubkey field.
  writeKeystore("k4.json", 4, "pw4");
  a("k4.password", "pw4");
  a("multi.yaml", `${raw(3)}---\n${keystoreDescriptor("k4.json", "k4.password")}---\n`);
  // Ignored: other extensions and subdirectories.
  a("notes.txt", raw(7));
  a("raw7.json", raw(7));
  a("sub/raw7.yaml", raw(7));

  // --- Broken files ----------------------------------------------------------------------------
  symlinkSync(join(dirA, "nowhere.yaml"), join(dirA, "dangling.yaml"));
  symlinkSync(join(dirA, "sub"), join(dirA, "dirlink.yaml"));
  a("malformed.yaml", `type: file-raw\nprivateKey: [${secretHex[7]}\n  oops: 1\n`);
  a("empty.yaml", "# nothing here\n");
  a("sequence.yaml", `- type: file-raw\n- privateKey: ${secretHex[7]}\n`);
  a("scalar.yaml", "file-raw\n");
  a("no-type.yaml", `privateKey: ${secretHex[7]}\n`);
  a("no-private-key.yaml", "type: file-raw\n");
  a("no-password-field.yaml", "type: file-keystore\nkeystoreFile: k4.json\n");
  a("bad-hex.yaml", `type: file-raw\nprivateKey: 0x${"zz".repeat(32)}\n`);
  a("short-key.yaml", `type: file-raw\nprivateKey: ${secretHex[7]?.slice(0, -2)}\n`);
  a("no-0x.yaml", `type: file-raw\nprivateKey: ${secretHex[7]?.slice(2)}\n`);
  a("zero-key.yaml", `type: file-raw\nprivateKey: 0x${"00".repeat(32)}\n`);
  a("order-key.yaml", `type: file-raw\nprivateKey: 0x${CURVE_ORDER.toString(16)}\n`);
  a("hashicorp.yaml", "type: hashicorp\nkeyPath: /v1/secret/data/key\n");
  a("secp.yaml", `type: file-raw\nkeyType: SECP256K1\nprivateKey: ${secretHex[7]}\n`);
  a("missing-keystore.yaml", keystoreDescriptor("gone.json", "k4.password"));
  a("garbage.json", "{ not json");
  a("garbage-keystore.yaml", keystoreDescriptor("garbage.json", "k4.password"));
  const v3 = encryptKeystore(secrets[5] ?? new Uint8Array(), "pw5", pubkeys[5]);
  v3.version = 3;
  a("v3.json", JSON.stringify(v3));
  a("v3-keystore.yaml", keystoreDescriptor("v3.json", "k4.password"));
  writeKeystore("k5.json", 5, "pw5", pubkeys[5]);
  a("no-password-file.yaml", keystoreDescriptor("k5.json", "k5.password"));
  a("k5-wrong.password", "not-pw5\n");
  a("wrong-password.yaml", keystoreDescriptor("k5.json", "k5-wrong.password"));
  writeKeystore("k6-mismatch.json", 6, "pw6", pubkeys[0]);
  a("k6.password", "pw6");
  a("pubkey-mismatch.yaml", keystoreDescriptor("k6-mismatch.json", "k6.password"));
  // Sorts after raw0.yaml, so raw0.yaml is "first".
  a("zz-duplicate.yaml", raw(0));
  // Multi-document file with one good and one bad document: only the bad one fails.
  a("multi-partial.yaml", `${raw(5)}---\ntype: file-raw\nprivateKey: 0x1234\n`);

  // Directory B: one more raw key and a duplicate of a keystore key from A.
  writeFileSync(join(dirB, "raw6.yaml"), raw(6));
  writeFileSync(join(dirB, "dup-of-ks2.yaml"), raw(2));

  broken = [
    [missingDir, "key directory not found"],
    [plainFile, "not a directory"],
    ["dangling.yaml", "not found"],
    ["dirlink.yaml", "is a directory"],
    ["malformed.yaml", "malformed YAML at line"],
    ["empty.yaml", "descriptor file is empty"],
    ["sequence.yaml", "descriptor must be a YAML mapping, got a sequence"],
    ["scalar.yaml", "descriptor must be a YAML mapping, got a scalar"],
    ["no-type.yaml", "descriptor has no 'type'"],
    ["no-private-key.yaml", "file-raw descriptor has no 'privateKey'"],
    ["no-password-field.yaml", "file-keystore descriptor has no 'keystorePasswordFile'"],
    ["bad-hex.yaml", "contains non-hex characters"],
    ["short-key.yaml", "has 62 hex digits"],
    ["no-0x.yaml", "does not start with 0x"],
    ["zero-key.yaml", "invalid private key: BLS secret key is zero"],
    ["order-key.yaml", "invalid private key: BLS secret key is not below the curve order"],
    ["hashicorp.yaml", 'unsupported descriptor type "hashicorp"'],
    ["secp.yaml", 'unsupported keyType "SECP256K1"'],
    ["missing-keystore.yaml", `keystore file ${join(dirA, "gone.json")}: not found`],
    ["garbage-keystore.yaml", `keystore file ${join(dirA, "garbage.json")} is not valid JSON`],
    ["v3-keystore.yaml", "version 3 is unsupported (must be 4)"],
    ["no-password-file.yaml", `password file ${join(dirA, "k5.password")}: not found`],
    ["wrong-password.yaml", "wrong password or corrupted keystore"],
    ["pubkey-mismatch.yaml", "does not match the decrypted key"],
    ["zz-duplicate.yaml", `duplicate of ${join(dirA, "raw0.yaml")}`],
    ["multi-partial.yaml", "document 2 of 2: file-raw privateKey must be 0x followed by 64"],
    [join(dirB, "dup-of-ks2.yaml"), `duplicate of ${join(dirA, "ks2.yaml")}`],
  ].map(([file, reason]) => [file?.startsWith("/") ? file : join(dirA, file ?? ""), reason ?? ""]);
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

function memoryLogger() {
  const lines: string[] = [];
  const logger = testLogger("debug", lines);
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, records };
}

async function loadAll(concurrency: number, backend: BlsBackend = bls) {
  const log = memoryLogger();
  const result = await loadFilesystemKeys({
    paths: [dirA, missingDir, plainFile, dirB],
    keystoreConcurrency: concurrency,
    rawConcurrency: concurrency,
    bls: backend,
    logger: log.logger,
  });
  return { result, log };
}

const GOOD: [string, number | "vector"][] = [
  ["ks2.yaml", 2],
  // "multi-partial" sorts before "multi.yaml" ("-" < ".").
  ["multi-partial.yaml", 5],
  ["multi.yaml", 3],
  ["multi.yaml", 4],
  ["raw0.yaml", 0],
  ["raw1.yml", 1],
  ["vector.yaml", "vector"],
];

function checkResult(result: FilesystemLoadResult) {
  const expectedKeys = [
    ...GOOD.map(([file, i]) => ({
      file: join(dirA, file),
      pubkey: i === "vector" ? VECTOR_PUBKEY : (pubkeys[i] ?? ""),
    })),
    { file: join(dirB, "raw6.yaml"), pubkey: pubkeys[6] ?? "" },
  ];
  expect(result.keys.map(({ file, pubkey }) => ({ file, pubkey }))).toEqual(expectedKeys);
  for (const { key, pubkey } of result.keys) expect(hex(key.publicKey)).toBe(pubkey);

  const failures = new Map(result.failures.map((f) => [f.file, f.reason]));
  expect(result.failures).toHaveLength(failures.size);
  expect([...failures.keys()].sort()).toEqual(broken.map(([file]) => file).sort());
  for (const [file, reason] of broken) {
    expect({ file, reason: failures.get(file) }).toEqual({
      file,
      reason: expect.stringContaining(reason),
    });
  }
}

describe("loadFilesystemKeys", () => {
  test("loads exactly the good keys from two directories; each broken file fails with its reason", async () => {
    const { result, log } = await loadAll(4);
    checkResult(result);

    const records = log.records();
    for (const [file, reason] of broken) {
      const line = records.find((r) => r.msg === "key not loaded" && r.file === file);
      expect({ file, reason: line?.reason }).toEqual({
        file,
        reason: expect.stringContaining(reason),
      });
    }
    const summary = records.filter((r) => r.level === "info");
    expect(summary).toHaveLength(1);
    expect(summary[0]).toMatchObject({ loaded: 8, failed: broken.length });
    expect(typeof summary[0]?.elapsed_ms).toBe("number");

    // No secret ever reaches the log: private keys (with or without 0x) and passwords.
    const text = log.lines.join("");
    for (const secret of secretHex) expect(text).not.toContain(secret.slice(2));
    for (const password of [PASSWORD_WITH_SPACES, "pw4", "pw5", "not-pw5", "pw6", "testpassword"]) {
      expect(text).not.toContain(password);
    }
  });

  test("concurrency 1 gives the same result", async () => {
    const { result } = await loadAll(1);
    checkResult(result);
  });

  test("each imported secret is zeroed after import", async () => {
    const seen: Uint8Array[] = [];
    const spy: BlsBackend = {
      ...bls,
      name: bls.name,
      importSecretKey(secret) {
        seen.push(secret);
        return bls.importSecretKey(secret);
      },
    };
    const { result } = await loadAll(8, spy);
    checkResult(result);
    // Good keys, the two invalid scalars, the pubkey mismatch and the duplicates.
    expect(seen.length).toBeGreaterThanOrEqual(result.keys.length + 3);
    for (const secret of seen) expect(secret.every((b) => b === 0)).toBe(true);
  });

  test("no paths: nothing loaded, summary still logged", async () => {
    const log = memoryLogger();
    const result = await loadFilesystemKeys({
      paths: [],
      keystoreConcurrency: 1,
      rawConcurrency: 1,
      bls,
      logger: log.logger,
    });
    expect(result).toEqual({ keys: [], reused: [], failures: [] });
    expect(log.records()).toMatchObject([{ level: "info", loaded: 0, failed: 0 }]);
  });

  test("a directory listed twice is loaded once", async () => {
    const log = memoryLogger();
    const result = await loadFilesystemKeys({
      paths: [dirB, `${dirB}/`],
      keystoreConcurrency: 2,
      rawConcurrency: 2,
      bls,
      logger: log.logger,
    });
    expect(result.keys.map((k) => k.pubkey)).toEqual(pubkeys.filter((_, i) => i === 2 || i === 6));
    expect(result.failures).toEqual([]);
    expect(log.records().some((r) => r.level === "warn" && r.path === dirB)).toBe(true);
  });

  test("a copied vector keystore loads with the file's password", async () => {
    const dir = mkdtempSync(join(root, "vec-"));
    copyFileSync(join(dirA, "vector.json"), join(dir, "v.json"));
    writeFileSync(join(dir, "v.password"), "testpassword");
    writeFileSync(
      join(dir, "v.yaml"),
      "type: file-keystore\nkeystoreFile: v.json\nkeystorePasswordFile: v.password\n",
    );
    const { logger } = memoryLogger();
    const result = await loadFilesystemKeys({
      paths: [dir],
      keystoreConcurrency: 1,
      rawConcurrency: 1,
      bls,
      logger,
    });
    expect(result.keys.map((k) => k.pubkey)).toEqual([VECTOR_PUBKEY]);
  });
});

describe("loadFilesystemKeys with the BLS worker pool (public keys derived in its workers)", () => {
  let pool: BlsWorkerPool;
  beforeAll(async () => {
    pool = await createPooledBackend(createBlstBackend(), { workers: 2, backendName: "blst" });
  });
  afterAll(() => pool?.close());

  test("gives the same keys and failures, in the same order", async () => {
    const { result } = await loadAll(4, pool);
    checkResult(result);
  });

  test("many raw keys, several batches, invalid and duplicate ones among them: every key where it belongs, every secret zeroed", async () => {
    const dir = mkdtempSync(join(root, "many-"));
    const count = 700;
    const manySecrets = Array.from({ length: count }, (_, i) => interopSecret(100 + i));
    const name = (i: number) => `k${String(i).padStart(4, "0")}.yaml`;
    const zero = new Set([5, 300, 650]);
    const duplicate = new Map([
      [400, 10],
      [699, 698],
    ]);
    for (let i = 0; i < count; i++) {
      const secret = zero.has(i)
        ? new Uint8Array(32)
        : (manySecrets[duplicate.get(i) ?? i] as Uint8Array);
      writeFileSync(join(dir, name(i)), `type: file-raw\nprivateKey: ${hex(secret)}\n`);
    }
    const handed: Uint8Array[] = [];
    const spy: BlsBackend = {
      name: pool.name,
      importSecretKey: (secret) => pool.importSecretKey(secret),
      importSecretKeys(secrets) {
        handed.push(...secrets);
        return pool.importSecretKeys(secrets);
      },
      sign: (key, message) => pool.sign(key, message),
      verify: (...args) => pool.verify(...args),
    };
    const log = memoryLogger();
    const result = await loadFilesystemKeys({
      paths: [dir],
      keystoreConcurrency: 8,
      rawConcurrency: 64,
      bls: spy,
      logger: log.logger,
    });
    const good = Array.from({ length: count }, (_, i) => i).filter(
      (i) => !zero.has(i) && !duplicate.has(i),
    );
    // Expected public keys from noble, an implementation independent of the workers' blst.
    expect(result.keys.map(({ file, pubkey }) => ({ file, pubkey }))).toEqual(
      good.map((i) => ({
        file: join(dir, name(i)),
        pubkey: hex(bls.importSecretKey(manySecrets[i] as Uint8Array).publicKey),
      })),
    );
    expect(result.failures).toEqual([
      ...[...zero, ...duplicate.keys()]
        .sort((a, b) => a - b)
        .map((i) => ({
          file: join(dir, name(i)),
          reason: zero.has(i)
            ? "invalid private key: BLS secret key is zero"
            : expect.stringContaining(`duplicate of ${join(dir, name(duplicate.get(i) ?? 0))}`),
          // A duplicate names the key it repeats (the key service tells it read-only by that).
          ...(duplicate.has(i)
            ? {
                pubkey: hex(
                  bls.importSecretKey(manySecrets[duplicate.get(i) ?? 0] as Uint8Array).publicKey,
                ),
              }
            : {}),
        })),
    ]);
    expect(handed).toHaveLength(count);
    expect(handed.every((secret) => secret.every((b) => b === 0))).toBe(true);
    const message = new Uint8Array(32).fill(7);
    const last = result.keys.at(-1);
    expect(
      bls.verify(hex32(last?.pubkey), message, await pool.sign(last?.key as never, message)),
    ).toBe(true);
    for (const secret of manySecrets) {
      expect(log.lines.join("")).not.toContain(hex(secret).slice(2));
    }
  });
});

describe("key files open to group or others", () => {
  test("raw-key descriptors, keystores and password files with loose modes are named in a warning; keystore-only descriptors and 0600 files are not", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sigil-modes-"));
    try {
      const file = (name: string, text: string, mode: number) => {
        writeFileSync(join(dir, name), text);
        chmodSync(join(dir, name), mode);
        return join(dir, name);
      };
      const looseRaw = file(
        "raw-loose.yaml",
        `type: file-raw\nprivateKey: ${secretHex[0]}\n`,
        0o644,
      );
      file("raw-tight.yaml", `type: file-raw\nprivateKey: ${secretHex[1]}\n`, 0o600);
      const keystore = file(
        "k2.json",
        JSON.stringify(encryptKeystore(secrets[2] ?? new Uint8Array(), "pw2", pubkeys[2])),
        0o640,
      );
      const password = file("k2.password", "pw2", 0o604);
      file(
        "ks2.yaml",
        `type: file-keystore\nkeystoreFile: k2.json\nkeystorePasswordFile: k2.password\n`,
        0o644,
      );
      const log = memoryLogger();
      const result = await loadFilesystemKeys({
        paths: [dir],
        keystoreConcurrency: 2,
        rawConcurrency: 2,
        bls,
        logger: log.logger,
      });
      expect(result.keys.map((k) => k.pubkey).sort()).toEqual(pubkeys.slice(0, 3).sort());
      const warned = log
        .records()
        .filter((r) => r.level === "warn" && String(r.msg).includes("chmod 600"))
        .map((r) => [r.file, r.mode]);
      expect(warned).toEqual([
        [keystore, "0640"],
        [password, "0604"],
        [looseRaw, "0644"],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("createSemaphore", () => {
  test("never runs more than the limit at once and runs everything", async () => {
    const limit = createSemaphore(3);
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limit.run(async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 1 + (i % 3)));
          running--;
          done.push(i);
        }),
      ),
    );
    expect(peak).toBe(3);
    expect(done.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  test("a failing task releases its slot", async () => {
    const limit = createSemaphore(1);
    await expect(limit.run(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await limit.run(() => 42)).toBe(42);
  });

  test("refuses a limit below 1", () => {
    expect(() => createSemaphore(0)).toThrow(RangeError);
  });
});
