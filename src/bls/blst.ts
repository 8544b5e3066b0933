/**
 * Native BLS backend over @chainsafe/blst (supranational/blst). blst's `sign` uses the Ethereum
 * POP DST. Importing this module loads the native binding: use `loadBlsBackend` (select.ts), which
 * imports it dynamically, unless a hard failure at import time is what you want.
 */
import { PublicKey, SecretKey, Signature, verify } from "@chainsafe/blst";
import type { BlsSecretKey, LocalBlsBackend } from "./backend";
import { checkSecretScalar, createClaimCheck, createKeyHandle, hasVerifyShape } from "./key";

export function createBlstBackend(): LocalBlsBackend {
  // The native secret keys live only here, reachable from the handles this backend issued.
  const secrets = new WeakMap<BlsSecretKey, SecretKey>();
  // Keys imported with a claimed public key: compared with the derived one before signing.
  const claims = createClaimCheck();

  const secretKey = (secret: Uint8Array): SecretKey => {
    // blst refuses zero and >= r itself today, but with a message-less "Invalid encoding";
    // check explicitly so the contract does not hang on a native library's behaviour.
    checkSecretScalar(secret);
    try {
      return SecretKey.fromBytes(secret);
    } catch {
      throw new Error("BLS secret key was refused by blst");
    }
  };

  return Object.freeze({
    name: "blst",

    importSecretKey(secret: Uint8Array): BlsSecretKey {
      const sk = secretKey(secret);
      const key = createKeyHandle("blst", sk.toPublicKey().toBytes(true));
      secrets.set(key, sk);
      return key;
    },

    importClaimedKey(secret: Uint8Array, publicKey: Uint8Array): BlsSecretKey {
      const sk = secretKey(secret);
      const key = createKeyHandle("blst", publicKey);
      secrets.set(key, sk);
      claims.claimed(key);
      return key;
    },

    sign(key: BlsSecretKey, message: Uint8Array): Uint8Array {
      const sk = secrets.get(key);
      if (sk === undefined) throw new Error("BLS key was not imported by the blst backend");
      if (!(message instanceof Uint8Array)) throw new Error("BLS message must be a byte array");
      claims.check(key, () => sk.toPublicKey().toBytes(true));
      return sk.sign(message).toBytes(true);
    },

    forget(key: BlsSecretKey): void {
      // Nothing to zero from here: blst's SecretKey has no wipe; its native memory goes with the object.
      secrets.delete(key);
    },

    verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
      // Fixed lengths: blst would also take the uncompressed 96/192-byte forms.
      if (!hasVerifyShape(publicKey, message, signature)) return false;
      try {
        // pkValidate: infinity and subgroup check; sigValidate: subgroup and infinity check.
        const pk = PublicKey.fromBytes(publicKey, true);
        const sig = Signature.fromBytes(signature, true, true);
        return verify(message, pk, sig, true, true);
      } catch {
        return false;
      }
    },
  });
}
