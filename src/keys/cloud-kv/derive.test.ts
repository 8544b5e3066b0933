import { describe, expect, test } from "bun:test";
import {
  deriveEth2ValidatorKeys,
  deriveKeyFromEntropy,
  deriveKeyFromMnemonic,
} from "@chainsafe/bls-keygen";
import bip39Vectors from "../../../test/vectors/bip39/vectors.json";
import eip2333Vectors from "../../../test/vectors/eip2333/vectors.json";
import { createBlstBackend } from "../../bls/blst";
import { CURVE_ORDER } from "../../bls/key";
import {
  assertMnemonic,
  deriveAtPath,
  deriveChildSK,
  deriveMasterSK,
  deriveValidatorKeys,
  ikmToLamportSK,
  MAX_CHILD_INDEX,
  MAX_PATH_DEPTH,
  MNEMONIC_STRENGTH_BITS,
  mnemonicToSeed,
  newMnemonic,
  parentSKToLamportPK,
  parsePath,
  validatorSigningPath,
} from "./derive";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");
const unhex = (text: string): Uint8Array =>
  new Uint8Array(Buffer.from(text.replace(/^0x/, ""), "hex"));
const scalarBytes = (sk: bigint): Uint8Array => unhex(sk.toString(16).padStart(64, "0"));
const bytesScalar = (bytes: Uint8Array): bigint => BigInt(`0x${hex(bytes)}`);

/** Every word of `mnemonic` that appears in `message`: must be none, the mnemonic is a secret. */
function echoedWords(message: string, mnemonic: string): string[] {
  return mnemonic.split(" ").filter((word) => word.length > 2 && message.includes(word));
}

function thrownMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error("expected a throw");
}

const blst = createBlstBackend();
const pubkeyOf = (secret: Uint8Array): string => `0x${hex(blst.importSecretKey(secret).publicKey)}`;

describe("EIP-2333 test cases", () => {
  test("the vector file holds the EIP's four cases", () => {
    expect(eip2333Vectors.cases.map((c) => c.name)).toEqual([
      "Test Case 0",
      "Test Case 1",
      "Test Case 2",
      "Test Case 3",
    ]);
  });

  for (const c of eip2333Vectors.cases) {
    const seed = unhex(c.seed);
    const master = BigInt(c.master_SK);
    const child = BigInt(c.child_SK);

    test(`${c.name}: derive_master_SK`, () => {
      expect(deriveMasterSK(seed)).toBe(master);
    });

    test(`${c.name}: derive_child_SK at index ${c.child_index}`, () => {
      expect(deriveChildSK(master, c.child_index)).toBe(child);
    });

    test(`${c.name}: the same keys through deriveAtPath`, () => {
      expect(deriveAtPath(seed, "m")).toBe(master);
      expect(deriveAtPath(seed, `m/${c.child_index}`)).toBe(child);
    });

    test(`${c.name}: @chainsafe/bls-keygen gives the same master key`, () => {
      expect(hex(deriveKeyFromEntropy(seed))).toBe(hex(scalarBytes(master)));
    });
  }

  test("Test Case 0's seed is its BIP-39 mnemonic with passphrase TREZOR", () => {
    const { mnemonic, passphrase } = eip2333Vectors.test_case_0_mnemonic;
    const [case0] = eip2333Vectors.cases;
    expect(`0x${hex(mnemonicToSeed(mnemonic, passphrase))}`).toBe(case0?.seed ?? "");
  });

  describe("intermediate values", () => {
    const v = eip2333Vectors.intermediate;
    const master = BigInt(v.master_SK);
    const ikm = scalarBytes(master);
    const salt = unhex(v.child_index.toString(16).padStart(8, "0"));
    /** The EIP numbers Lamport chunks from 1; chunk n is bytes 32(n-1) .. 32n-1. */
    const chunk = (lamport: Uint8Array, n: string): string =>
      `0x${hex(lamport.subarray((Number(n) - 1) * 32, Number(n) * 32))}`;

    test("the seed gives the master key", () => {
      expect(deriveMasterSK(unhex(v.seed))).toBe(master);
    });

    test("lamport_0 = IKM_to_lamport_SK(I2OSP(parent_SK), salt)", () => {
      const lamport = ikmToLamportSK(ikm, salt);
      expect(lamport).toHaveLength(255 * 32);
      for (const [n, expected] of Object.entries(v.lamport_0)) {
        expect(chunk(lamport, n)).toBe(expected);
      }
    });

    test("lamport_1 = IKM_to_lamport_SK(flip_bits(IKM), salt)", () => {
      const lamport = ikmToLamportSK(
        ikm.map((byte) => ~byte & 0xff),
        salt,
      );
      for (const [n, expected] of Object.entries(v.lamport_1)) {
        expect(chunk(lamport, n)).toBe(expected);
      }
    });

    test("compressed_lamport_PK and child_SK", () => {
      expect(`0x${hex(parentSKToLamportPK(master, v.child_index))}`).toBe(v.compressed_lamport_PK);
      expect(deriveChildSK(master, v.child_index)).toBe(BigInt(v.child_SK));
    });
  });
});

describe("EIP-2333 input checks", () => {
  test("a seed shorter than 32 bytes is refused; 32 bytes is enough", () => {
    expect(() => deriveMasterSK(new Uint8Array(31))).toThrow("at least 32 bytes");
    const sk = deriveMasterSK(new Uint8Array(32).fill(7));
    expect(sk > 0n && sk < CURVE_ORDER).toBe(true);
  });

  test("child indices outside 0 <= i < 2^32 are refused", () => {
    for (const index of [-1, 2 ** 32, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => deriveChildSK(1n, index)).toThrow("child index");
    }
    expect(deriveChildSK(1n, MAX_CHILD_INDEX) > 0n).toBe(true);
  });

  test("a parent key outside 0 < sk < r is refused", () => {
    for (const sk of [0n, -1n, CURVE_ORDER, 2n ** 256n]) {
      expect(() => deriveChildSK(sk, 0)).toThrow("0 < sk < r");
    }
    expect(deriveChildSK(CURVE_ORDER - 1n, 0) > 0n).toBe(true);
  });

  test("distinct indices give distinct children", () => {
    expect(deriveChildSK(5n, 0)).not.toBe(deriveChildSK(5n, 1));
  });
});

describe("BIP-39", () => {
  test("all 24 English reference vectors: mnemonic with passphrase TREZOR gives the seed", () => {
    expect(bip39Vectors.passphrase).toBe("TREZOR");
    expect(bip39Vectors.english).toHaveLength(24);
    for (const [, mnemonic, seed] of bip39Vectors.english) {
      expect(hex(mnemonicToSeed(mnemonic ?? "", bip39Vectors.passphrase))).toBe(seed ?? "");
    }
  });

  test("the passphrase defaults to empty, which gives another seed", () => {
    const [, mnemonic, trezorSeed] = bip39Vectors.english[0] ?? [];
    const seed = mnemonicToSeed(mnemonic ?? "");
    expect(seed).toHaveLength(64);
    expect(hex(seed)).not.toBe(trezorSeed ?? "");
  });

  test("newMnemonic makes fresh, valid 24-word mnemonics", () => {
    expect(MNEMONIC_STRENGTH_BITS).toBe(256);
    const a = newMnemonic();
    const b = newMnemonic();
    expect(a.split(" ")).toHaveLength(24);
    expect(() => assertMnemonic(a)).not.toThrow();
    expect(a).not.toBe(b);
  });

  // 24 x "zoo" is a list of valid words whose checksum is wrong ("zoo ... vote" is right).
  const badChecksum = Array.from({ length: 24 }, () => "zoo").join(" ");
  const valid = bip39Vectors.english[11]?.[1] ?? "";

  test("a bad checksum is refused without echoing the words", () => {
    for (const run of [
      () => mnemonicToSeed(badChecksum),
      () => deriveValidatorKeys(badChecksum, 0, 1),
    ]) {
      const message = thrownMessage(run);
      expect(message).toContain("checksum");
      expect(echoedWords(message, badChecksum)).toEqual([]);
    }
  });

  test("a word swap breaks the checksum", () => {
    const words = (bip39Vectors.english[14]?.[1] ?? "").split(" ");
    [words[0], words[1]] = [words[1] ?? "", words[0] ?? ""];
    expect(thrownMessage(() => assertMnemonic(words.join(" ")))).toContain("checksum");
  });

  test("an unknown word is named by position only", () => {
    const words = valid.split(" ");
    words[4] = "zzzsecretword";
    const mnemonic = words.join(" ");
    const message = thrownMessage(() => mnemonicToSeed(mnemonic));
    expect(message).toContain("word 5");
    expect(message).not.toContain("zzzsecretword");
    expect(echoedWords(message, mnemonic)).toEqual([]);
  });

  test("a wrong word count is refused without echo", () => {
    const mnemonic = valid.split(" ").slice(0, 23).join(" ");
    const message = thrownMessage(() => mnemonicToSeed(mnemonic));
    expect(message).toContain("23 words");
    expect(echoedWords(message, mnemonic)).toEqual([]);
  });

  test("non-canonical spacing or case is refused, since it would change the seed", () => {
    for (const mnemonic of [
      ` ${valid}`,
      `${valid} `,
      valid.replace(" ", "  "),
      valid.replace(" ", "\n"),
    ]) {
      expect(thrownMessage(() => assertMnemonic(mnemonic))).toContain("single spaces");
    }
    expect(thrownMessage(() => assertMnemonic(valid.toUpperCase()))).toContain("word 1");
  });

  test("an oversized mnemonic is refused before it is parsed", () => {
    const longest = Array.from({ length: 24 }, () => "abstract").join(" ");
    expect(longest).toHaveLength(215);
    expect(thrownMessage(() => assertMnemonic(longest))).toContain("checksum");
    expect(thrownMessage(() => assertMnemonic(`${longest}x`))).toContain("longer than 215");
  });

  test("non-strings are refused", () => {
    expect(() => assertMnemonic(42 as unknown as string)).toThrow("string");
    expect(() => mnemonicToSeed(valid, 7 as unknown as string)).toThrow("passphrase");
  });
});

describe("EIP-2334 paths", () => {
  test("validator signing path", () => {
    expect(validatorSigningPath(0)).toBe("m/12381/3600/0/0/0");
    expect(validatorSigningPath(42)).toBe("m/12381/3600/42/0/0");
    expect(validatorSigningPath(MAX_CHILD_INDEX)).toBe("m/12381/3600/4294967295/0/0");
    for (const index of [-1, 2 ** 32, 0.5, Number.NaN]) {
      expect(() => validatorSigningPath(index)).toThrow("validator index");
    }
  });

  test("well-formed paths parse", () => {
    expect(parsePath("m")).toEqual([]);
    expect(parsePath("m/0")).toEqual([0]);
    expect(parsePath("m/12381/3600/7/0/0")).toEqual([12381, 3600, 7, 0, 0]);
    expect(parsePath("m/4294967295")).toEqual([MAX_CHILD_INDEX]);
    expect(parsePath(`m${"/1".repeat(MAX_PATH_DEPTH)}`)).toHaveLength(MAX_PATH_DEPTH);
  });

  test("malformed paths are refused", () => {
    const bad = [
      "",
      "M",
      "M/1",
      "m/",
      "m//1",
      "/1",
      "m/01",
      "m/1'",
      "m/1h",
      " m/1",
      "m/1 ",
      "m/ 1",
      "m/+1",
      "m/-1",
      "m/1e3",
      "m/0x10",
      "m/1.0",
      "m\\1",
      "m/4294967296",
      "m/99999999999",
      `m${"/1".repeat(MAX_PATH_DEPTH + 1)}`,
      `m/${"1".repeat(1000)}`,
    ];
    for (const path of bad) expect(() => parsePath(path), path).toThrow();
    expect(() => parsePath(7 as unknown as string)).toThrow("string");
  });
});

describe("deriveValidatorKeys", () => {
  const mnemonic = bip39Vectors.english[9]?.[1] ?? "";

  test("shape: index, EIP-2334 path, 32-byte key, lowercase 0x pubkey", () => {
    const keys = deriveValidatorKeys(mnemonic, 3, 2);
    expect(keys.map((k) => k.index)).toEqual([3, 4]);
    expect(keys.map((k) => k.path)).toEqual(["m/12381/3600/3/0/0", "m/12381/3600/4/0/0"]);
    for (const key of keys) {
      expect(key.secretKey).toBeInstanceOf(Uint8Array);
      expect(key.secretKey).toHaveLength(32);
      expect(key.pubkey).toMatch(/^0x[0-9a-f]{96}$/);
      expect(key.pubkey).toBe(pubkeyOf(key.secretKey));
    }
    expect(keys[0]?.pubkey).not.toBe(keys[1]?.pubkey);
  });

  test("each key is the one at its path from the mnemonic's seed", () => {
    const seed = mnemonicToSeed(mnemonic);
    for (const key of deriveValidatorKeys(mnemonic, 0, 2)) {
      expect(bytesScalar(key.secretKey)).toBe(deriveAtPath(seed, key.path));
    }
  });

  test("agrees with @chainsafe/bls-keygen on random mnemonics and indices", () => {
    for (let round = 0; round < 3; round++) {
      const random = newMnemonic();
      const start = Math.floor(Math.random() * 100_000);
      const keys = deriveValidatorKeys(random, start, 3);
      const master = deriveKeyFromMnemonic(random);
      for (const key of keys) {
        const oracle = deriveKeyFromMnemonic(random, key.path);
        expect(hex(key.secretKey)).toBe(hex(oracle));
        expect(hex(deriveEth2ValidatorKeys(master, key.index).signing)).toBe(hex(oracle));
        expect(key.pubkey).toBe(pubkeyOf(oracle));
      }
    }
  });

  test("agrees with @chainsafe/bls-keygen at the last index, 2^32 - 1", () => {
    const [key] = deriveValidatorKeys(mnemonic, MAX_CHILD_INDEX, 1);
    expect(key?.path).toBe("m/12381/3600/4294967295/0/0");
    expect(hex(key?.secretKey ?? new Uint8Array())).toBe(
      hex(deriveKeyFromMnemonic(mnemonic, key?.path)),
    );
  });

  test("a given backend computes the same pubkeys as the default", () => {
    const viaNoble = deriveValidatorKeys(mnemonic, 0, 2);
    const viaBlst = deriveValidatorKeys(mnemonic, 0, 2, blst);
    expect(viaBlst.map((k) => k.pubkey)).toEqual(viaNoble.map((k) => k.pubkey));
  });

  test("start and count are checked", () => {
    expect(deriveValidatorKeys(mnemonic, 0, 0)).toEqual([]);
    expect(() => deriveValidatorKeys(mnemonic, -1, 1)).toThrow("first validator index");
    expect(() => deriveValidatorKeys(mnemonic, 0.5, 1)).toThrow("first validator index");
    for (const count of [-1, 1.5, Number.NaN]) {
      expect(() => deriveValidatorKeys(mnemonic, 0, count)).toThrow("key count");
    }
    expect(() => deriveValidatorKeys(mnemonic, MAX_CHILD_INDEX, 2)).toThrow("key count");
  });

  test("the BIP-39 passphrase is not used (deposit CLI keys)", () => {
    const [key] = deriveValidatorKeys(mnemonic, 0, 1);
    const withTrezor = deriveAtPath(mnemonicToSeed(mnemonic, "TREZOR"), validatorSigningPath(0));
    expect(bytesScalar(key?.secretKey ?? new Uint8Array())).not.toBe(withTrezor);
    expect(bytesScalar(key?.secretKey ?? new Uint8Array())).toBe(
      deriveAtPath(mnemonicToSeed(mnemonic, ""), validatorSigningPath(0)),
    );
  });
});
