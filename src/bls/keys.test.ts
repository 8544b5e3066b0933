import { describe, expect, test } from "bun:test";
import { inspect } from "node:util";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { be32, hex, loadJsonVectors, unhex } from "../../test/signing/bls-support";
import { type LocalBlsBackend, PUBLIC_KEY_MISMATCH } from "./backend";
import { createBlstBackend } from "./blst";
import { CURVE_ORDER } from "./key";
import { createNobleBackend } from "./noble";

const r = CURVE_ORDER;

test("CURVE_ORDER is noble's BLS12-381 scalar field order", () => {
  expect(r).toBe(bls12_381.fields.Fr.ORDER);
});

/** Whether any usual rendering of the key's bytes appears in `text`. */
function leaks(text: string, key: Uint8Array): boolean {
  if (key.length === 0) return false;
  const lower = text.toLowerCase();
  const h = hex(key).slice(2);
  const significant = h.replace(/^0+/, "");
  return (
    lower.includes(h) ||
    (significant.length >= 8 && lower.includes(significant)) ||
    text.includes(Buffer.from(key).toString("base64")) ||
    text.includes(Array.from(key).join(","))
  );
}

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(Error);
    return (err as Error).message;
  }
  throw new Error("expected a throw");
}

const backends: [string, () => LocalBlsBackend][] = [
  ["noble", createNobleBackend],
  ["blst", createBlstBackend],
];

// A valid secret with recognisable bytes, used to look for leaks in the key handle.
const SECRET = unhex("0x47b8192d77bf871b62e87859d653922725724a5c031afeabc60bcef5ff665138");

describe.each(backends)("%s backend key handling", (_name, create) => {
  const backend = create();

  const refused: [string, Uint8Array][] = [
    ["31 bytes", SECRET.slice(0, 31)],
    ["33 bytes", Uint8Array.from([...SECRET, 0x5a])],
    ["empty", new Uint8Array(0)],
    ["zero", new Uint8Array(32)],
    ["r", be32(r)],
    ["r+1", be32(r + 1n)],
    ["2^256-1", new Uint8Array(32).fill(0xff)],
    ["r with a recognisable tail", be32(r + 0x5138_47b8_192dn)],
  ];
  for (const [label, secret] of refused) {
    test(`refuses ${label} with a plain Error that does not contain the key`, () => {
      const message = messageOf(() => backend.importSecretKey(secret));
      expect(message).toMatch(/BLS secret key/);
      expect(leaks(message, secret)).toBe(false);
    });
  }

  test("accepts r-1 and 1, and signs with them", () => {
    for (const secret of [be32(r - 1n), be32(1n)]) {
      const key = backend.importSecretKey(secret);
      const msg = new Uint8Array(32).fill(7);
      expect(backend.verify(key.publicKey, msg, backend.sign(key, msg))).toBe(true);
    }
  });

  test("the key handle shows only the public key", () => {
    const key = backend.importSecretKey(SECRET);
    const pk = hex(key.publicKey);
    const renderings = [
      JSON.stringify(key),
      JSON.stringify({ key }),
      String(key),
      `${key}`,
      inspect(key, { showHidden: true, depth: 5 }),
      Bun.inspect(key),
      JSON.stringify(Object.getOwnPropertyDescriptors(key)),
    ];
    expect(leaks(`x ${hex(SECRET)} y`, SECRET)).toBe(true); // the detector itself works
    for (const text of renderings) expect(leaks(text, SECRET)).toBe(false);
    expect(JSON.parse(JSON.stringify(key))).toEqual({ backend: backend.name, publicKey: pk });
    expect(String(key)).toContain(pk);
    expect(inspect(key)).toContain(pk);
    expect(Object.keys(key)).toEqual([]);
    expect(Object.isFrozen(key)).toBe(true);
  });

  test("the public key cannot be altered through the handle", () => {
    const key = backend.importSecretKey(SECRET);
    const before = hex(key.publicKey);
    key.publicKey.fill(0);
    expect(hex(key.publicKey)).toBe(before);
  });

  test("the caller zeroing its copy of the secret does not affect the key", () => {
    const secret = SECRET.slice();
    const key = backend.importSecretKey(secret);
    secret.fill(0);
    const msg = new Uint8Array(32);
    expect(backend.verify(key.publicKey, msg, backend.sign(key, msg))).toBe(true);
  });

  test("refuses a key handle it did not issue", () => {
    const other = create().importSecretKey(SECRET);
    expect(() => backend.sign(other, new Uint8Array(32))).toThrow(/not imported/);
    const lookalike = { publicKey: other.publicKey, pubkey: other.pubkey };
    expect(() => backend.sign(lookalike, new Uint8Array(32))).toThrow(/not imported/);
  });

  test("verify returns false, never throws, on malformed input", () => {
    const valid = loadJsonVectors().verify.find((v) => v.output);
    if (valid === undefined) throw new Error("no valid verify vector");
    const pk = unhex(valid.input.pubkey);
    const msg = unhex(valid.input.message);
    const sig = unhex(valid.input.signature);
    expect(backend.verify(pk, msg, sig)).toBe(true);

    const infinityPk = new Uint8Array(48);
    infinityPk[0] = 0xc0;
    const infinitySig = new Uint8Array(96);
    infinitySig[0] = 0xc0;
    const uncompressedPk = bls12_381.G1.Point.fromBytes(pk).toBytes(false);
    const flipped = (bytes: Uint8Array, i: number, mask: number) => {
      const out = bytes.slice();
      out[i] = (out[i] ?? 0) ^ mask;
      return out;
    };
    const bad: [Uint8Array, Uint8Array, Uint8Array][] = [
      [pk.slice(0, 47), msg, sig],
      [pk, msg, sig.slice(0, 95)],
      [new Uint8Array(0), new Uint8Array(0), new Uint8Array(0)],
      [uncompressedPk, msg, sig],
      [infinityPk, msg, sig],
      [pk, msg, infinitySig],
      [infinityPk, msg, infinitySig],
      [new Uint8Array(48), msg, sig],
      [pk, msg, new Uint8Array(96)],
      [new Uint8Array(48).fill(0xff), msg, sig],
      [pk, msg, new Uint8Array(96).fill(0xff)],
      [flipped(pk, 0, 0x80), msg, sig], // compression flag cleared
      [flipped(pk, 47, 0x01), msg, sig], // likely not on the curve
      [flipped(pk, 0, 0x20), msg, sig], // other y: the negated key
      [pk, msg, flipped(sig, 95, 0x01)],
      [pk, msg, flipped(sig, 0, 0x20)],
      [pk, flipped(msg, 0, 0x01), sig],
    ];
    for (const [p, m, s] of bad) expect(backend.verify(p, m, s)).toBe(false);
    // Not even for values outside the declared types.
    const junk = [undefined, null, "0x00", 42, {}] as unknown as Uint8Array[];
    for (const j of junk) {
      expect(backend.verify(j, msg, sig)).toBe(false);
      expect(backend.verify(pk, j, sig)).toBe(false);
      expect(backend.verify(pk, msg, j)).toBe(false);
    }
  });

  test("signs messages of any length, including empty", () => {
    const key = backend.importSecretKey(SECRET);
    for (const msg of [new Uint8Array(0), new Uint8Array(1), new Uint8Array(1000).fill(3)]) {
      const sig = backend.sign(key, msg);
      expect(sig).toHaveLength(96);
      expect(backend.verify(key.publicKey, msg, sig)).toBe(true);
    }
  });

  test("the handle's pubkey is its public key in 0x hex, the same string each time", () => {
    const key = backend.importSecretKey(SECRET);
    expect(key.pubkey).toBe(hex(key.publicKey));
    expect(key.pubkey).toBe(key.pubkey);
  });
});

describe.each(backends)("%s backend, keys imported with a claimed public key", (_name, create) => {
  const backend = create();
  const OTHER = unhex("0x25295f0d1d592a90b333e26e85149708208e9f8e8bc18f6c77bd62f8ad7a6866");
  const right = () => backend.importSecretKey(SECRET).publicKey;
  const wrong = () => backend.importSecretKey(OTHER).publicKey;
  const importClaimed = (secret: Uint8Array, publicKey: Uint8Array) => {
    if (!backend.importClaimedKey) throw new Error("the backend has no importClaimedKey");
    return backend.importClaimedKey(secret, publicKey);
  };

  test("a right claim signs exactly as a key whose public key was derived", () => {
    const claimed = importClaimed(SECRET, right());
    const derived = backend.importSecretKey(SECRET);
    expect(claimed.pubkey).toBe(derived.pubkey);
    const msg = new Uint8Array(32).fill(9);
    expect(hex(backend.sign(claimed, msg))).toBe(hex(backend.sign(derived, msg)));
    // Checked once: later signatures too.
    expect(hex(backend.sign(claimed, msg))).toBe(hex(backend.sign(derived, msg)));
  });

  test("a wrong claim is the handle's public key, but the key never signs", () => {
    const claimed = importClaimed(SECRET, wrong());
    expect(claimed.pubkey).toBe(hex(wrong()));
    for (let i = 0; i < 3; i++) {
      expect(() => backend.sign(claimed, new Uint8Array(32))).toThrow(PUBLIC_KEY_MISMATCH);
    }
    // The check is per key: a right claim imported since still signs.
    const other = importClaimed(OTHER, wrong());
    expect(backend.sign(other, new Uint8Array(32))).toHaveLength(96);
  });

  test("the secret is checked at import as importSecretKey checks it", () => {
    expect(() => importClaimed(new Uint8Array(32), right())).toThrow("BLS secret key is zero");
    expect(() => importClaimed(be32(r), right())).toThrow("not below the curve order");
    expect(() => importClaimed(SECRET, new Uint8Array(47))).toThrow(/48 bytes/);
  });
});
