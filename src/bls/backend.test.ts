import { describe, expect, test } from "bun:test";
import { be32, hex } from "../../test/signing/bls-support";
import { interopSecret } from "../../test/support/interop";
import { type BlsBackend, importSecretKeys } from "./backend";
import { createBlstBackend } from "./blst";
import { CURVE_ORDER } from "./key";
import { createNobleBackend } from "./noble";

describe("importSecretKeys on a backend without its own", () => {
  test("imports each secret as importSecretKey does; an invalid one fails alone, with its error", async () => {
    const noble = createNobleBackend();
    const blst = createBlstBackend();
    const secrets = [interopSecret(0), new Uint8Array(32), be32(CURVE_ORDER), interopSecret(1)];
    const results = await importSecretKeys(noble, secrets);
    expect(results.map((r) => (r.ok ? hex(r.key.publicKey) : r.error.message))).toEqual([
      // The published interop public keys 0 and 1.
      "0xa99a76ed7796f7be22d5b7e85deeb7c5677e88e511e0b337618f8c4eb61349b4bf2d153f649f7b53359fe8b94a38e44c",
      "BLS secret key is zero",
      "BLS secret key is not below the curve order",
      "0xb89bebc699769726a318c8e9971bd3171297c61aea4a6578a7a4f94b547dcba5bac16a89108b6b6a1fe3695d1a874a0b",
    ]);
    const first = results[0];
    if (!first?.ok) throw new Error("key 0 was refused");
    const message = new Uint8Array(32).fill(1);
    // The key lives in the backend it was imported into: noble signs, blst verifies.
    expect(blst.verify(first.key.publicKey, message, noble.sign(first.key, message))).toBe(true);
  });

  test("a backend that throws something other than an Error still gives an Error", async () => {
    const odd: BlsBackend = {
      ...createNobleBackend(),
      importSecretKey: () => {
        throw "refused";
      },
    };
    const [result] = await importSecretKeys(odd, [interopSecret(2)]);
    expect(result?.ok === false && result.error).toBeInstanceOf(Error);
    expect(result?.ok === false && result.error.message).toBe("refused");
  });

  test("a backend with its own importSecretKeys is asked directly", async () => {
    const calls: number[] = [];
    const noble = createNobleBackend();
    const own: BlsBackend = {
      ...noble,
      importSecretKey: () => {
        throw new Error("not this one");
      },
      importSecretKeys: async (secrets) => {
        calls.push(secrets.length);
        return secrets.map((secret) => ({ ok: true, key: noble.importSecretKey(secret) }));
      },
    };
    const results = await importSecretKeys(own, [interopSecret(3), interopSecret(4)]);
    expect(calls).toEqual([2]);
    expect(results.every((r) => r.ok)).toBe(true);
  });
});
