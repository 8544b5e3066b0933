// The start-up path with the raw keys' public-key cache (src/keys/pubkey-cache.ts): whatever is
// in the cache file, and whatever the descriptors hold, a start loads exactly the keys and refuses
// exactly the descriptors a start without the cache does, each key under its true public key (the
// public keys come from noble, independently of the blst workers that load them), and every key
// signs what noble verifies under that public key. An entry only the secret's holder could make,
// but wrong, lists the key under that wrong public key and the key never signs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PUBLIC_KEY_MISMATCH } from "../../src/bls/backend";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { type BlsWorkerPool, createPooledBackend } from "../../src/bls/pool";
import { FilesystemSource } from "../../src/keys/sources/filesystem";
import type { SourceSnapshot } from "../../src/keys/sources/source";
import { testLogger } from "../support/log-capture";

const noble = createNobleBackend();
const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;
const CURVE_ORDER = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";

/** Secrets 0x…01, 0x…02, … (valid scalars), and their public keys as noble derives them. */
const KEYS = 6;
const secretOf = (i: number) => {
  const secret = new Uint8Array(32);
  secret[31] = i + 1;
  secret[0] = 0x11;
  return secret;
};
const secrets = Array.from({ length: KEYS }, (_, i) => secretOf(i));
const truth = secrets.map((secret) => noble.importSecretKey(secret).publicKey);
const truthHex = truth.map(hex);
/** Descriptors that load a key: one per key, and a second one of key 0 (refused, a duplicate). */
const RAW_DESCRIPTORS = KEYS + 1;

/** The cache's format, written again here from docs/keys.md (not from pubkey-cache.ts). */
const HEADER = "sigil-pubkey-cache/1\n";
const RECORD = 80;
const mac = (secret: Uint8Array, ...parts: (string | Uint8Array)[]) => {
  const h = createHmac("sha256", secret);
  for (const part of parts) h.update(part);
  return h.digest().subarray(0, 16);
};
const entry = (secret: Uint8Array, pubkey: Uint8Array) =>
  Buffer.concat([
    mac(secret, "sigil-pubkey-cache/1/id"),
    pubkey,
    mac(secret, "sigil-pubkey-cache/1/pubkey", pubkey),
  ]);

let root: string;
let keysDir: string;
let pool: BlsWorkerPool;
/** What a start without the cache loads and refuses: the reference for every other start. */
let reference: { pubkeys: string[]; failures: string[] };

const bad: Record<string, string> = {
  "zero.yaml": `type: file-raw\nprivateKey: "0x${"00".repeat(32)}"\n`,
  "order.yaml": `type: file-raw\nprivateKey: "0x${CURVE_ORDER}"\n`,
  "short.yaml": `type: file-raw\nprivateKey: "0x${"11".repeat(31)}"\n`,
  "not-hex.yaml": `type: file-raw\nprivateKey: "0x${"zz".repeat(32)}"\n`,
  "sequence.yaml": "- type: file-raw\n",
};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "sigil-pubkey-cache-"));
  keysDir = join(root, "keys");
  mkdirSync(keysDir);
  secrets.forEach((secret, i) => {
    writeFileSync(join(keysDir, `raw${i}.yaml`), `type: file-raw\nprivateKey: "${hex(secret)}"\n`);
  });
  // The same key twice: the second file is a duplicate, with or without the cache.
  writeFileSync(
    join(keysDir, "raw9-dup.yaml"),
    `type: file-raw\nprivateKey: "${hex(secrets[0] as Uint8Array)}"\n`,
  );
  for (const [name, text] of Object.entries(bad)) writeFileSync(join(keysDir, name), text);
  pool = await createPooledBackend(createBlstBackend(), { workers: 2, backendName: "blst" });
  reference = outcome(await start(undefined));
});

afterAll(async () => {
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

/** One start of the filesystem source, as `sigil serve` makes it; `cachePath` turns the cache on. */
async function start(cachePath: string | undefined, lines?: string[]): Promise<SourceSnapshot> {
  const source = new FilesystemSource({
    paths: [keysDir],
    keystoreConcurrency: 2,
    rawConcurrency: 8,
    bls: pool,
    logger: testLogger("debug", lines),
    ...(cachePath === undefined ? {} : { cachePath }),
  });
  try {
    return await source.load(() => undefined);
  } finally {
    source.close();
  }
}

function outcome(snapshot: SourceSnapshot): { pubkeys: string[]; failures: string[] } {
  return {
    pubkeys: snapshot.keys.map((key) => key.pubkey),
    failures: snapshot.failures.map((f) => `${f.where.split("/").pop()}: ${f.reason}`).sort(),
  };
}

/** Every key signs, and noble verifies each signature under the key's true public key. */
async function expectEveryKeySigns(snapshot: SourceSnapshot): Promise<void> {
  const message = new Uint8Array(32).fill(7);
  for (const { pubkey, key } of snapshot.keys) {
    if (key === undefined) throw new Error("a first load has every key");
    const i = truthHex.indexOf(pubkey);
    expect(i).toBeGreaterThanOrEqual(0);
    const signature = await pool.sign(key, message);
    expect(noble.verify(truth[i] as Uint8Array, message, signature)).toBe(true);
  }
}

/** The `public-key cache` log line of a start. */
function cacheLine(lines: string[]): Record<string, unknown> {
  const line = lines.find((l) => l.includes('"msg":"public-key cache"'));
  if (line === undefined) throw new Error(`no public-key cache line in ${lines.join("\n")}`);
  return JSON.parse(line) as Record<string, unknown>;
}

test("the reference: a start without the cache loads the good keys and refuses the rest", () => {
  expect(reference.pubkeys).toEqual(truthHex);
  expect(reference.failures).toHaveLength(Object.keys(bad).length + 1);
  expect(reference.failures.join("\n")).toContain("raw9-dup.yaml: duplicate of");
  expect(reference.failures.join("\n")).toContain(
    "zero.yaml: invalid private key: BLS secret key is zero",
  );
  expect(reference.failures.join("\n")).toContain(
    "order.yaml: invalid private key: BLS secret key is not below the curve order",
  );
});

describe("a start with the public-key cache", () => {
  let dir: string;
  let cachePath: string;
  let pubkeysPath: string;
  /** The file a first start wrote. */
  let written: Buffer;

  beforeAll(async () => {
    dir = join(root, "with-cache");
    mkdirSync(dir);
    cachePath = join(dir, "keystore_cache.json");
    pubkeysPath = `${cachePath}.pubkeys`;
    const lines: string[] = [];
    const first = await start(cachePath, lines);
    expect(outcome(first)).toEqual(reference);
    // The duplicate's public key is derived too: the duplicate is found once both are imported.
    expect(cacheLine(lines)).toMatchObject({
      state: "new",
      fromCache: 0,
      derived: RAW_DESCRIPTORS,
    });
    written = readFileSync(pubkeysPath);
    expect(statSync(pubkeysPath).mode & 0o777).toBe(0o600);
  });

  test("the file holds an entry per raw key loaded, in the documented format, and no secret", () => {
    expect(written.subarray(0, HEADER.length).toString()).toBe(HEADER);
    expect(written.length).toBe(HEADER.length + RAW_DESCRIPTORS * RECORD);
    const expected = new Set(
      secrets.map((s, i) => entry(s, truth[i] as Uint8Array).toString("hex")),
    );
    for (let at = HEADER.length; at < written.length; at += RECORD) {
      expect(expected.has(written.subarray(at, at + RECORD).toString("hex"))).toBe(true);
    }
    for (const secret of secrets) expect(written.includes(Buffer.from(secret))).toBe(false);
  });

  test("a restart takes every public key from it, and loads and refuses as without it", async () => {
    const lines: string[] = [];
    const snapshot = await start(cachePath, lines);
    expect(outcome(snapshot)).toEqual(reference);
    expect(cacheLine(lines)).toMatchObject({
      state: "valid",
      fromCache: RAW_DESCRIPTORS,
      derived: 0,
      rejected: 0,
    });
    await expectEveryKeySigns(snapshot);
  });

  /** Each way of damaging the file, and how many entries a start must reject (tag check). */
  const damages: [string, (file: Buffer) => Buffer, number][] = [
    ["a byte of a public key flipped", (f) => flip(f, recordOf(f, 1) + 16 + 5), 1],
    ["a byte of a tag flipped", (f) => flip(f, recordOf(f, 2) + 64 + 3), 1],
    ["a byte of an id flipped (the entry is not found)", (f) => flip(f, recordOf(f, 1) + 2), 0],
    [
      "two entries' public keys and tags swapped",
      (f) => {
        const out = Buffer.from(f);
        const a = recordOf(f, 1) + 16;
        const b = recordOf(f, 2) + 16;
        f.copy(out, a, b, b + 64);
        f.copy(out, b, a, a + 64);
        return out;
      },
      2,
    ],
    [
      "another key's public key with a tag made without this secret",
      (f) => {
        const out = Buffer.from(f);
        const at = recordOf(f, 3) + 16;
        Buffer.from(truth[1] as Uint8Array).copy(out, at);
        mac(secrets[1] as Uint8Array, "sigil-pubkey-cache/1/pubkey", truth[1] as Uint8Array).copy(
          out,
          at + 48,
        );
        return out;
      },
      1,
    ],
    ["truncated mid-entry", (f) => f.subarray(0, f.length - 7), 0],
    ["empty", () => Buffer.alloc(0), 0],
    [
      "another file's header (left alone)",
      (f) => Buffer.concat([Buffer.from("not-a-cache\n"), f]),
      0,
    ],
  ];

  for (const [what, damage, rejected] of damages) {
    test(`${what}: the same keys under their true public keys, the same refusals`, async () => {
      const damaged = damage(written);
      writeFileSync(pubkeysPath, damaged, { mode: 0o600 });
      const lines: string[] = [];
      const snapshot = await start(cachePath, lines);
      expect(outcome(snapshot)).toEqual(reference);
      await expectEveryKeySigns(snapshot);
      if (what.includes("left alone")) {
        expect(lines.some((l) => l.includes("public-key cache not used: path left alone"))).toBe(
          true,
        );
        expect(readFileSync(pubkeysPath).equals(damaged)).toBe(true);
      } else {
        expect(cacheLine(lines).rejected).toBe(rejected);
        // Rebuilt: the next start takes every key from it again.
        const again: string[] = [];
        expect(outcome(await start(cachePath, again))).toEqual(reference);
        expect(cacheLine(again)).toMatchObject({
          state: "valid",
          fromCache: RAW_DESCRIPTORS,
          derived: 0,
        });
      }
      writeFileSync(pubkeysPath, written, { mode: 0o600 });
    });
  }

  test("a descriptor changed to another secret: that key is derived, never the old entry's", async () => {
    const other = secretOf(40);
    const otherPubkey = hex(noble.importSecretKey(other).publicKey);
    const file = join(keysDir, "raw2.yaml");
    const before = readFileSync(file);
    writeFileSync(file, `type: file-raw\nprivateKey: "${hex(other)}"\n`);
    try {
      const lines: string[] = [];
      const snapshot = await start(cachePath, lines);
      expect(snapshot.keys.map((k) => k.pubkey)).toEqual(
        truthHex.map((pubkey, i) => (i === 2 ? otherPubkey : pubkey)),
      );
      expect(cacheLine(lines)).toMatchObject({ fromCache: RAW_DESCRIPTORS - 1, derived: 1 });
      const key = snapshot.keys[2]?.key;
      if (key === undefined) throw new Error("no key");
      const message = new Uint8Array(32).fill(9);
      expect(
        noble.verify(
          Uint8Array.fromHex(otherPubkey.slice(2)),
          message,
          await pool.sign(key, message),
        ),
      ).toBe(true);
    } finally {
      writeFileSync(file, before);
      writeFileSync(pubkeysPath, written, { mode: 0o600 });
    }
  });

  test("an entry made with the secret but a wrong public key: listed under it, never signs", async () => {
    // Only the secret's holder can make this entry (a bug, or someone who could sign anyway).
    const forged = Buffer.from(written);
    const at = recordOf(forged, 3);
    entry(secrets[3] as Uint8Array, truth[5] as Uint8Array).copy(forged, at);
    writeFileSync(pubkeysPath, forged, { mode: 0o600 });
    try {
      const snapshot = await start(cachePath);
      const listed = snapshot.keys.map((k) => k.pubkey);
      // Key 3 claims key 5's public key: the two are one pubkey, so the later file (raw5) is a
      // duplicate, and the wrong claim signs nothing under it.
      expect(listed).toEqual([0, 1, 2, 5, 4].map((i) => truthHex[i] as string));
      const key = snapshot.keys[3]?.key;
      if (key === undefined) throw new Error("no key");
      for (let attempt = 0; attempt < 2; attempt++) {
        const refused = await pool.sign(key, new Uint8Array(32)).then(
          () => "signed",
          (error: unknown) => String(error),
        );
        expect(refused).toContain(PUBLIC_KEY_MISMATCH);
      }
    } finally {
      writeFileSync(pubkeysPath, written, { mode: 0o600 });
    }
  });
});

/** Where the entry of key i starts in a cache file. */
function recordOf(file: Buffer, i: number): number {
  const at = file.indexOf(mac(secrets[i] as Uint8Array, "sigil-pubkey-cache/1/id"));
  if (at < HEADER.length) throw new Error(`no entry for key ${i}`);
  return at;
}

function flip(file: Buffer, at: number): Buffer {
  const out = Buffer.from(file);
  out[at] = (out[at] as number) ^ 0x01;
  return out;
}
