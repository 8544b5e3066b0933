import { describe, expect, test } from "bun:test";
import { cidrContains, parseCidr } from "./cidr";

describe("parseCidr: valid", () => {
  const valid: Array<[string, 4 | 6, number]> = [
    ["10.0.0.0/8", 4, 8],
    ["192.168.1.0/24", 4, 24],
    ["0.0.0.0/0", 4, 0],
    ["255.255.255.255/32", 4, 32],
    ["10.0.0.1", 4, 32],
    ["::1/128", 6, 128],
    ["::/0", 6, 0],
    ["2001:db8::/32", 6, 32],
    ["fe80::1:2/64", 6, 64],
    ["2001:0db8:0000:0000:0000:0000:0000:0001/128", 6, 128],
    ["::1", 6, 128],
    ["2001:DB8::ABCD", 6, 128],
    ["::ffff:10.0.0.1/128", 6, 128],
  ];
  for (const [text, family, prefix] of valid) {
    test(text, () => {
      const cidr = parseCidr(text);
      expect(cidr?.family).toBe(family);
      expect(cidr?.prefix).toBe(prefix);
    });
  }
});

describe("parseCidr: invalid", () => {
  const invalid = [
    "10.0.0.0/33",
    "::/129",
    "2001:db8::/200",
    "256.0.0.0/8",
    "10.0.0.300/32",
    "10.0.0/8",
    "10.0.0.0.0/8",
    "10.0.0.-1/8",
    "1::2::3/64",
    "1:::2/64",
    "2001:db8::g/64",
    "1:2:3:4:5:6:7:8:9/128",
    "::ffff:10.0.0.256/128",
    "junk",
    "",
    "10.0.0.0/",
    "/8",
    "10.0.0.0/8/8",
    "10.0.0.0/-1",
    "10.0.0.0/8a",
    "10.0.0.0 /8",
  ];
  for (const text of invalid) {
    test(JSON.stringify(text), () => {
      expect(parseCidr(text)).toBeUndefined();
    });
  }
});

describe("matching peers", () => {
  const cases: [cidr: string, peer: string, inside: boolean][] = [
    ["10.0.0.0/8", "10.255.0.1", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["192.168.1.0/25", "192.168.1.127", true],
    ["192.168.1.0/25", "192.168.1.128", false],
    ["0.0.0.0/0", "203.0.113.9", true],
    ["10.0.0.1", "10.0.0.1", true],
    ["10.0.0.1", "10.0.0.2", false],
    ["2001:db8::/32", "2001:db8:ffff::1", true],
    ["2001:db8::/32", "2001:db9::1", false],
    ["::1", "0:0:0:0:0:0:0:1", true],
    ["fe80::/10", "febf::1", true],
    ["fe80::/10", "fec0::1", false],
    // Bun reports an IPv4 client of a dual-stack listener as an IPv4-mapped IPv6 address.
    ["10.0.0.0/24", "::ffff:10.0.0.7", true],
    ["10.0.0.0/24", "::ffff:10.0.1.7", false],
    ["::ffff:127.0.0.1/128", "127.0.0.1", true],
    ["::ffff:127.0.0.1/128", "::ffff:127.0.0.1", true],
    ["::ffff:127.0.0.1/128", "127.0.0.2", false],
    ["::ffff:10.0.0.0/120", "10.0.0.200", true],
    // An IPv4 block does not contain IPv6 peers; ::/0 holds the IPv4-mapped range, so every peer.
    ["0.0.0.0/0", "::1", false],
    ["::/0", "10.0.0.1", true],
    ["10.0.0.0/8", "not an address", false],
  ];
  for (const [text, peer, inside] of cases) {
    test(`${text} ${inside ? "contains" : "does not contain"} ${peer}`, () => {
      const cidr = parseCidr(text);
      if (!cidr) throw new Error(`${text} did not parse`);
      expect(cidrContains(cidr, peer)).toBe(inside);
    });
  }
});
