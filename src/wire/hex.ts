/**
 * Bytes as they cross the wire: 0x + hex. The conversion is the runtime's own
 * (`Uint8Array.prototype.toHex` and `Uint8Array.fromHex`); these only add and check the prefix.
 */

/** 0x + lower-case hex. */
export function toHex(bytes: Uint8Array): string {
  return `0x${bytes.toHex()}`;
}

/** Parses 0x-prefixed hex of any case and whole bytes; throws a TypeError on anything else. */
export function fromHex(hex: string): Uint8Array {
  if (hex.startsWith("0x")) {
    try {
      return Uint8Array.fromHex(hex.slice(2));
    } catch {
      // Not hex, or an odd number of digits: the same answer as a missing prefix.
    }
  }
  throw new TypeError(`not 0x-prefixed hex: ${hex.length > 80 ? `${hex.slice(0, 80)}…` : hex}`);
}

/** Whether two byte arrays hold the same bytes (public values only: not constant-time). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
