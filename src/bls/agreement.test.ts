import { expect, test } from "bun:test";
import { hex } from "../../test/signing/bls-support";
import { createBlstBackend } from "./blst";
import { CURVE_ORDER } from "./key";
import { createNobleBackend } from "./noble";

const PAIRS = 1000;
/**
 * blst verifies every noble signature; noble (≈25 ms per verify here, more than a sign) verifies
 * every NOBLE_VERIFY_EVERY-th blst signature. The signatures are asserted byte-identical first, so
 * the sample only thins out repeats of the same noble verify computation. Set to 1 for all 1,000
 * (adds about 25 s).
 */
const NOBLE_VERIFY_EVERY = 10;

/** A uniformly random valid secret key: 32 random bytes, redrawn while 0 or >= r. */
function randomSecret(): Uint8Array {
  for (;;) {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    let v = 0n;
    for (const b of bytes) v = (v << 8n) | BigInt(b);
    if (v !== 0n && v < CURVE_ORDER) return bytes;
  }
}

test(
  `blst and noble agree on ${PAIRS} random (key, message) pairs and verify each other's signatures`,
  () => {
    const noble = createNobleBackend();
    const blst = createBlstBackend();
    let mismatches = 0;
    for (let i = 0; i < PAIRS; i++) {
      const secret = randomSecret();
      const message = crypto.getRandomValues(new Uint8Array(32));
      const nKey = noble.importSecretKey(secret);
      const bKey = blst.importSecretKey(secret);
      const nSig = noble.sign(nKey, message);
      const bSig = blst.sign(bKey, message);
      const ok =
        hex(nKey.publicKey) === hex(bKey.publicKey) &&
        hex(nSig) === hex(bSig) &&
        blst.verify(nKey.publicKey, message, nSig) &&
        (i % NOBLE_VERIFY_EVERY !== 0 || noble.verify(bKey.publicKey, message, bSig));
      if (!ok) {
        mismatches++;
        // Only the public key and message: the secret stays out of test logs.
        console.error(`disagreement for pubkey ${hex(bKey.publicKey)} message ${hex(message)}`);
      }
    }
    expect(mismatches).toBe(0);
    // The loop really ran and the checks are not vacuous: a wrong message fails under both.
    const key = blst.importSecretKey(randomSecret());
    const sig = blst.sign(key, new Uint8Array(32));
    expect(blst.verify(key.publicKey, new Uint8Array(32).fill(1), sig)).toBe(false);
    expect(noble.verify(key.publicKey, new Uint8Array(32).fill(1), sig)).toBe(false);
  },
  { timeout: 300_000 },
);
