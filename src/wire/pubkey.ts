import { Type } from "@sinclair/typebox";

/**
 * A BLS12-381 public key as the API and config write it: 0x + 48 bytes of hex, either case (the
 * pattern of the wire shapes that carry keys).
 */
export const PUBKEY_PATTERN = "^0x[0-9a-fA-F]{96}$";
const PUBKEY = new RegExp(PUBKEY_PATTERN);

/** The wire shape of a public key: a problem quotes the value (a key is public) and the format. */
export const PubkeyText = Type.String({
  pattern: PUBKEY_PATTERN,
  problem: "invalid public key {value}: expected 0x followed by 96 hex characters",
});

export function isPubkeyHex(value: string): boolean {
  return PUBKEY.test(value);
}

/** Pubkeys are compared and stored lower-case; clients may send either case. */
export function normalizePubkey(value: string): string {
  return value.toLowerCase();
}
