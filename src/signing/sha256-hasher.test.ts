import { describe, expect, test } from "bun:test";
import { dirname } from "node:path";
import {
  hasher as activeHasher,
  BranchNode,
  HashComputationLevel,
  type Hasher,
  LeafNode,
  setHasher,
} from "@chainsafe/persistent-merkle-tree";
import { hasher as nobleHasher } from "@chainsafe/persistent-merkle-tree/hasher/noble";
import { nativeSha256Hasher } from "./sha256-hasher";
import { AttestationData } from "./ssz";

// The SSZ zero hashes (consensus specs, deposit contract): sha256(z[i] ‖ z[i]), z[0] = 32 zeros.
const ZERO_HASH_1 = "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b";
const ZERO_HASH_2 = "db56114e00fdd4c1f85c892bf35ac9a89289aaecb1ebd0a96cde606a748b5d71";

/** Deterministic bytes (a linear congruential walk): reproducible inputs without fixtures. */
function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state >>> 24;
  }
  return out;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/** Runs `method` on both hashers with copies of the inputs (several methods mutate them). */
function both<R>(method: (h: Hasher) => R): [R, R] {
  return [method(nativeSha256Hasher), method(nobleHasher)];
}

describe("native SHA-256 hasher", () => {
  test("is the hasher the SSZ types use, in the one copy of persistent-merkle-tree", () => {
    expect(activeHasher.name).toBe(nativeSha256Hasher.name);
    // @chainsafe/ssz must resolve the same module whose hasher we set, or it would not see it.
    const ours = Bun.resolveSync("@chainsafe/persistent-merkle-tree", import.meta.dir);
    const ssz = Bun.resolveSync("@chainsafe/ssz", import.meta.dir);
    expect(Bun.resolveSync("@chainsafe/persistent-merkle-tree", dirname(ssz))).toBe(ours);
  });

  test("gives the SSZ zero hashes", () => {
    const z1 = nativeSha256Hasher.digest64(new Uint8Array(32), new Uint8Array(32));
    expect(hex(z1)).toBe(ZERO_HASH_1);
    expect(hex(nativeSha256Hasher.digest64(z1, z1))).toBe(ZERO_HASH_2);
  });

  test("hashInto matches noble for one and several blocks", () => {
    for (const blocks of [1, 2, 5, 16]) {
      const input = bytes(64 * blocks, blocks);
      const [native, noble] = both((h) => {
        const output = new Uint8Array(32 * blocks);
        h.hashInto(input.slice(), output);
        return hex(output);
      });
      expect(native).toBe(noble);
    }
  });

  test("hashInto refuses lengths that are not whole blocks", () => {
    expect(() => nativeSha256Hasher.hashInto(new Uint8Array(63), new Uint8Array(31))).toThrow(
      "not a multiple of 64",
    );
    expect(() => nativeSha256Hasher.hashInto(new Uint8Array(128), new Uint8Array(32))).toThrow(
      "output of 32 bytes",
    );
  });

  test("digest64Into and digest64HashObjects match noble", () => {
    const a = bytes(32, 7);
    const b = bytes(32, 8);
    const [intoNative, intoNoble] = both((h) => {
      const output = new Uint8Array(32);
      h.digest64Into(a, b, output);
      return hex(output);
    });
    expect(intoNative).toBe(intoNoble);
    const [objectsNative, objectsNoble] = both((h) => {
      const parent = new BranchNode(LeafNode.fromRoot(a), LeafNode.fromRoot(b));
      h.digest64HashObjects(
        LeafNode.fromRoot(a).rootHashObject,
        LeafNode.fromRoot(b).rootHashObject,
        parent,
      );
      return hex(parent.root);
    });
    expect(objectsNative).toBe(objectsNoble);
    expect(objectsNative).toBe(intoNative);
    expect(() => nativeSha256Hasher.digest64Into(a, b.subarray(1), new Uint8Array(32))).toThrow();
  });

  test("merkleizeBlocksBytes, merkleizeBlockArray and digestNLevel match noble", () => {
    for (const [chunks, padFor] of [
      [0, 1],
      [1, 1],
      [2, 2],
      [2, 8],
      [4, 4],
      [6, 16],
      [16, 2048],
    ] as const) {
      // Whole 64-byte blocks, except that a single chunk (padFor 1) is 32 bytes.
      const input = bytes(padFor > 1 ? Math.ceil(chunks / 2) * 64 : chunks * 32, chunks + padFor);
      const [native, noble] = both((h) => {
        const output = new Uint8Array(40);
        h.merkleizeBlocksBytes(input.slice(), padFor, output, 8);
        return hex(output);
      });
      expect(native).toBe(noble);
    }
    for (const [blockCount, padFor] of [
      [1, 2],
      [3, 8],
      [5, 64],
    ] as const) {
      const blocks = Array.from({ length: blockCount }, (_, i) => bytes(64, 100 + i));
      const [native, noble] = both((h) => {
        const output = new Uint8Array(32);
        h.merkleizeBlockArray(
          blocks.map((block) => block.slice()),
          blockCount,
          padFor,
          output,
          0,
        );
        return hex(output);
      });
      expect(native).toBe(noble);
    }
    for (const nLevel of [1, 2, 3]) {
      const data = bytes(32 * 2 ** nLevel * 3, nLevel);
      const [native, noble] = both((h) => hex(h.digestNLevel(data.slice(), nLevel)));
      expect(native).toBe(noble);
    }
  });

  test("executeHashComputations fills every destination node as noble does", () => {
    const run = (h: Hasher) => {
      const leaves = [0, 1, 2, 3].map((i) => LeafNode.fromRoot(bytes(32, 200 + i)));
      const [l0, l1, l2, l3] = leaves as [LeafNode, LeafNode, LeafNode, LeafNode];
      const left = new BranchNode(l0, l1);
      const right = new BranchNode(l2, l3);
      const root = new BranchNode(left, right);
      const lower = new HashComputationLevel();
      lower.push(l0, l1, left);
      lower.push(l2, l3, right);
      const upper = new HashComputationLevel();
      upper.push(left, right, root);
      h.executeHashComputations([upper, lower]);
      // Read the fields the computation wrote: `root` would hash by itself if they were unset.
      expect(root.h0).not.toBeNull();
      return hex(root.root);
    };
    const [native, noble] = both(run);
    expect(native).toBe(noble);
  });

  test("an SSZ container root is the same with either hasher", () => {
    const value = AttestationData.defaultValue();
    value.slot = 123456789n;
    value.beacon_block_root = bytes(32, 1);
    value.target.epoch = 3858024n;
    value.target.root = bytes(32, 2);
    const native = hex(AttestationData.hashTreeRoot(value));
    const view = AttestationData.toViewDU(value);
    view.slot = 123456790n;
    view.commit();
    const viewRoot = hex(view.hashTreeRoot());
    try {
      // Only for this comparison: the noble hasher everywhere, then ours back.
      setHasher(nobleHasher);
      expect(hex(AttestationData.hashTreeRoot(value))).toBe(native);
      const nobleView = AttestationData.toViewDU(value);
      nobleView.slot = 123456790n;
      nobleView.commit();
      expect(hex(nobleView.hashTreeRoot())).toBe(viewRoot);
    } finally {
      setHasher(nativeSha256Hasher);
    }
    expect(activeHasher.name).toBe(nativeSha256Hasher.name);
  });
});
