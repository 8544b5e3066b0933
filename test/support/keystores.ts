import { create, defaultPbkdfModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { interopSecret } from "./interop";

/** A KDF module of @chainsafe/bls-keystore's `create`. */
export type KdfModule = NonNullable<Parameters<typeof create>[5]>;

/** PBKDF2 at c=2^10: a real EIP-2335 keystore that opens in milliseconds. */
export const CHEAP_PBKDF2: KdfModule = {
  ...defaultPbkdfModule(),
  params: { ...defaultPbkdfModule().params, c: 1024 },
};

export interface TestKeystore {
  /** 0x + 96 lower-case hex digits. */
  pubkey: string;
  /** The keystore's JSON text, as a Key Manager import carries it. */
  keystore: string;
}

/** Interop key `index` in a keystore made by another implementation (@chainsafe/bls-keystore). */
export async function interopKeystore(
  index: number,
  password: string,
  kdf: KdfModule = CHEAP_PBKDF2,
): Promise<TestKeystore> {
  const secret = interopSecret(index);
  const pubkey = SecretKey.fromBytes(secret).toPublicKey().toBytes();
  const keystore = await create(password, secret, pubkey, `m/12381/3600/${index}/0/0`, "", kdf);
  return { pubkey: `0x${Buffer.from(pubkey).toString("hex")}`, keystore: JSON.stringify(keystore) };
}
