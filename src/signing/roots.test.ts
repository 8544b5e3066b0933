import { describe, expect, test } from "bun:test";
import type { ValueOf } from "@chainsafe/ssz";
import { attestationDataRoot, forkDataRoot, signingDataRoot } from "./roots";
import { AttestationData, ForkData, SigningData } from "./ssz";

const MAX_UINT64 = 2n ** 64n - 1n;
const bytes = (length: number, seed: number) =>
  Uint8Array.from({ length }, (_, i) => (seed * 131 + i * 29 + 7) & 0xff);
const filled = (length: number, value: number) => new Uint8Array(length).fill(value);

const uints = [
  0n,
  1n,
  255n,
  256n,
  2n ** 32n - 1n,
  2n ** 32n,
  2n ** 53n + 1n,
  MAX_UINT64 - 1n,
  MAX_UINT64,
];

describe("roots written out match @chainsafe/ssz", () => {
  test("SigningData", () => {
    for (const [a, b] of [
      [filled(32, 0), filled(32, 0)],
      [filled(32, 0xff), bytes(32, 1)],
      [bytes(32, 2), bytes(32, 3)],
    ] as const) {
      expect(signingDataRoot(a, b)).toEqual(
        SigningData.hashTreeRoot({ object_root: a, domain: b }),
      );
    }
  });

  test("ForkData", () => {
    for (const [version, root] of [
      [filled(4, 0), filled(32, 0)],
      [filled(4, 0xff), filled(32, 0xff)],
      [bytes(4, 4), bytes(32, 5)],
    ] as const) {
      expect(forkDataRoot(version, root)).toEqual(
        ForkData.hashTreeRoot({ current_version: version, genesis_validators_root: root }),
      );
    }
  });

  test("AttestationData, every uint64 field at its edge values", () => {
    let seed = 10;
    const data = (): ValueOf<typeof AttestationData> => ({
      slot: 12n,
      index: 3n,
      beacon_block_root: bytes(32, seed++),
      source: { epoch: 7n, root: bytes(32, seed++) },
      target: { epoch: 8n, root: bytes(32, seed++) },
    });
    const cases: ValueOf<typeof AttestationData>[] = [];
    for (const value of uints) {
      cases.push({ ...data(), slot: value });
      cases.push({ ...data(), index: value });
      const a = data();
      cases.push({ ...a, source: { ...a.source, epoch: value } });
      const b = data();
      cases.push({ ...b, target: { ...b.target, epoch: value } });
    }
    cases.push({
      slot: 0n,
      index: 0n,
      beacon_block_root: filled(32, 0),
      source: { epoch: 0n, root: filled(32, 0) },
      target: { epoch: 0n, root: filled(32, 0) },
    });
    for (const value of cases) {
      expect(attestationDataRoot(value)).toEqual(AttestationData.hashTreeRoot(value));
    }
  });

  test("a wrong length or a value outside uint64 throws instead of hashing", () => {
    expect(() => signingDataRoot(filled(31, 0), filled(32, 0))).toThrow(TypeError);
    expect(() => forkDataRoot(filled(5, 0), filled(32, 0))).toThrow(TypeError);
    const value: ValueOf<typeof AttestationData> = {
      slot: MAX_UINT64 + 1n,
      index: 0n,
      beacon_block_root: filled(32, 0),
      source: { epoch: 0n, root: filled(32, 0) },
      target: { epoch: 0n, root: filled(32, 0) },
    };
    expect(() => attestationDataRoot(value)).toThrow(RangeError);
    expect(() =>
      attestationDataRoot({ ...value, slot: 0n, beacon_block_root: filled(33, 0) }),
    ).toThrow(TypeError);
  });
});
