/**
 * Pure-TypeScript BLS backend over @noble/curves (bls12-381, G1 public keys, G2 signatures),
 * always with the Ethereum proof-of-possession DST: noble's own default is the `_NUL_` DST, which
 * gives signatures no Ethereum client accepts.
 */
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { type BlsSecretKey, ETH_BLS_DST, type LocalBlsBackend } from "./backend";
import { createClaimCheck, createKeyHandle, hasVerifyShape, parseSecretScalar } from "./key";

const sigs = bls12_381.longSignatures;
const G1 = bls12_381.G1.Point;

export function createNobleBackend(): LocalBlsBackend {
  // The secret scalars live only here, reachable from the handles this backend issued.
  const secrets = new WeakMap<BlsSecretKey, bigint>();
  // Keys imported with a claimed public key: compared with the derived one before signing.
  const claims = createClaimCheck();

  return Object.freeze({
    name: "noble",

    importSecretKey(secret: Uint8Array): BlsSecretKey {
      const scalar = parseSecretScalar(secret);
      const key = createKeyHandle("noble", G1.BASE.multiply(scalar).toBytes(true));
      secrets.set(key, scalar);
      return key;
    },

    importClaimedKey(secret: Uint8Array, publicKey: Uint8Array): BlsSecretKey {
      const scalar = parseSecretScalar(secret);
      const key = createKeyHandle("noble", publicKey);
      secrets.set(key, scalar);
      claims.claimed(key);
      return key;
    },

    sign(key: BlsSecretKey, message: Uint8Array): Uint8Array {
      const scalar = secrets.get(key);
      if (scalar === undefined) throw new Error("BLS key was not imported by the noble backend");
      if (!(message instanceof Uint8Array)) throw new Error("BLS message must be a byte array");
      claims.check(key, () => G1.BASE.multiply(scalar).toBytes(true));
      const hashed = sigs.hash(message, ETH_BLS_DST);
      return sigs.Signature.toBytes(hashed.multiply(scalar));
    },

    forget(key: BlsSecretKey): void {
      // Nothing to zero from here: a bigint cannot be overwritten, only let go of.
      secrets.delete(key);
    },

    verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
      if (!hasVerifyShape(publicKey, message, signature)) return false;
      try {
        // fromBytes checks the encoding, that the point is on the curve and in the subgroup.
        const pk = G1.fromBytes(publicKey);
        if (pk.is0()) return false; // KeyValidate: the infinity public key is never valid
        const sig = sigs.Signature.fromBytes(signature);
        if (sig.is0()) return false;
        return sigs.verify(sig, sigs.hash(message, ETH_BLS_DST), pk);
      } catch {
        return false;
      }
    },
  });
}
