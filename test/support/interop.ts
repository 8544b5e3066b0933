import { createHash } from "node:crypto";

const CURVE_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n;

/** Interop key i: SHA-256 of i as a 32-byte little-endian integer, read little-endian, mod r. */
export function interopSecret(index: number): Uint8Array {
  const input = Buffer.alloc(32);
  input.writeUInt32LE(index, 0);
  const digest = createHash("sha256").update(input).digest();
  const scalar = BigInt(`0x${Buffer.from(digest).reverse().toString("hex")}`) % CURVE_ORDER;
  return Uint8Array.from(Buffer.from(scalar.toString(16).padStart(64, "0"), "hex"));
}
