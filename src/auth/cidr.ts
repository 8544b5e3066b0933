import { isIP } from "node:net";

/** A parsed CIDR block, kept as bytes so that matching needs no string work. */
export interface Cidr {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** Parses `a.b.c.d/n` or `ipv6/n`; a bare address means a single host. Returns undefined when invalid. */
export function parseCidr(text: string): Cidr | undefined {
  const [address = "", prefixText, ...rest] = text.trim().split("/");
  if (rest.length > 0) return undefined;
  const family = isIP(address);
  if (family !== 4 && family !== 6) return undefined;
  const maxPrefix = family === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? maxPrefix : Number(prefixText);
  if (prefix > maxPrefix) return undefined;
  const bytes = family === 4 ? ipv4Bytes(address) : ipv6Bytes(address);
  if (!bytes) return undefined;
  // ::ffff:a.b.c.d/n (n ≥ 96) is an IPv4 range; peers are compared as IPv4, so store it as one.
  if (
    family === 6 &&
    prefix >= 96 &&
    bytes.slice(0, 10).every((b) => b === 0) &&
    bytes[10] === 0xff &&
    bytes[11] === 0xff
  ) {
    return { family: 4, bytes: bytes.slice(12), prefix: prefix - 96 };
  }
  return { family, bytes, prefix };
}

export function ipv4Bytes(address: string): Uint8Array | undefined {
  const parts = address.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    return undefined;
  }
  return Uint8Array.from(parts);
}

export function ipv6Bytes(address: string): Uint8Array | undefined {
  let text = address;
  const embeddedV4 = text.match(/(\d+\.\d+\.\d+\.\d+)$/)?.[1];
  if (embeddedV4) {
    const v4 = ipv4Bytes(embeddedV4);
    if (!v4) return undefined;
    const hex = (i: number) => (((v4[i] ?? 0) << 8) | (v4[i + 1] ?? 0)).toString(16);
    text = `${text.slice(0, -embeddedV4.length)}${hex(0)}:${hex(2)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  const bytes = new Uint8Array(16);
  for (const [i, group] of groups.entries()) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    const value = Number.parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  }
  return bytes;
}

/** Whether `address` (as Bun reports a peer: IPv4, IPv6, or IPv4-mapped IPv6) lies in `cidr`. */
export function cidrContains(cidr: Cidr, address: string): boolean {
  const mapped = address.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i)?.[1];
  const bytes = mapped
    ? ipv4Bytes(mapped)
    : address.includes(":")
      ? ipv6Bytes(address)
      : ipv4Bytes(address);
  if (!bytes || bytes.length !== cidr.bytes.length) return false;
  const whole = Math.floor(cidr.prefix / 8);
  for (let i = 0; i < whole; i++) if (bytes[i] !== cidr.bytes[i]) return false;
  const rest = cidr.prefix % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] ?? 0) & mask) === ((cidr.bytes[whole] ?? 0) & mask);
}
