import { describe, expect, test } from "bun:test";
import { hex, loadJsonVectors, loadYamlVectors, unhex } from "../../test/signing/bls-support";
import { ETH_BLS_DST, type LocalBlsBackend } from "./backend";
import { createBlstBackend } from "./blst";
import { createNobleBackend } from "./noble";

const vectors = loadJsonVectors();

// README "Derived pubkeys" (abbreviated there): privkey prefix/suffix -> pubkey prefix/suffix.
const README_PUBKEYS: [string, string, string, string][] = [
  ["0x47b8", "5138", "0xb301803f", "bf81"],
  ["0x3283", "d216", "0xb53d21a4", "1f6f"],
  ["0x263d", "40e3", "0xa491d1b0", "f79a"],
];

describe("BLS vector files", () => {
  test("JSON and the per-case YAML files hold the same 10 sign and 28 verify cases", () => {
    expect(vectors.ciphersuite).toBe(ETH_BLS_DST);
    expect(vectors.sign).toHaveLength(10);
    expect(vectors.verify).toHaveLength(28);
    const byName = <T extends { name: string }>(list: T[]) =>
      [...list].sort((a, b) => a.name.localeCompare(b.name));
    const yaml = loadYamlVectors();
    expect(byName(yaml.sign)).toEqual(byName(vectors.sign));
    expect(byName(yaml.verify)).toEqual(byName(vectors.verify));
  });
});

const backends: [string, () => LocalBlsBackend][] = [
  ["noble", createNobleBackend],
  ["blst", createBlstBackend],
];

describe.each(backends)("%s backend against consensus-spec-tests BLS vectors", (name, create) => {
  const backend = create();

  test("reports its name", () => {
    expect(backend.name).toBe(name as LocalBlsBackend["name"]);
  });

  for (const v of vectors.sign) {
    const expected = v.output;
    if (expected === null) {
      test(`${v.name}: refuses the key`, () => {
        expect(() => backend.importSecretKey(unhex(v.input.privkey))).toThrow(Error);
      });
    } else {
      test(`${v.name}: signature matches and verifies`, () => {
        const key = backend.importSecretKey(unhex(v.input.privkey));
        const message = unhex(v.input.message);
        const sig = backend.sign(key, message);
        expect(sig).toHaveLength(96);
        expect(hex(sig)).toBe(expected);
        expect(backend.verify(key.publicKey, message, sig)).toBe(true);
      });
    }
  }

  for (const v of vectors.verify) {
    test(`${v.name}: ${String(v.output)}`, () => {
      const { pubkey, message, signature } = v.input;
      expect(backend.verify(unhex(pubkey), unhex(message), unhex(signature))).toBe(v.output);
    });
  }

  test("derived public keys match the README and the verify vectors", () => {
    const validPubkeys = new Set(vectors.verify.filter((v) => v.output).map((v) => v.input.pubkey));
    const privkeys = [...new Set(vectors.sign.filter((v) => v.output).map((v) => v.input.privkey))];
    expect(privkeys).toHaveLength(3);
    for (const [skStart, skEnd, pkStart, pkEnd] of README_PUBKEYS) {
      const sk = privkeys.find((p) => p.startsWith(skStart) && p.endsWith(skEnd));
      expect(sk).toBeDefined();
      const pk = hex(backend.importSecretKey(unhex(sk ?? "")).publicKey);
      expect(pk).toHaveLength(2 + 96);
      expect(pk.startsWith(pkStart) && pk.endsWith(pkEnd)).toBe(true);
      expect(validPubkeys.has(pk)).toBe(true);
    }
  });
});
