// commit-boost-client's own golden values (test/vectors/commit-boost/README.md): the roots,
// domains, signature and JWT checks of this feature match its signer byte for byte.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SecretKey } from "@chainsafe/blst";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { decryptKeystore } from "../keys/keystore";
import { fromHex, toHex } from "../wire/hex";
import { addressOfPublicKey, ecdsaAddress, ecdsaSign } from "./ecdsa";
import { checkModuleJwt } from "./jwt";
import { commitBoostDomain, computeDomain, requestSigningRoot, signingRoot } from "./roots";

const DIR = join(import.meta.dir, "../../test/vectors/commit-boost");
const vectors = JSON.parse(readFileSync(join(DIR, "vectors.json"), "utf8"));

describe("commit-boost-client vectors", () => {
  const v = vectors.bls_request_signature;
  const info = (signingId: string) => ({
    data: fromHex(v.object_root),
    moduleSigningId: fromHex(signingId),
    nonce: BigInt(v.nonce),
    chainId: BigInt(v.chain_id),
  });

  test("BLS signature of a module request (test_signer_sign_request_good)", async () => {
    const keystore = JSON.parse(readFileSync(join(DIR, v.keystore), "utf8"));
    const secret = await decryptKeystore(
      keystore,
      readFileSync(join(DIR, v.password_file), "utf8"),
    );
    const key = SecretKey.fromBytes(secret);
    expect(key.toPublicKey().toHex()).toBe(v.pubkey);
    const domain = commitBoostDomain(fromHex(v.genesis_fork_version));
    const root = requestSigningRoot(info(v.module_signing_id), domain);
    expect(key.sign(root).toHex()).toBe(v.signature);
    // Another module's signing id gives another signature (test_signer_sign_request_different_module).
    const other = requestSigningRoot(info(v.other_module_signing_id), domain);
    expect(key.sign(other).toHex()).not.toBe(v.signature);
  });

  test("signing root without signing info (test_ecdsa_signer_noncommit)", () => {
    const w = vectors.commit_boost_signing_root_without_info;
    const root = signingRoot(
      fromHex(w.object_root),
      commitBoostDomain(fromHex(w.genesis_fork_version)),
    );
    expect(toHex(root)).toBe(w.signing_root);
    // The ECDSA signature over it recovers to the key's address (verify_ecdsa_signature).
    const secret = fromHex(w.ecdsa_secret);
    const signature = ecdsaSign(secret, root);
    const recovered = secp256k1.Signature.fromBytes(signature.subarray(0, 64), "compact")
      .addRecoveryBit((signature[64] ?? 0) - 27)
      .recoverPublicKey(root)
      .toBytes(false);
    expect(toHex(addressOfPublicKey(recovered))).toBe(toHex(ecdsaAddress(secret)));
    expect(secp256k1.verify(signature.subarray(0, 64), root, recovered, { prehash: false })).toBe(
      true,
    );
  });

  test("compute_domain matches the known builder domains", () => {
    const b = vectors.builder_domains;
    for (const chain of b.chains) {
      const domain = computeDomain(
        fromHex(b.domain_type),
        fromHex(chain.genesis_fork_version),
        new Uint8Array(32),
      );
      expect([...domain]).toEqual(chain.domain);
    }
  });

  test("JWT: HS256 signature checked with the module's secret; expiry refused", () => {
    const j = vectors.jwt;
    const secrets = (module: string) => (module === j.module ? j.secret : undefined);
    const request = { route: "/signer/v1/get_pubkeys", body: new Uint8Array(0) };
    expect(
      checkModuleJwt(j.expired_token, secrets, { ...request, now: j.expired_token_exp + 3600 }),
    ).toEqual({
      ok: false,
      reason: "expired",
    });
    // Before expiry its signature holds; the old claim set has no route, which v0.10 requires.
    expect(
      checkModuleJwt(j.expired_token, secrets, { ...request, now: j.expired_token_exp - 60 }),
    ).toEqual({
      ok: false,
      reason: "wrong_route",
    });
    expect(
      checkModuleJwt(j.invalid_signature_token, secrets, {
        ...request,
        now: j.expired_token_exp - 60,
      }),
    ).toEqual({ ok: false, reason: "bad_signature" });
  });
});
