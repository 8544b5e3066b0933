/**
 * What Commit-Boost signs (commit-boost-client `crates/common/src/signature.rs` and `types.rs`):
 *
 *   domain       = 0x6d6d6f43 ‖ hash_tree_root(ForkData{genesis_fork_version, 0x00…00})[0:28]
 *   request root = hash_tree_root(PropCommitSigningInfo{data, module_signing_id, nonce: uint64,
 *                                                       chain_id: uint256})
 *   signed root  = hash_tree_root(SigningData{object_root: request root, signing_domain: domain})
 *
 * A proxy delegation is signed the same way without the signing info: its object root is
 * hash_tree_root(ProxyDelegation{delegator: BLS pubkey, proxy: BLS pubkey | 20-byte address}).
 * The domain type 0x6d6d6f43 is none of the beacon chain's (which start 0x00…0x0d or are
 * 0x00000001), so a signed root here cannot be a beacon signing root short of a SHA-256 collision.
 */
import { createHash } from "node:crypto";

export const COMMIT_BOOST_DOMAIN_TYPE = Uint8Array.of(0x6d, 0x6d, 0x6f, 0x43);

const CHUNK = 32;

function sha256(...parts: Uint8Array[]): Uint8Array {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return new Uint8Array(hash.digest());
}

/** A value of at most 32 bytes as one SSZ chunk, zero-padded on the right. */
function chunk(bytes: Uint8Array): Uint8Array {
  if (bytes.length > CHUNK) throw new RangeError("a chunk holds at most 32 bytes");
  const out = new Uint8Array(CHUNK);
  out.set(bytes);
  return out;
}

/** uint64 / uint256 as a little-endian chunk. */
function uintChunk(value: bigint, bytes: 8 | 32): Uint8Array {
  if (value < 0n || value >= 1n << BigInt(bytes * 8)) throw new RangeError("uint out of range");
  const out = new Uint8Array(CHUNK);
  let rest = value;
  for (let i = 0; i < bytes; i++) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

/** hash_tree_root of a 48-byte vector (a BLS public key): two chunks. */
function pubkeyRoot(pubkey: Uint8Array): Uint8Array {
  if (pubkey.length !== 48) throw new RangeError("a BLS public key is 48 bytes");
  return sha256(pubkey.subarray(0, 32), chunk(pubkey.subarray(32)));
}

/** compute_domain(domain_type, fork_version, genesis_validators_root) of the consensus specs. */
export function computeDomain(
  domainType: Uint8Array,
  forkVersion: Uint8Array,
  genesisValidatorsRoot: Uint8Array,
): Uint8Array {
  if (domainType.length !== 4 || forkVersion.length !== 4 || genesisValidatorsRoot.length !== 32)
    throw new RangeError("domain type and fork version are 4 bytes, the root 32");
  const forkDataRoot = sha256(chunk(forkVersion), genesisValidatorsRoot);
  const domain = new Uint8Array(CHUNK);
  domain.set(domainType);
  domain.set(forkDataRoot.subarray(0, 28), 4);
  return domain;
}

/** The Commit-Boost domain of a chain: its genesis fork version and a zero validators root. */
export function commitBoostDomain(genesisForkVersion: Uint8Array): Uint8Array {
  return computeDomain(COMMIT_BOOST_DOMAIN_TYPE, genesisForkVersion, new Uint8Array(32));
}

/** hash_tree_root(SigningData{object_root, domain}). */
export function signingRoot(objectRoot: Uint8Array, domain: Uint8Array): Uint8Array {
  if (objectRoot.length !== 32 || domain.length !== 32) throw new RangeError("roots are 32 bytes");
  return sha256(objectRoot, domain);
}

export interface SigningInfo {
  /** The 32 bytes the module asked to sign (`object_root`). */
  readonly data: Uint8Array;
  /** The module's configured 32-byte signing id. */
  readonly moduleSigningId: Uint8Array;
  readonly nonce: bigint;
  readonly chainId: bigint;
}

/** hash_tree_root(PropCommitSigningInfo{data, module_signing_id, nonce, chain_id}). */
export function signingInfoRoot(info: SigningInfo): Uint8Array {
  if (info.data.length !== 32 || info.moduleSigningId.length !== 32)
    throw new RangeError("data and module signing id are 32 bytes");
  const left = sha256(info.data, info.moduleSigningId);
  const right = sha256(uintChunk(info.nonce, 8), uintChunk(info.chainId, 32));
  return sha256(left, right);
}

/** The root a key signs for a module's request. */
export function requestSigningRoot(info: SigningInfo, domain: Uint8Array): Uint8Array {
  return signingRoot(signingInfoRoot(info), domain);
}

/** hash_tree_root(ProxyDelegation{delegator, proxy}); `proxy` is a BLS pubkey or an address. */
export function delegationRoot(delegator: Uint8Array, proxy: Uint8Array): Uint8Array {
  const proxyRoot = proxy.length === 20 ? chunk(proxy) : pubkeyRoot(proxy);
  return sha256(pubkeyRoot(delegator), proxyRoot);
}

/** The root a consensus key signs to delegate to a proxy. */
export function delegationSigningRoot(
  delegator: Uint8Array,
  proxy: Uint8Array,
  domain: Uint8Array,
): Uint8Array {
  return signingRoot(delegationRoot(delegator, proxy), domain);
}
