import { describe, expect, test } from "bun:test";
import { cidrContains, parseCidr } from "./cidr";

function bytesOf(text: string): number[] {
  const cidr = parseCidr(text);
  if (!cidr) throw new Error(`${text} did not parse`);
  return [...cidr.bytes];
}

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
    // IPv4-mapped ranges are kept as the IPv4 range they name (peers are compared as IPv4).
    ["::ffff:10.0.0.1/128", 4, 32],
  ];
  for (const [text, family, prefix] of valid) {
    test(text, () => {
      const cidr = parseCidr(text);
      expect(cidr?.family).toBe(family);
      expect(cidr?.prefix).toBe(prefix);
      expect(cidr?.bytes.length).toBe(family === 4 ? 4 : 16);
    });
  }

  test("IPv4 bytes", () => {
    expect(bytesOf("192.168.1.7/24")).toEqual([192, 168, 1, 7]);
    expect(bytesOf("10.0.0.1")).toEqual([10, 0, 0, 1]);
  });

  test("IPv6 bytes, with :: expanded in the right place", () => {
    expect(bytesOf("::1/128")).toEqual([...Array(15).fill(0), 1]);
    expect(bytesOf("2001:db8::/32")).toEqual([0x20, 0x01, 0x0d, 0xb8, ...Array(12).fill(0)]);
    expect(bytesOf("1:2::7:8")).toEqual([0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8]);
    expect(bytesOf("2001:DB8::ABCD")).toEqual([
      0x20,
      0x01,
      0x0d,
      0xb8,
      ...Array(10).fill(0),
      0xab,
      0xcd,
    ]);
  });

  test("IPv4-embedded IPv6", () => {
    expect(bytesOf("::ffff:10.0.0.1/128")).toEqual([10, 0, 0, 1]);
    expect(bytesOf("64:ff9b::10.0.0.1/128")).toEqual([
      0,
      0x64,
      0xff,
      0x9b,
      ...Array(8).fill(0),
      10,
      0,
      0,
      1,
    ]);
  });
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

describe("IPv4-mapped IPv6 CIDRs", () => {
  test("::ffff:a.b.c.d/n matches the IPv4 peers it names", () => {
    const cidr = parseCidr("::ffff:127.0.0.1/128");
    expect(cidr?.family).toBe(4);
    if (!cidr) throw new Error("unparsed");
    expect(cidrContains(cidr, "127.0.0.1")).toBe(true);
    expect(cidrContains(cidr, "::ffff:127.0.0.1")).toBe(true);
    expect(cidrContains(cidr, "127.0.0.2")).toBe(false);
  });
});
