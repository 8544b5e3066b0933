/**
 * Hash tree roots of the small fixed containers every sign request hashes, written out leaf by
 * leaf: `SigningData` and `ForkData` (one SHA-256 each) and `AttestationData` (seven). The
 * generic @chainsafe/ssz walk allocates and slices for every node, and showed as the largest
 * part of the signing root's cost on the main thread (docs/performance.md, "sign-http"); the
 * result is the same, which `roots.test.ts` checks against the library for the edge values.
 */
import type { ValueOf } from "@chainsafe/ssz";
import { isUint64 } from "../antislashing/encoding";
import type { AttestationData } from "./ssz";

const CHUNK = 32;
/** One merkle node's input (left ‖ right); every function below finishes before it returns. */
const block = new Uint8Array(2 * CHUNK);
const blockView = new DataView(block.buffer);
const ZERO_CHUNK = new Uint8Array(CHUNK);
/** hash(zero ‖ zero): the right half of a 5-field container's padded leaves (6 and 7). */
const ZERO_NODE_1 = Bun.SHA256.hash(new Uint8Array(2 * CHUNK), new Uint8Array(CHUNK)) as Uint8Array;

function requireLength(bytes: Uint8Array, length: number, what: string): void {
  if (bytes.length !== length) {
    throw new TypeError(`${what}: expected ${length} bytes, got ${bytes.length}`);
  }
}

/** hash(left ‖ right) of two 32-byte chunks, into a new 32-byte array. */
function node(left: Uint8Array, right: Uint8Array): Uint8Array {
  block.set(left, 0);
  block.set(right, CHUNK);
  return Bun.SHA256.hash(block, new Uint8Array(CHUNK)) as Uint8Array;
}

/** hash(uint64 chunk ‖ right): a uint64 leaf is its 8 little-endian bytes, zero-padded. */
function uintNode(value: bigint, right: Uint8Array): Uint8Array {
  block.fill(0, 0, CHUNK);
  blockView.setBigUint64(0, value, true);
  block.set(right, CHUNK);
  return Bun.SHA256.hash(block, new Uint8Array(CHUNK)) as Uint8Array;
}

/** hash(uint64 chunk ‖ uint64 chunk). */
function uintPairNode(left: bigint, right: bigint): Uint8Array {
  block.fill(0);
  blockView.setBigUint64(0, left, true);
  blockView.setBigUint64(CHUNK, right, true);
  return Bun.SHA256.hash(block, new Uint8Array(CHUNK)) as Uint8Array;
}

function requireUint64(value: bigint, what: string): void {
  if (!isUint64(value)) throw new RangeError(`${what}: not a uint64`);
}

/** SigningData {object_root, domain}: hash(object_root ‖ domain). */
export function signingDataRoot(objectRoot: Uint8Array, domain: Uint8Array): Uint8Array {
  requireLength(objectRoot, CHUNK, "object_root");
  requireLength(domain, CHUNK, "domain");
  return node(objectRoot, domain);
}

/** ForkData {current_version, genesis_validators_root}: hash(version, zero-padded ‖ root). */
export function forkDataRoot(version: Uint8Array, genesisValidatorsRoot: Uint8Array): Uint8Array {
  requireLength(version, 4, "current_version");
  requireLength(genesisValidatorsRoot, CHUNK, "genesis_validators_root");
  block.fill(0, 0, CHUNK);
  block.set(version, 0);
  block.set(genesisValidatorsRoot, CHUNK);
  return Bun.SHA256.hash(block, new Uint8Array(CHUNK)) as Uint8Array;
}

/**
 * AttestationData {slot, index, beacon_block_root, source, target}: five leaves padded to eight,
 * each Checkpoint {epoch, root} itself hash(epoch ‖ root).
 */
export function attestationDataRoot(data: ValueOf<typeof AttestationData>): Uint8Array {
  requireUint64(data.slot, "slot");
  requireUint64(data.index, "index");
  requireUint64(data.source.epoch, "source.epoch");
  requireUint64(data.target.epoch, "target.epoch");
  requireLength(data.beacon_block_root, CHUNK, "beacon_block_root");
  requireLength(data.source.root, CHUNK, "source.root");
  requireLength(data.target.root, CHUNK, "target.root");
  const source = uintNode(data.source.epoch, data.source.root);
  const target = uintNode(data.target.epoch, data.target.root);
  const left = node(uintPairNode(data.slot, data.index), node(data.beacon_block_root, source));
  const right = node(node(target, ZERO_CHUNK), ZERO_NODE_1);
  return node(left, right);
}
