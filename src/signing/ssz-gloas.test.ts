/**
 * The progressive merkleization sigil relies on (@chainsafe/ssz's types, which Lodestar's oracle
 * uses too), checked against the EIP-7916 / EIP-7495 definitions written out here from the EIPs,
 * with node's SHA-256: merkleize_progressive (subtrees of 1, 4, 16, … leaves, the rest on the
 * right), mix_in_length, mix_in_active_fields (the active-fields bits packed LSB first into one
 * chunk). A bid's 12 fields reach the third subtree; its commitments list and an aggregate's
 * bits go past it.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { PRESETS } from "./preset";
import { AttestationData } from "./ssz";
import { ExecutionPayloadBid, gloasPresetTypes } from "./ssz-gloas";

const ZERO = new Uint8Array(32);
const hash = (a: Uint8Array, b: Uint8Array) =>
  new Uint8Array(createHash("sha256").update(a).update(b).digest());

/** The chunks of `bytes`, right-padded with zeros to whole chunks (at least one if `atLeastOne`). */
function chunks(bytes: Uint8Array, atLeastOne = true): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 32) {
    const chunk = new Uint8Array(32);
    chunk.set(bytes.subarray(i, i + 32));
    out.push(chunk);
  }
  if (out.length === 0 && atLeastOne) out.push(new Uint8Array(32));
  return out;
}

/** merkleize(chunks, limit): a binary tree of `limit` (a power of two) leaves, missing ones zero. */
function merkleize(leaves: Uint8Array[], limit: number): Uint8Array {
  let level = leaves;
  let zero = ZERO;
  for (let width = limit; width > 1; width /= 2) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      next.push(hash(level[i] ?? zero, level[i + 1] ?? zero));
    }
    zero = hash(zero, zero);
    level = next;
  }
  return level[0] ?? zero;
}

/**
 * EIP-7916 since EIPs#11032 ("Merkleize to right"): the first `size` chunks in a complete subtree
 * on the left, the rest on the right, down a spine that ends in a zero chunk.
 */
function merkleizeProgressive(leaves: Uint8Array[], size = 1): Uint8Array {
  if (leaves.length === 0) return ZERO;
  return hash(
    merkleize(leaves.slice(0, size), size),
    merkleizeProgressive(leaves.slice(size), size * 4),
  );
}

const uintChunk = (value: bigint) => {
  const chunk = new Uint8Array(32);
  new DataView(chunk.buffer).setBigUint64(0, value, true);
  return chunk;
};
const mixInLength = (root: Uint8Array, length: number) => hash(root, uintChunk(BigInt(length)));
/** EIP-7495: all `count` fields active. */
function mixInActiveFields(root: Uint8Array, count: number): Uint8Array {
  const bits = new Uint8Array(32);
  for (let i = 0; i < count; i++) bits[i >> 3] = (bits[i >> 3] ?? 0) | (1 << (i & 7));
  return hash(root, bits);
}
const progressiveContainer = (fieldRoots: Uint8Array[]) =>
  mixInActiveFields(merkleizeProgressive(fieldRoots), fieldRoots.length);
/** Fixed bytes of more than one chunk (a signature, a commitment): their chunks, merkleized. */
const bytesRoot = (bytes: Uint8Array) => {
  const leaves = chunks(bytes);
  return merkleize(leaves, 2 ** Math.ceil(Math.log2(leaves.length)));
};

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });
const uint64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });

describe("progressive roots against EIP-7916/EIP-7495 written out", () => {
  test("the self-check: merkleize pads with zero subtrees", () => {
    const a = uintChunk(1n);
    expect(merkleize([a], 4)).toEqual(hash(hash(a, ZERO), hash(ZERO, ZERO)));
  });

  test("ExecutionPayloadBid (12 fields, a ProgressiveList of commitments)", () => {
    const bid = fc.record({
      parent_block_hash: bytes(32),
      parent_block_root: bytes(32),
      block_hash: bytes(32),
      prev_randao: bytes(32),
      fee_recipient: bytes(20),
      gas_limit: uint64,
      builder_index: uint64,
      slot: uint64,
      value: uint64,
      execution_payment: uint64,
      blob_kzg_commitments: fc.array(bytes(48), { maxLength: 30 }),
      execution_requests_root: bytes(32),
    });
    fc.assert(
      fc.property(bid, (value) => {
        const commitments = value.blob_kzg_commitments.map(bytesRoot);
        const expected = progressiveContainer([
          value.parent_block_hash,
          value.parent_block_root,
          value.block_hash,
          value.prev_randao,
          chunks(value.fee_recipient)[0] ?? ZERO,
          uintChunk(value.gas_limit),
          uintChunk(value.builder_index),
          uintChunk(value.slot),
          uintChunk(value.value),
          uintChunk(value.execution_payment),
          mixInLength(merkleizeProgressive(commitments), commitments.length),
          value.execution_requests_root,
        ]);
        expect(ExecutionPayloadBid.hashTreeRoot(value)).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  test("Gloas Attestation (a ProgressiveBitList of up to 4,000 bits, committee bits)", () => {
    const { AttestationGloas } = gloasPresetTypes(PRESETS.mainnet);
    const attestation = fc.record({
      bits: fc.array(fc.boolean(), { maxLength: 4000 }),
      committee: bytes(8),
      signature: bytes(96),
      slot: uint64,
    });
    fc.assert(
      fc.property(attestation, ({ bits, committee, signature, slot }) => {
        const data = {
          slot,
          index: 1n,
          beacon_block_root: new Uint8Array(32).fill(7),
          source: { epoch: 3n, root: new Uint8Array(32).fill(1) },
          target: { epoch: 4n, root: new Uint8Array(32).fill(2) },
        };
        const aggregationBits = AttestationGloas.fields.aggregation_bits;
        const packed = new Uint8Array(Math.ceil(bits.length / 8));
        bits.forEach((bit, i) => {
          if (bit) packed[i >> 3] = (packed[i >> 3] ?? 0) | (1 << (i & 7));
        });
        // The serialization (with its delimiter bit) is how the decoder builds the value.
        const serialized = new Uint8Array(Math.floor(bits.length / 8) + 1);
        serialized.set(packed);
        serialized[bits.length >> 3] =
          (serialized[bits.length >> 3] ?? 0) | (1 << (bits.length & 7));
        const value = {
          aggregation_bits: aggregationBits.deserialize(serialized),
          data,
          signature,
          committee_bits: AttestationGloas.fields.committee_bits.deserialize(committee),
        };
        const expected = progressiveContainer([
          mixInLength(merkleizeProgressive(chunks(packed, false)), bits.length),
          AttestationData.hashTreeRoot(data),
          bytesRoot(signature),
          chunks(committee)[0] ?? ZERO,
        ]);
        expect(AttestationGloas.hashTreeRoot(value)).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });
});
