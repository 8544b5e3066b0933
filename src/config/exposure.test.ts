import { describe, expect, test } from "bun:test";
import { isLoopbackAddress, isUnspecifiedAddress } from "./exposure";

describe("listener addresses", () => {
  test("loopback: 127.0.0.0/8, ::1 in any spelling, localhost", () => {
    for (const address of [
      "127.0.0.1",
      "127.1.2.3",
      "::1",
      "[::1]",
      "0:0:0:0:0:0:0:1",
      "localhost",
    ])
      expect({ address, loopback: isLoopbackAddress(address) }).toEqual({
        address,
        loopback: true,
      });
    for (const address of [
      "0.0.0.0",
      "::",
      "10.0.0.1",
      "128.0.0.1",
      "::2",
      "127.0.0.1.nip.io",
      "fe80::1",
    ])
      expect({ address, loopback: isLoopbackAddress(address) }).toEqual({
        address,
        loopback: false,
      });
  });

  test("unspecified: 0.0.0.0 and ::", () => {
    expect(["0.0.0.0", "::", "[::]"].every(isUnspecifiedAddress)).toBe(true);
    expect(["127.0.0.1", "::1", "10.0.0.1"].some(isUnspecifiedAddress)).toBe(false);
  });
});
