import { describe, expect, test } from "bun:test";
import { openSecret, SealedSecretError, sealSecret } from "./sealed-secret";

const master = new Uint8Array(32).fill(7);
const secret = new Uint8Array(32).map((_, i) => i + 1);
const PK_A = `0x${"a1".repeat(48)}`;
const PK_B = `0x${"b2".repeat(48)}`;

describe("cloud_kv sealed secrets", () => {
  test("round trip; a fresh nonce every time", () => {
    const one = sealSecret(master, PK_A, secret);
    expect(sealSecret(master, PK_A, secret)).not.toBe(one);
    expect(openSecret(master, PK_A, one)).toEqual(secret);
  });

  test("another pubkey, another master key or a flipped byte does not open", () => {
    const sealed = sealSecret(master, PK_A, secret);
    expect(() => openSecret(master, PK_B, sealed)).toThrow(SealedSecretError);
    expect(() => openSecret(new Uint8Array(32).fill(8), PK_A, sealed)).toThrow(SealedSecretError);
    const bytes = Buffer.from(sealed, "base64");
    bytes[20] = (bytes[20] ?? 0) ^ 1;
    expect(() => openSecret(master, PK_A, bytes.toString("base64"))).toThrow(SealedSecretError);
    expect(() => openSecret(master, PK_A, "AAAA")).toThrow(/format or length/);
  });

  test("the error never carries key material", () => {
    try {
      openSecret(master, PK_B, sealSecret(master, PK_A, secret));
    } catch (error) {
      expect(String(error)).not.toContain(Buffer.from(secret).toString("hex"));
    }
  });
});
