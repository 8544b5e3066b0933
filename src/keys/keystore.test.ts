import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createNobleBackend } from "../bls/noble";
import {
  decryptKeystore,
  KeystoreError,
  keystorePubkey,
  normalizePassword,
  verifyKeystorePubkey,
} from "./keystore";

const VECTORS = join(import.meta.dir, "../../test/vectors/eip2335-keystores");

interface ValidVector {
  password: string;
  password_normalized_utf8_hex: string;
  expected_secret: string;
  expected_pubkey?: string;
  keystore: Record<string, unknown>;
}

interface InvalidVector {
  reason: string;
  password: string;
  keystore: Record<string, unknown>;
}

function load<T>(...parts: string[]): T {
  return JSON.parse(readFileSync(join(VECTORS, ...parts), "utf8")) as T;
}

const validNames = readdirSync(join(VECTORS, "valid")).filter((n) => n.endsWith(".json"));
const invalidNames = readdirSync(join(VECTORS, "invalid")).filter((n) => n.endsWith(".json"));
const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;
const bls = createNobleBackend();

/** Fresh deep copy of a vector's keystore, for tests that tamper with it. */
function pbkdf2Keystore(): { keystore: Record<string, unknown>; password: string } {
  const v = load<ValidVector>("valid", "chainsafe_pbkdf2_testpassword.json");
  return { keystore: structuredClone(v.keystore), password: v.password };
}

async function refusal(promise: Promise<unknown>): Promise<KeystoreError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof KeystoreError) return err;
    throw err;
  }
  throw new Error("expected a KeystoreError, but decryption succeeded");
}

describe("valid vectors", () => {
  test("there are 5", () => expect(validNames).toHaveLength(5));

  // Each scrypt vector costs ~1 s (n=2^18); each runs exactly once here. The official EIP scrypt
  // vector runs in the event-loop test below instead.
  const here = validNames.filter((n) => n !== "eip2335_scrypt.json");
  test.each(here)("%s decrypts to the expected secret and pubkey", async (name) => {
    const v = load<ValidVector>("valid", name);
    const secret = await decryptKeystore(v.keystore, v.password);
    expect(hex(secret)).toBe(v.expected_secret);
    expect(hex(normalizePassword(v.password))).toBe(v.password_normalized_utf8_hex);
    const key = bls.importSecretKey(secret);
    if (v.expected_pubkey !== undefined) expect(hex(key.publicKey)).toBe(v.expected_pubkey);
    expect(keystorePubkey(v.keystore)).toBe(hex(key.publicKey));
    expect(() => verifyKeystorePubkey(v.keystore, key.publicKey)).not.toThrow();
  });

  test("the event loop keeps running while scrypt (n=2^18) decrypts eip2335_scrypt.json", async () => {
    const v = load<ValidVector>("valid", "eip2335_scrypt.json");
    let ticks = 0;
    let last = performance.now();
    let maxGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 5);
    const started = performance.now();
    let secret: Uint8Array;
    try {
      secret = await decryptKeystore(v.keystore, v.password);
    } finally {
      clearInterval(timer);
    }
    const elapsed = performance.now() - started;
    expect(hex(secret)).toBe(v.expected_secret);
    expect(hex(bls.importSecretKey(secret).publicKey)).toBe(v.expected_pubkey ?? "");
    // A KDF on the event loop would give ~0 ticks and one gap as long as the whole run.
    expect(elapsed).toBeGreaterThan(100);
    expect(ticks).toBeGreaterThan(elapsed / 5 / 4);
    expect(maxGap).toBeLessThan(Math.max(100, elapsed / 4));
  });
});

describe("invalid vectors are refused before any KDF runs", () => {
  test("there are 9", () => expect(invalidNames).toHaveLength(9));

  const expectedReason: Record<string, RegExp> = {
    "web3signer_missingCrypto.json": /no 'crypto'/,
    "web3signer_missingKdfSectionTestVector.json": /crypto\.kdf has no 'params'/,
    "web3signer_missingVersion.json": /no 'version'/,
    "web3signer_unsupportedChecksumFunction.json": /checksum function "sha128" is unsupported/,
    "web3signer_unsupportedCipherFunction.json": /cipher function "aes-256-ctr" is unsupported/,
    "web3signer_unsupportedDkLen.json": /dklen = 31 is unsupported/,
    "web3signer_unsupportedKdfFunction.json": /kdf function "pbkdf3" is unsupported/,
    "web3signer_unsupportedPBKDF2Prf.json": /prf "hmac-sha512" is unsupported/,
    "web3signer_v3TestVector.json": /version 3 is unsupported \(must be 4\)/,
  };

  test("every vector has an expectation", () => {
    expect([...invalidNames].sort()).toEqual(Object.keys(expectedReason).sort());
  });

  test.each(invalidNames)("%s", async (name) => {
    const v = load<InvalidVector>("invalid", name);
    const started = performance.now();
    const err = await refusal(decryptKeystore(v.keystore, v.password));
    // The scrypt vectors (8 of 9) use n=2^18, ~1 s: had the KDF run, this would take far longer.
    expect(performance.now() - started).toBeLessThan(200);
    expect(err.reason).toMatch(expectedReason[name] ?? /^never$/);
    expect(err.message).toBe(err.reason);
    expect(err.message).not.toContain(v.password);
  });
});

describe("decryption failures", () => {
  test("a wrong password fails the checksum", async () => {
    const { keystore } = pbkdf2Keystore();
    const err = await refusal(decryptKeystore(keystore, "invalidpassword"));
    expect(err.reason).toContain("wrong password or corrupted keystore");
    expect(err.message).not.toContain("invalidpassword");
  });

  test("a corrupted cipher message fails the checksum", async () => {
    const { keystore, password } = pbkdf2Keystore();
    const cipher = (keystore.crypto as { cipher: { message: string } }).cipher;
    cipher.message = `00${cipher.message.slice(2)}`;
    const err = await refusal(decryptKeystore(keystore, password));
    expect(err.reason).toContain("wrong password or corrupted keystore");
  });

  test("a keystore without pubkey decrypts; a mismatching pubkey is detected", async () => {
    const { keystore, password } = pbkdf2Keystore();
    delete keystore.pubkey;
    expect(keystorePubkey(keystore)).toBeUndefined();
    const key = bls.importSecretKey(await decryptKeystore(keystore, password));
    expect(() => verifyKeystorePubkey(keystore, key.publicKey)).not.toThrow();

    const other = bls.importSecretKey(new Uint8Array(32).fill(1)).publicKey;
    keystore.pubkey = Buffer.from(other).toString("hex");
    let err: unknown;
    try {
      verifyKeystorePubkey(keystore, key.publicKey);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KeystoreError);
    expect((err as KeystoreError).reason).toContain("does not match the decrypted key");
  });

  test("a malformed pubkey field is refused before decryption", async () => {
    const { keystore, password } = pbkdf2Keystore();
    keystore.pubkey = "abcd";
    const err = await refusal(decryptKeystore(keystore, password));
    expect(err.reason).toBe("pubkey must be 48 bytes, got 2");
  });
});

describe("structure and cost checks", () => {
  type Mutate = (crypto: {
    kdf: { function: string; params: Record<string, unknown> };
    checksum: Record<string, unknown>;
    cipher: { function: string; params: Record<string, unknown>; message: string };
  }) => void;

  const scryptCase = (mutate: Mutate) => {
    const v = load<ValidVector>("valid", "eip2335_scrypt.json");
    mutate(v.keystore.crypto as Parameters<Mutate>[0]);
    return decryptKeystore(v.keystore, v.password);
  };
  const pbkdf2Case = (mutate: Mutate) => {
    const { keystore, password } = pbkdf2Keystore();
    mutate(keystore.crypto as Parameters<Mutate>[0]);
    return decryptKeystore(keystore, password);
  };

  const cases: [string, () => Promise<unknown>, RegExp][] = [
    ["not an object", () => decryptKeystore([], "x"), /must be a JSON object/],
    ["version as a string", () => decryptKeystore({ version: "4" }, "x"), /version "4"/],
    [
      "scrypt n not a power of two",
      () => scryptCase((c) => (c.kdf.params.n = 3000)),
      /n = 3000 is not a power of two/,
    ],
    [
      "scrypt n above 2^20 (cost guard)",
      () => scryptCase((c) => (c.kdf.params.n = 2 ** 21)),
      /n = 2097152 exceeds the limit 1048576 \(refused as too costly/,
    ],
    [
      "scrypt p above 16 (cost guard)",
      () => scryptCase((c) => (c.kdf.params.p = 1000)),
      /p = 1000 exceeds the limit 16/,
    ],
    [
      "scrypt memory above 1 GiB (cost guard)",
      () =>
        scryptCase((c) => {
          c.kdf.params.n = 2 ** 20;
          c.kdf.params.r = 16;
        }),
      /needs more than 1 GiB/,
    ],
    ["scrypt without r", () => scryptCase((c) => delete c.kdf.params.r), /has no 'r'/],
    [
      "scrypt r as a string",
      () => scryptCase((c) => (c.kdf.params.r = "8")),
      /r must be an integer/,
    ],
    [
      "pbkdf2 c above 2^24 (cost guard)",
      () => pbkdf2Case((c) => (c.kdf.params.c = 2 ** 25)),
      /c = 33554432 exceeds the limit 16777216/,
    ],
    ["pbkdf2 c = 0", () => pbkdf2Case((c) => (c.kdf.params.c = 0)), /c must be at least 1/],
    ["pbkdf2 dklen 64", () => pbkdf2Case((c) => (c.kdf.params.dklen = 64)), /dklen = 64/],
    ["salt not hex", () => pbkdf2Case((c) => (c.kdf.params.salt = "xyz")), /salt is not valid hex/],
    [
      "iv of 8 bytes",
      () => pbkdf2Case((c) => (c.cipher.params.iv = "00".repeat(8))),
      /iv must be 16 bytes, got 8/,
    ],
    [
      "cipher message of 31 bytes",
      () => pbkdf2Case((c) => (c.cipher.message = "00".repeat(31))),
      /cipher\.message must be 32 bytes, got 31/,
    ],
    [
      "checksum message of 31 bytes",
      () => pbkdf2Case((c) => (c.checksum.message = "00".repeat(31))),
      /checksum\.message must be 32 bytes/,
    ],
    [
      "no cipher",
      () => pbkdf2Case((c) => delete (c as Record<string, unknown>).cipher),
      /no 'cipher'/,
    ],
  ];

  test.each(cases)("%s", async (_name, run, reason) => {
    const started = performance.now();
    const err = await refusal(run());
    expect(err.reason).toMatch(reason);
    // The cost-guard cases would take seconds (and over 1 GiB) had the KDF run.
    expect(performance.now() - started).toBeLessThan(200);
  });

  test("hex with a 0x prefix is tolerated", async () => {
    const { keystore, password } = pbkdf2Keystore();
    const crypto = keystore.crypto as { cipher: { message: string } };
    crypto.cipher.message = `0x${crypto.cipher.message}`;
    keystore.pubkey = `0x${String(keystore.pubkey).toUpperCase()}`;
    const secret = await decryptKeystore(keystore, password);
    expect(hex(secret)).toBe("0x000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f");
    expect(keystorePubkey(keystore)).toBe(hex(bls.importSecretKey(secret).publicKey));
  });
});

describe("password normalization", () => {
  const { cases } = load<{ cases: { password: string; expected_utf8_hex: string }[] }>(
    "password_normalization.json",
  );

  test.each(cases.map((c) => [JSON.stringify(c.password), c] as const))("%s", (_label, c) => {
    expect(hex(normalizePassword(c.password))).toBe(c.expected_utf8_hex);
  });

  test("DEL and C1 controls are removed; other non-ASCII is kept", () => {
    expect(normalizePassword("a\u007fb\u0080c\u009fd\u00a0e").toString("utf8")).toBe("abcd e");
    // NFKD: U+00A0 NO-BREAK SPACE becomes a plain space; é decomposes to e + U+0301.
    expect(hex(normalizePassword("é"))).toBe("0x65cc81");
  });
});
