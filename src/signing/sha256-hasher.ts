/**
 * The SHA-256 behind every SSZ hash tree root: Bun's native SHA-256 (BoringSSL) in place of
 * @chainsafe/persistent-merkle-tree's default, the pure-JavaScript noble one. A signing root takes
 * about a dozen 64-byte compressions; native, each costs a tenth of the noble one, which was the
 * largest single cost of a signing request on the main thread (docs/performance.md).
 *
 * The merkleization walks stay the library's own (`doMerkleize…`, `doDigestNLevel`); only the
 * compression function changes. `sha256-hasher.test.ts` checks every method against the noble
 * hasher and the SSZ zero-hash vectors.
 */
import { byteArrayIntoHashObject, hashObjectToByteArray } from "@chainsafe/as-sha256";
import {
  doDigestNLevel,
  doMerkleizeBlockArray,
  doMerkleizeBlocksBytes,
  type Hasher,
  type HashObject,
  setHasher,
} from "@chainsafe/persistent-merkle-tree";

const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;

/** Scratch space: every method below finishes before it returns, so one of each is enough. */
const block = new Uint8Array(BLOCK_BYTES);
const digest = new Uint8Array(DIGEST_BYTES);
const parentHash: HashObject = { h0: 0, h1: 0, h2: 0, h3: 0, h4: 0, h5: 0, h6: 0, h7: 0 };
/** doMerkleizeBlockArray's working buffer (a multiple of 64 bytes, as the library's own). */
const blockArrayBuffer = new Uint8Array(4 * BLOCK_BYTES);

/** Hashes each 64-byte block of `input` into the matching 32 bytes of `output`. */
function hashInto(input: Uint8Array, output: Uint8Array): void {
  if (input.length % BLOCK_BYTES !== 0) {
    throw new Error(`SHA-256 input of ${input.length} bytes is not a multiple of 64`);
  }
  if (output.length * 2 !== input.length) {
    throw new Error(`SHA-256 output of ${output.length} bytes for ${input.length} bytes of input`);
  }
  if (input.length === BLOCK_BYTES) {
    Bun.SHA256.hash(input, output);
    return;
  }
  for (let offset = 0, out = 0; offset < input.length; offset += BLOCK_BYTES, out += DIGEST_BYTES) {
    Bun.SHA256.hash(input.subarray(offset, offset + BLOCK_BYTES), digest);
    output.set(digest, out);
  }
}

function digest64Into(a: Uint8Array, b: Uint8Array, output: Uint8Array): void {
  if (a.length !== DIGEST_BYTES || b.length !== DIGEST_BYTES || output.length !== DIGEST_BYTES) {
    throw new Error("digest64 takes two 32-byte inputs and a 32-byte output");
  }
  block.set(a, 0);
  block.set(b, DIGEST_BYTES);
  Bun.SHA256.hash(block, output);
}

function digest64HashObjects(left: HashObject, right: HashObject, parent: HashObject): void {
  hashObjectToByteArray(left, block, 0);
  hashObjectToByteArray(right, block, DIGEST_BYTES);
  Bun.SHA256.hash(block, digest);
  byteArrayIntoHashObject(digest, 0, parent);
}

export const nativeSha256Hasher: Hasher = {
  name: "bun-native-sha256",
  hashInto,
  digest64(a, b) {
    const output = new Uint8Array(DIGEST_BYTES);
    digest64Into(a, b, output);
    return output;
  },
  digest64Into,
  digest64HashObjects,
  merkleizeBlocksBytes(blocksBytes, padFor, output, offset) {
    doMerkleizeBlocksBytes(blocksBytes, padFor, output, offset, hashInto);
  },
  merkleizeBlockArray(blocks, blockLimit, padFor, output, offset) {
    doMerkleizeBlockArray(blocks, blockLimit, padFor, output, offset, hashInto, blockArrayBuffer);
  },
  digestNLevel(data, nLevel) {
    return doDigestNLevel(data, nLevel, hashInto);
  },
  executeHashComputations(levels) {
    for (let level = levels.length - 1; level >= 0; level--) {
      const computations = levels[level];
      if (!computations) throw new Error(`no hash computations for level ${level}`);
      for (const computation of computations) {
        digest64HashObjects(computation.src0, computation.src1, parentHash);
        computation.dest.applyHash(parentHash);
      }
    }
  },
};

setHasher(nativeSha256Hasher);
