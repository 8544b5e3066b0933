/**
 * The seal's secret sharing (docs/architecture.md, "Seal lifecycle"; modelled on Vault's Shamir
 * seal): a random 256-bit master key is split into one share per operator, any `threshold` of which
 * rebuild it.
 *
 * A share is `y-bytes || x`: MASTER_KEY_BYTES bytes of polynomial values followed by one
 * x-coordinate byte (1..255), the format of `shamir-secret-sharing`. Combining verifies
 * nothing by itself (any set of distinct shares interpolates to *some* key), so callers check
 * each share against its `shareDigest` on arrival and the result against `checkValue`.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { combine, split } from "shamir-secret-sharing";

/** The master key is an AES-256 / HMAC-SHA256 sized secret. */
export const MASTER_KEY_BYTES = 32;
/** A share carries one y-byte per key byte plus its x-coordinate byte. */
export const SHARE_BYTES = MASTER_KEY_BYTES + 1;
/** x-coordinates are non-zero bytes (x = 0 is the secret itself), so at most 255 shares exist. */
export const MAX_SHARES = 255;

const CHECK_VALUE_LABEL = "sigil/seal/check-value/v1";
const SHARE_DIGEST_LABEL = "sigil/seal/share-digest/v1";
const SHA256_HEX_CHARS = 64;
/** Width of the big-endian length prefix in front of each field of the share digest input. */
const LENGTH_PREFIX_BYTES = 4;

/** A fresh master key from the platform CSPRNG. */
export function newMasterKey(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(MASTER_KEY_BYTES));
}

/**
 * Splits `secret` (a master key) into `count` shares, any `threshold` of which rebuild it.
 * 1 ≤ threshold ≤ count ≤ 255. Threshold 1 (which the library refuses) gives every share
 * the secret itself with distinct x = 1..count, in the same format, so combining works
 * uniformly: one share is stripped, and several lie on the constant polynomial y = secret.
 */
export async function splitSecret(
  secret: Uint8Array,
  count: number,
  threshold: number,
): Promise<Uint8Array[]> {
  if (!(secret instanceof Uint8Array) || secret.length !== MASTER_KEY_BYTES) {
    throw new RangeError(`the secret to split must be ${MASTER_KEY_BYTES} bytes (a master key)`);
  }
  if (!Number.isInteger(count) || count < 1 || count > MAX_SHARES) {
    throw new RangeError(
      `the share count must be an integer from 1 to ${MAX_SHARES}, not ${count}`,
    );
  }
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > count) {
    throw new RangeError(
      `the threshold must be an integer from 1 to the share count (${count}), not ${threshold}`,
    );
  }
  if (threshold === 1) {
    return Array.from({ length: count }, (_, i) => {
      const share = new Uint8Array(SHARE_BYTES);
      share.set(secret);
      share[MASTER_KEY_BYTES] = i + 1;
      return share;
    });
  }
  // The library insists on exactly Uint8Array (a Buffer is refused), so it gets a plain copy.
  const copy = new Uint8Array(secret);
  try {
    return await split(copy, count, threshold);
  } finally {
    wipe(copy);
  }
}

/**
 * Rebuilds the master key from shares. It checks only the shape (length, distinct non-zero
 * x-coordinates); whether the result is the right key is for `matchesCheckValue` to say.
 * Fewer shares than the threshold still yield a 32-byte key, just a wrong one.
 */
export async function combineShares(shares: Uint8Array[]): Promise<Uint8Array> {
  if (!Array.isArray(shares) || shares.length === 0) {
    throw new Error("no shares to combine");
  }
  const seen = new Map<number, number>();
  for (const [i, share] of shares.entries()) {
    if (!(share instanceof Uint8Array) || share.length !== SHARE_BYTES) {
      const size = share instanceof Uint8Array ? `${share.length} bytes` : "not bytes";
      throw new Error(`share ${i + 1} is ${size}; a share is ${SHARE_BYTES} bytes`);
    }
    const x = share[MASTER_KEY_BYTES] ?? 0;
    if (x === 0) {
      throw new Error(`share ${i + 1} has x-coordinate 0, which no split produces`);
    }
    const earlier = seen.get(x);
    if (earlier !== undefined) {
      throw new Error(
        `shares ${earlier + 1} and ${i + 1} have the same x-coordinate: the same share was given twice`,
      );
    }
    seen.set(x, i);
  }
  const [first] = shares;
  if (shares.length === 1 && first) return first.slice(0, MASTER_KEY_BYTES);
  const copies = shares.map((share) => new Uint8Array(share));
  try {
    return await combine(copies);
  } finally {
    for (const copy of copies) wipe(copy);
  }
}

/**
 * A public fingerprint of the master key, stored with the seal so that an unseal can tell the
 * right key from a wrong one. HMAC (rather than a hash of the key) keeps it domain-separated
 * from every other use of the key.
 */
export function checkValue(masterKey: Uint8Array): string {
  assertMasterKey(masterKey);
  return createHmac("sha256", masterKey).update(CHECK_VALUE_LABEL).digest("hex");
}

/** Whether `masterKey` has the check value `expectedHex`; a malformed expectation never matches. */
export function matchesCheckValue(masterKey: Uint8Array, expectedHex: string): boolean {
  if (typeof expectedHex !== "string" || !/^[0-9a-f]+$/i.test(expectedHex)) return false;
  if (expectedHex.length !== SHA256_HEX_CHARS) return false;
  const actual = Buffer.from(checkValue(masterKey), "hex");
  return timingSafeEqual(actual, Buffer.from(expectedHex, "hex"));
}

/**
 * A digest of one operator's share, bound to the seal and the operator, stored at seal time so
 * that a submitted share is checked on arrival: a share of another operator, a corrupted one or
 * one of another seal is named at once, before any combining could produce a wrong key.
 *
 * Publishing it does not weaken the share. The x byte is not secret; all secrecy is in the 32
 * y-bytes. For threshold ≥ 2 each y-byte is s + a₁x + … + a_{t-1}x^{t-1} over GF(2⁸) with
 * uniformly random a₁ (and x ≠ 0), so a single share's y-bytes are uniform over 2²⁵⁶ values;
 * even someone holding t-1 other shares faces 2²⁵⁶ candidates for the last one (each candidate
 * master key fixes it), the same search the check value already allows. For threshold 1 the
 * y-bytes are the master key itself, again 256 uniformly random bits, and the digest's label
 * keeps it unrelated to the check value. Inverting SHA-256 over a 256-bit unknown is infeasible.
 *
 * Each field is length-prefixed so that no two (sealId, operator, share) triples encode alike.
 */
export function shareDigest(sealId: string, operator: string, share: Uint8Array): string {
  if (typeof sealId !== "string" || sealId.length === 0) {
    throw new RangeError("the seal id of a share digest must be a non-empty string");
  }
  if (typeof operator !== "string" || operator.length === 0) {
    throw new RangeError("the operator of a share digest must be a non-empty string");
  }
  if (!(share instanceof Uint8Array)) {
    throw new TypeError("the share of a share digest must be bytes");
  }
  const encoder = new TextEncoder();
  const hash = createHash("sha256");
  for (const field of [
    encoder.encode(SHARE_DIGEST_LABEL),
    encoder.encode(sealId),
    encoder.encode(operator),
    share,
  ]) {
    const prefix = new Uint8Array(LENGTH_PREFIX_BYTES);
    new DataView(prefix.buffer).setUint32(0, field.length);
    hash.update(prefix).update(field);
  }
  return hash.digest("hex");
}

/** Overwrites secret bytes once they are no longer needed. */
export function wipe(bytes: Uint8Array): void {
  bytes.fill(0);
}

function assertMasterKey(masterKey: Uint8Array): void {
  if (!(masterKey instanceof Uint8Array) || masterKey.length !== MASTER_KEY_BYTES) {
    throw new RangeError(`a master key is ${MASTER_KEY_BYTES} bytes`);
  }
}
