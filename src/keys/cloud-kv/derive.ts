// Kept instead of @chainsafe/bls-keygen (this file's test oracle): it zeroes no intermediate secret and brings a second @scure/bip39.
/**
 * Validator keys from a BIP-39 mnemonic: the mnemonic's seed (BIP-39), a tree of BLS12-381
 * secret keys grown from it (EIP-2333), and the Ethereum validator signing path in that tree
 * (EIP-2334, `m/12381/3600/i/0/0`). Keys derived here match the staking deposit CLI's, so the
 * mnemonic alone restores them anywhere.
 *
 * SHA-256 and HKDF come from node:crypto: @noble/hashes is only a transitive dependency.
 * Intermediate byte buffers holding secrets are zeroed after use; bigint scalars cannot be, and
 * live until collected. No message here contains a word of a mnemonic, a seed or a key.
 */
import { createHash, hkdfSync } from "node:crypto";
import { generateMnemonic, mnemonicToSeedSync, validateMnemonic } from "@scure/bip39";
import { wordlist as ENGLISH_WORDLIST } from "@scure/bip39/wordlists/english.js";
import { type BlsBackend, type BlsSecretKey, SECRET_KEY_BYTES } from "../../bls/backend";
import { CURVE_ORDER } from "../../bls/key";
import { createNobleBackend } from "../../bls/noble";
import { toHex } from "../../wire/hex";

/** 256 bits of entropy: a 24-word mnemonic. */
export const MNEMONIC_STRENGTH_BITS = 256;
/** The word counts BIP-39 defines (128 to 256 bits of entropy, in steps of 32). */
const MNEMONIC_WORD_COUNTS: readonly number[] = [12, 15, 18, 21, 24];
const ENGLISH_WORDS: ReadonlySet<string> = new Set(ENGLISH_WORDLIST);
/** 24 words of at most 8 letters and 23 spaces: a bound checked before any other work. */
const MAX_MNEMONIC_CHARS = 24 * 8 + 23;
/** No leading, trailing or doubled whitespace, no tabs or newlines. */
const SINGLE_SPACED_WORDS = /^\S+(?: \S+)*$/;

/** EIP-2333: the seed must carry at least 256 bits. */
export const MIN_SEED_BYTES = 32;
/** EIP-2333: child indices are 0 <= index < 2^32. */
export const MAX_CHILD_INDEX = 0xffff_ffff;
/** EIP-2334 purpose (12381, the curve) and coin type (3600, Ethereum validators). */
export const EIP2334_PURPOSE = 12381;
export const EIP2334_ETH_COIN_TYPE = 3600;
/**
 * A bound on the depth of a parsed path. EIP-2334 paths are 4 or 5 levels; each level costs
 * about a millisecond, so an unbounded path from input would be a cheap way to burn CPU.
 */
export const MAX_PATH_DEPTH = 16;
/** Longer than any path within MAX_PATH_DEPTH; checked before the path is parsed or echoed. */
const MAX_PATH_CHARS = 2 + MAX_PATH_DEPTH * 11;

const HASH = "sha256";
/** K: SHA-256 digest size in octets. */
const DIGEST_BYTES = 32;
/** Lamport chunks per key: HKDF-SHA256 can stretch to at most 255 digests. */
const LAMPORT_CHUNKS = 255;
/** L = ceil(3 * ceil(log2(r)) / 16) = 48 octets of HKDF output reduced mod r. */
const HKDF_MOD_R_BYTES = 48;
const KEYGEN_SALT = new TextEncoder().encode("BLS-SIG-KEYGEN-SALT-");
const INDEX_BYTES = 4;
const EMPTY = new Uint8Array(0);

const PATH_PATTERN = /^m(?:\/(?:0|[1-9][0-9]*))*$/;

// The default way to turn a derived scalar into its public key (pure TypeScript, always there);
// the handle it returns is dropped at once.
const noble = createNobleBackend();

/** A fresh 24-word English mnemonic from the platform's CSPRNG. */
export function newMnemonic(): string {
  return generateMnemonic(ENGLISH_WORDLIST, MNEMONIC_STRENGTH_BITS);
}

/**
 * Throws unless `mnemonic` is a valid English BIP-39 mnemonic, written canonically: lowercase
 * words from the list separated by single spaces (a different spacing would give a different
 * seed). The message names a word by position only, never by its text.
 */
export function assertMnemonic(mnemonic: string): void {
  if (typeof mnemonic !== "string") throw new Error("the mnemonic must be a string");
  if (mnemonic.length > MAX_MNEMONIC_CHARS) {
    throw new Error(`the mnemonic is longer than ${MAX_MNEMONIC_CHARS} characters`);
  }
  // BIP-39 hashes the NFKD form; scure normalizes the same way before checking and hashing.
  const normalized = mnemonic.normalize("NFKD");
  if (!SINGLE_SPACED_WORDS.test(normalized)) {
    throw new Error("the mnemonic must be words separated by single spaces");
  }
  const words = normalized.split(" ");
  if (!MNEMONIC_WORD_COUNTS.includes(words.length)) {
    throw new Error(
      `the mnemonic has ${words.length} words; BIP-39 mnemonics have ${MNEMONIC_WORD_COUNTS.join(", ")}`,
    );
  }
  const unknown = words.findIndex((word) => !ENGLISH_WORDS.has(word));
  if (unknown !== -1) {
    throw new Error(
      `word ${unknown + 1} of the mnemonic is not in the BIP-39 English word list (lowercase, single spaces)`,
    );
  }
  if (!validateMnemonic(normalized, ENGLISH_WORDLIST)) {
    throw new Error("the mnemonic's checksum does not match: a word is wrong or out of order");
  }
}

/** BIP-39 mnemonic to 64-byte seed, after checking the mnemonic (see assertMnemonic). */
export function mnemonicToSeed(mnemonic: string, passphrase = ""): Uint8Array {
  assertMnemonic(mnemonic);
  if (typeof passphrase !== "string") throw new Error("the BIP-39 passphrase must be a string");
  return mnemonicToSeedSync(mnemonic, passphrase);
}

/** EIP-2333 derive_master_SK: the root of the key tree for `seed` (at least 32 bytes). */
export function deriveMasterSK(seed: Uint8Array): bigint {
  if (!(seed instanceof Uint8Array)) throw new Error("the seed must be a byte array");
  if (seed.length < MIN_SEED_BYTES) {
    throw new Error(`the seed must be at least ${MIN_SEED_BYTES} bytes, got ${seed.length}`);
  }
  return hkdfModR(seed);
}

/** EIP-2333 derive_child_SK: the child of `parentSK` at `index` (0 <= index < 2^32). */
export function deriveChildSK(parentSK: bigint, index: number): bigint {
  const lamportPK = parentSKToLamportPK(parentSK, index);
  try {
    return hkdfModR(lamportPK);
  } finally {
    lamportPK.fill(0);
  }
}

/**
 * EIP-2333 parent_SK_to_lamport_PK: the compressed (hashed) Lamport public key of the child at
 * `index`. Exported for the EIP's intermediate test vector; it is a secret (the child key is
 * computed from it), and the caller zeroes it.
 */
export function parentSKToLamportPK(parentSK: bigint, index: number): Uint8Array {
  checkSecretScalar(parentSK);
  checkIndex(index, "child index");
  const salt = i2osp(BigInt(index), INDEX_BYTES);
  const ikm = i2osp(parentSK, SECRET_KEY_BYTES);
  const notIkm = ikm.map((byte) => ~byte & 0xff);
  const lamport0 = ikmToLamportSK(ikm, salt);
  const lamport1 = ikmToLamportSK(notIkm, salt);
  const outer = createHash(HASH);
  try {
    for (const lamportSK of [lamport0, lamport1]) {
      for (let i = 0; i < LAMPORT_CHUNKS; i++) {
        const chunk = lamportSK.subarray(i * DIGEST_BYTES, (i + 1) * DIGEST_BYTES);
        outer.update(createHash(HASH).update(chunk).digest());
      }
    }
    return new Uint8Array(outer.digest());
  } finally {
    for (const buffer of [ikm, notIkm, lamport0, lamport1]) buffer.fill(0);
  }
}

/**
 * EIP-2333 IKM_to_lamport_SK, as one buffer: the 255 32-byte Lamport secret chunks laid end to
 * end (chunk i at bytes 32i .. 32i+31). Exported for the EIP's intermediate test vector.
 */
export function ikmToLamportSK(ikm: Uint8Array, salt: Uint8Array): Uint8Array {
  return new Uint8Array(hkdfSync(HASH, ikm, salt, EMPTY, DIGEST_BYTES * LAMPORT_CHUNKS));
}

/** EIP-2334 signing key path of validator `index`. */
export function validatorSigningPath(index: number): string {
  checkIndex(index, "validator index");
  return `m/${EIP2334_PURPOSE}/${EIP2334_ETH_COIN_TYPE}/${index}/0/0`;
}

/**
 * Parses an EIP-2333 path strictly: `m`, then `/n` per level, with n a decimal index without
 * leading zeros (no spaces, no hardened marks, no trailing slash).
 */
export function parsePath(path: string): number[] {
  if (typeof path !== "string" || path.length > MAX_PATH_CHARS) {
    throw new Error(`a key path must be a string of at most ${MAX_PATH_CHARS} characters`);
  }
  if (!PATH_PATTERN.test(path)) {
    throw new Error(`key path ${JSON.stringify(path)} is not of the form m/n/n/... (decimal n)`);
  }
  const indices = path === "m" ? [] : path.slice(2).split("/").map(Number);
  if (indices.length > MAX_PATH_DEPTH) {
    throw new Error(`key path ${path} is deeper than ${MAX_PATH_DEPTH} levels`);
  }
  if (indices.some((index) => index > MAX_CHILD_INDEX)) {
    throw new Error(`key path ${path} has an index of 2^32 or more`);
  }
  return indices;
}

/** The secret key at `path` in the tree grown from `seed`. */
export function deriveAtPath(seed: Uint8Array, path: string): bigint {
  const indices = parsePath(path);
  return indices.reduce(deriveChildSK, deriveMasterSK(seed));
}

export interface DerivedValidatorKey {
  readonly index: number;
  /** EIP-2334 signing path, `m/12381/3600/index/0/0`. */
  readonly path: string;
  /** 32-byte big-endian scalar; the caller zeroes it once stored. */
  readonly secretKey: Uint8Array;
  /** Compressed G1 public key: 0x and 96 lowercase hex digits. */
  readonly pubkey: string;
  /** The key as `bls` imported it to compute `pubkey`: callers sign with it, not re-import it. */
  readonly key: BlsSecretKey;
}

/**
 * The signing keys of validators `start` .. `start + count - 1` of `mnemonic` (no BIP-39
 * passphrase, as the deposit CLI). The shared prefix m/12381/3600 is derived once. `bls` computes
 * the public keys: pass the running backend (blst is ~10x faster than noble at this).
 */
export function deriveValidatorKeys(
  mnemonic: string,
  start: number,
  count: number,
  bls: BlsBackend = noble,
): DerivedValidatorKey[] {
  checkIndex(start, "first validator index");
  if (!Number.isSafeInteger(count) || count < 0 || start + count - 1 > MAX_CHILD_INDEX) {
    throw new Error(
      `the key count must be a whole number with start + count <= 2^32, got ${String(count)}`,
    );
  }
  const seed = mnemonicToSeed(mnemonic);
  let account: bigint;
  try {
    account = [EIP2334_PURPOSE, EIP2334_ETH_COIN_TYPE].reduce(deriveChildSK, deriveMasterSK(seed));
  } finally {
    seed.fill(0);
  }
  const keys: DerivedValidatorKey[] = [];
  for (let index = start; index < start + count; index++) {
    const scalar = [index, 0, 0].reduce(deriveChildSK, account);
    const secretKey = i2osp(scalar, SECRET_KEY_BYTES);
    let key: BlsSecretKey;
    try {
      key = bls.importSecretKey(secretKey);
    } catch (error) {
      // Nothing is returned, so nobody else would zero the keys derived so far.
      secretKey.fill(0);
      for (const derived of keys) derived.secretKey.fill(0);
      throw error;
    }
    const pubkey = toHex(key.publicKey);
    keys.push({ index, path: validatorSigningPath(index), secretKey, pubkey, key });
  }
  return keys;
}

/** EIP-2333 HKDF_mod_r with an empty key_info: hashes IKM to a nonzero scalar below r. */
function hkdfModR(ikm: Uint8Array): bigint {
  const input = new Uint8Array(ikm.length + 1); // IKM || I2OSP(0, 1)
  input.set(ikm);
  const info = i2osp(BigInt(HKDF_MOD_R_BYTES), 2); // key_info ("") || I2OSP(L, 2)
  let salt: Uint8Array = KEYGEN_SALT;
  let sk = 0n;
  try {
    // Loops again only if OKM is 0 mod r, about 2^-255 likely; the salt changes each round.
    while (sk === 0n) {
      salt = new Uint8Array(createHash(HASH).update(salt).digest());
      const okm = new Uint8Array(hkdfSync(HASH, input, salt, info, HKDF_MOD_R_BYTES));
      sk = os2ip(okm) % CURVE_ORDER;
      okm.fill(0);
    }
    return sk;
  } finally {
    input.fill(0);
  }
}

function checkSecretScalar(sk: bigint): void {
  if (typeof sk !== "bigint" || sk <= 0n || sk >= CURVE_ORDER) {
    throw new Error("a parent secret key must be a scalar with 0 < sk < r");
  }
}

function checkIndex(index: number, what: string): void {
  if (!Number.isSafeInteger(index) || index < 0 || index > MAX_CHILD_INDEX) {
    throw new Error(`the ${what} must be a whole number in 0 .. 2^32-1, got ${String(index)}`);
  }
}

/** I2OSP: `value` as `length` big-endian bytes (value < 2^(8*length), checked by callers). */
function i2osp(value: bigint, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let rest = value;
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

/** OS2IP: big-endian bytes to an integer. */
function os2ip(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}
