import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  checkValue,
  combineShares,
  MASTER_KEY_BYTES,
  matchesCheckValue,
  newMasterKey,
  SHARE_BYTES,
  shareDigest,
  splitSecret,
  wipe,
} from "./shares";

/** Every k-element subset of `items`, in order. */
function subsets<T>(items: readonly T[], k: number): T[][] {
  if (k === 0) return [[]];
  const out: T[][] = [];
  items.forEach((item, i) => {
    for (const rest of subsets(items.slice(i + 1), k - 1)) out.push([item, ...rest]);
  });
  return out;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

describe("newMasterKey", () => {
  test("is 32 fresh random bytes", () => {
    const a = newMasterKey();
    const b = newMasterKey();
    expect(a.length).toBe(MASTER_KEY_BYTES);
    expect(hex(a)).not.toBe(hex(b));
    expect(a.some((byte) => byte !== 0)).toBe(true);
  });
});

describe("splitSecret / combineShares round trips", () => {
  const shapes: Array<[threshold: number, count: number]> = [
    [1, 1],
    [1, 3],
    [2, 2],
    [2, 3],
    [3, 5],
  ];
  for (const [threshold, count] of shapes) {
    test(`${threshold} of ${count}: every ${threshold}-subset rebuilds the key`, async () => {
      const key = newMasterKey();
      const shares = await splitSecret(key, count, threshold);
      expect(shares.length).toBe(count);
      for (const share of shares) expect(share.length).toBe(SHARE_BYTES);
      const xs = new Set(shares.map((share) => share[MASTER_KEY_BYTES]));
      expect(xs.size).toBe(count);
      expect(xs.has(0)).toBe(false);
      for (const subset of subsets(shares, threshold)) {
        expect(hex(await combineShares(subset))).toBe(hex(key));
      }
      // More than the threshold still rebuilds it.
      expect(hex(await combineShares(shares))).toBe(hex(key));
    });
  }

  test("threshold 1 shares are the key with x = 1..count", async () => {
    const key = newMasterKey();
    const shares = await splitSecret(key, 3, 1);
    expect(shares.map((share) => share[MASTER_KEY_BYTES])).toEqual([1, 2, 3]);
    for (const share of shares) expect(hex(share.subarray(0, MASTER_KEY_BYTES))).toBe(hex(key));
  });

  test("threshold ≥ 2 shares do not contain the key", async () => {
    const key = newMasterKey();
    const shares = await splitSecret(key, 3, 2);
    for (const share of shares) {
      expect(hex(share.subarray(0, MASTER_KEY_BYTES))).not.toBe(hex(key));
    }
  });

  test("255 shares with threshold 2 and 255 of 255", async () => {
    const key = newMasterKey();
    const wide = await splitSecret(key, 255, 2);
    expect(new Set(wide.map((share) => share[MASTER_KEY_BYTES])).size).toBe(255);
    const [a, , , b] = wide;
    if (!a || !b) throw new Error("missing shares");
    expect(hex(await combineShares([b, a]))).toBe(hex(key));
    const all = await splitSecret(key, 255, 255);
    expect(hex(await combineShares(all))).toBe(hex(key));
    expect(matchesCheckValue(await combineShares(all.slice(1)), checkValue(key))).toBe(false);
  });

  test("accepts a Buffer secret and Buffer shares and leaves the inputs intact", async () => {
    const key = newMasterKey();
    const shares = await splitSecret(Buffer.from(key), 3, 2);
    const buffers = shares.map((share) => Buffer.from(share));
    expect(hex(await combineShares(buffers.slice(1)))).toBe(hex(key));
    expect(buffers.map(hex)).toEqual(shares.map(hex));
  });

  test("property: any threshold-sized subset rebuilds, one fewer does not", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 2, max: 8 })
          .chain((count) =>
            fc.tuple(
              fc.constant(count),
              fc.integer({ min: 2, max: count }),
              fc.shuffledSubarray([...Array(count).keys()], { minLength: count, maxLength: count }),
            ),
          ),
        async ([count, threshold, order]) => {
          const key = newMasterKey();
          const expected = checkValue(key);
          const shares = await splitSecret(key, count, threshold);
          const pick = order.map((i) => shares[i] as Uint8Array);
          const enough = await combineShares(pick.slice(0, threshold));
          const tooFew = await combineShares(pick.slice(0, threshold - 1));
          return matchesCheckValue(enough, expected) && !matchesCheckValue(tooFew, expected);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("wrong shares give a wrong key", () => {
  test("fewer than the threshold", async () => {
    const key = newMasterKey();
    const shares = await splitSecret(key, 5, 3);
    const tooFew = await combineShares(shares.slice(0, 2));
    expect(tooFew.length).toBe(MASTER_KEY_BYTES);
    expect(matchesCheckValue(tooFew, checkValue(key))).toBe(false);
  });

  test("one corrupted y-byte", async () => {
    const key = newMasterKey();
    const shares = await splitSecret(key, 3, 2);
    const [a, b] = shares;
    if (!a || !b) throw new Error("missing shares");
    const bad = a.slice();
    bad[7] = (bad[7] ?? 0) ^ 0x01;
    expect(matchesCheckValue(await combineShares([bad, b]), checkValue(key))).toBe(false);
    expect(matchesCheckValue(await combineShares([a, b]), checkValue(key))).toBe(true);
  });

  test("a share of another seal", async () => {
    const key = newMasterKey();
    const [a] = await splitSecret(key, 3, 2);
    // Another seal's shares have distinct x among themselves, so at most one collides with a's.
    const others = await splitSecret(newMasterKey(), 3, 2);
    const other = others.find((share) => share[MASTER_KEY_BYTES] !== a?.[MASTER_KEY_BYTES]);
    if (!a || !other) throw new Error("missing shares");
    expect(matchesCheckValue(await combineShares([a, other]), checkValue(key))).toBe(false);
  });
});

describe("boundaries", () => {
  test("splitSecret refuses counts and thresholds out of range", async () => {
    const key = newMasterKey();
    const cases: Array<[number, number, RegExp]> = [
      [0, 1, /share count must be an integer from 1 to 255, not 0/],
      [256, 2, /share count must be an integer from 1 to 255, not 256/],
      [2.5, 2, /share count/],
      [3, 0, /threshold must be an integer from 1 to the share count \(3\), not 0/],
      [3, 4, /threshold must be an integer from 1 to the share count \(3\), not 4/],
      [3, 1.5, /threshold/],
      [Number.NaN, 1, /share count/],
    ];
    for (const [count, threshold, message] of cases) {
      const attempt = splitSecret(key, count, threshold);
      await expect(attempt).rejects.toBeInstanceOf(RangeError);
      await expect(splitSecret(key, count, threshold)).rejects.toThrow(message);
    }
  });

  test("splitSecret refuses a secret that is not a master key", async () => {
    await expect(splitSecret(new Uint8Array(16), 3, 2)).rejects.toThrow(/must be 32 bytes/);
    await expect(splitSecret(new Uint8Array(0), 1, 1)).rejects.toThrow(/must be 32 bytes/);
  });

  test("combineShares refuses malformed share sets", async () => {
    const shares = await splitSecret(newMasterKey(), 3, 2);
    const [a, b] = shares;
    if (!a || !b) throw new Error("missing shares");
    await expect(combineShares([])).rejects.toThrow("no shares to combine");
    await expect(combineShares([a, b.subarray(1)])).rejects.toThrow(
      "share 2 is 32 bytes; a share is 33 bytes",
    );
    await expect(combineShares([new Uint8Array(40)])).rejects.toThrow("share 1 is 40 bytes");
    await expect(combineShares([a, b, a])).rejects.toThrow(
      "shares 1 and 3 have the same x-coordinate",
    );
    const zeroX = a.slice();
    zeroX[MASTER_KEY_BYTES] = 0;
    await expect(combineShares([zeroX, b])).rejects.toThrow("share 1 has x-coordinate 0");
  });

  test("combineShares of one share strips the x byte and copies", async () => {
    const key = newMasterKey();
    const [share] = await splitSecret(key, 1, 1);
    if (!share) throw new Error("missing share");
    const out = await combineShares([share]);
    expect(hex(out)).toBe(hex(key));
    wipe(out);
    expect(hex(share.subarray(0, MASTER_KEY_BYTES))).toBe(hex(key));
  });
});

describe("check value", () => {
  test("is a stable 64-char hex HMAC that tells keys apart", () => {
    const key = newMasterKey();
    const value = checkValue(key);
    expect(value).toMatch(/^[0-9a-f]{64}$/);
    expect(checkValue(key.slice())).toBe(value);
    expect(checkValue(newMasterKey())).not.toBe(value);
    // Domain-separated: not a plain hash of the key.
    expect(value).not.toBe(new Bun.CryptoHasher("sha256").update(key).digest("hex"));
  });

  test("matches only the right key and a well-formed value", () => {
    const key = newMasterKey();
    const value = checkValue(key);
    expect(matchesCheckValue(key, value)).toBe(true);
    expect(matchesCheckValue(key, value.toUpperCase())).toBe(true);
    expect(matchesCheckValue(newMasterKey(), value)).toBe(false);
    expect(matchesCheckValue(key, value.slice(0, 62))).toBe(false);
    expect(matchesCheckValue(key, `${value.slice(0, 63)}g`)).toBe(false);
    expect(matchesCheckValue(key, "")).toBe(false);
  });

  test("refuses a key of the wrong size", () => {
    expect(() => checkValue(new Uint8Array(31))).toThrow(RangeError);
  });
});

describe("shareDigest", () => {
  test("binds the seal, the operator and the share", async () => {
    const [a, b] = await splitSecret(newMasterKey(), 2, 2);
    if (!a || !b) throw new Error("missing shares");
    const base = shareDigest("seal-1", "alice", a);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(shareDigest("seal-1", "alice", a.slice())).toBe(base);
    const variants = [
      shareDigest("seal-2", "alice", a),
      shareDigest("seal-1", "bob", a),
      shareDigest("seal-1", "alice", b),
      shareDigest("seal-1", "alice", a.subarray(0, MASTER_KEY_BYTES)),
    ];
    for (const variant of variants) expect(variant).not.toBe(base);
    const corrupted = a.slice();
    corrupted[0] = (corrupted[0] ?? 0) ^ 0x80;
    expect(shareDigest("seal-1", "alice", corrupted)).not.toBe(base);
  });

  test("field boundaries are unambiguous", () => {
    const share = new Uint8Array(SHARE_BYTES);
    expect(shareDigest("ab", "c", share)).not.toBe(shareDigest("a", "bc", share));
  });

  test("refuses empty identifiers", () => {
    const share = new Uint8Array(SHARE_BYTES);
    expect(() => shareDigest("", "alice", share)).toThrow(/seal id/);
    expect(() => shareDigest("seal-1", "", share)).toThrow(/operator/);
  });
});

test("wipe zeroes the bytes in place", () => {
  const bytes = newMasterKey();
  wipe(bytes);
  expect(bytes.every((byte) => byte === 0)).toBe(true);
});
