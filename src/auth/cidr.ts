import { BlockList, isIP } from "node:net";

/**
 * A parsed CIDR block. Matching is the runtime's `BlockList`, which compares IPv4, IPv6 and
 * IPv4-mapped IPv6 addresses across families (a `::ffff:10.0.0.0/120` block contains the peer
 * `10.0.0.7`, and `10.0.0.0/24` contains `::ffff:10.0.0.7`).
 */
export interface Cidr {
  readonly family: 4 | 6;
  readonly prefix: number;
  readonly list: BlockList;
}

const ADDRESS_TYPE = { 4: "ipv4", 6: "ipv6" } as const;

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
  const list = new BlockList();
  list.addSubnet(address, prefix, ADDRESS_TYPE[family]);
  return { family, prefix, list };
}

/** Whether `address` (as Bun reports a peer: IPv4, IPv6, or IPv4-mapped IPv6) lies in `cidr`. */
export function cidrContains(cidr: Cidr, address: string): boolean {
  const family = isIP(address);
  if (family !== 4 && family !== 6) return false;
  return cidr.list.check(address, ADDRESS_TYPE[family]);
}
