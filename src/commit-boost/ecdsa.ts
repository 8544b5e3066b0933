/**
 * ECDSA proxy keys: secp256k1 (@noble/curves), deterministic nonces (RFC 6979), low-s, over the
 * 32-byte signed root itself (no EIP-191 prefix), encoded as Ethereum's 65-byte r ‖ s ‖ v with
 * v = 27 + recovery id: what commit-boost-client's alloy signer produces for the same key and root.
 */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { keccak_256 } from "@noble/hashes/sha3";

export const ECDSA_SECRET_BYTES = 32;
export const ECDSA_SIGNATURE_BYTES = 65;

/** A fresh secret key from the system's CSPRNG. The caller wipes it when done. */
export function newEcdsaSecret(): Uint8Array {
  return secp256k1.utils.randomSecretKey();
}

/** The 20-byte Ethereum address of a secret key: keccak256(uncompressed point)[12:]. */
export function ecdsaAddress(secret: Uint8Array): Uint8Array {
  const point = secp256k1.getPublicKey(secret, false);
  return addressOfPublicKey(point);
}

/** The address of a 65-byte uncompressed public key (0x04 ‖ x ‖ y). */
export function addressOfPublicKey(uncompressed: Uint8Array): Uint8Array {
  return keccak_256(uncompressed.subarray(1)).subarray(12);
}

/** r ‖ s ‖ v (v = 27 or 28) over `root`. */
export function ecdsaSign(secret: Uint8Array, root: Uint8Array): Uint8Array {
  if (root.length !== 32) throw new RangeError("an ECDSA proxy signs 32-byte roots");
  // noble's "recovered" format is recovery ‖ r ‖ s.
  const recovered = secp256k1.sign(root, secret, { prehash: false, format: "recovered" });
  const out = new Uint8Array(ECDSA_SIGNATURE_BYTES);
  out.set(recovered.subarray(1, 65));
  out[64] = 27 + (recovered[0] ?? 0);
  return out;
}

/** keccak256, for JWT payload hashes. */
export function keccak256(bytes: Uint8Array): Uint8Array {
  return keccak_256(bytes);
}
