import { describe, expect, test } from "bun:test";
import { allowlistEntryProblem, checkHost, hostAllowlist, isHostAllowed } from "./host";

describe('Host = uri-host [ ":" port ] (RFC 9110 §7.2, RFC 3986 §3.2.2)', () => {
  test.each([
    ["localhost", "localhost"],
    ["LocalHost:9000", "localhost"],
    ["127.0.0.1:9000", "127.0.0.1"],
    ["signer.internal", "signer.internal"],
    ["[::1]", "::1"],
    ["[::1]:9000", "::1"],
    ["[0:0:0:0:0:0:0:1]:9000", "::1"],
    ["[FE80::1]", "fe80::1"],
    // An empty port is allowed by the grammar (port = *DIGIT).
    ["host:", "host"],
    ["a%41b", "a%41b"],
  ])("%p is valid and names %p", (value, name) => {
    expect(checkHost(value)).toEqual({ ok: true, name });
  });

  test.each([
    [null, "no Host header"],
    ["", "empty"],
    ["a b", "not a valid"],
    ["x?", "not a valid"],
    ["[::1", "not a valid"],
    ["::1", "not a valid"],
    ["[zz]", "not a valid"],
    ["a, b", "not a valid"], // two Host header lines, as Bun joins them
    ["user@host", "not a valid"],
    ["host/path", "not a valid"],
    ["ex.com:80:80", "not a valid"],
    ["a%4", "not a valid"],
    ["h\u00e4st", "not a valid"],
    ["127.0.0.1:65536", "port above 65535"],
    // A zone names an interface of the client; URL parsers refuse it (it was a 500 once).
    ["[::1%lo]", "zone id"],
    ["[fe80::1%25eth0]:9000", "zone id"],
    [`${"a".repeat(300)}`, "too long"],
  ])("%p is refused (%s)", (value, reason) => {
    const check = checkHost(value);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toContain(reason);
  });
});

describe("server.host_allowlist", () => {
  test("matches names without their port, in any case, and IPv6 in any spelling", () => {
    const allowlist = hostAllowlist(["localhost", "::1", "Signer.Internal"], "127.0.0.1");
    const allowed = (host: string) => {
      const check = checkHost(host);
      return check.ok && isHostAllowed(check.name, allowlist);
    };
    expect(allowed("localhost:9000")).toBe(true);
    expect(allowed("SIGNER.internal")).toBe(true);
    expect(allowed("[0::1]:9000")).toBe(true);
    expect(allowed("127.0.0.1:9000")).toBe(true); // the listen address
    expect(allowed("evil.example")).toBe(false);
    expect(allowed("localhost.evil.example")).toBe(false);
    expect(allowed("10.0.0.5")).toBe(false);
  });

  test("a wildcard listen address is not a name anyone is allowed to send", () => {
    expect(isHostAllowed("0.0.0.0", hostAllowlist(["localhost"], "0.0.0.0"))).toBe(false);
    expect(isHostAllowed("::", hostAllowlist(["localhost"], "::"))).toBe(false);
    expect(isHostAllowed("fe80::1", hostAllowlist(["localhost"], "fe80::1"))).toBe(true);
  });

  test("* allows any name", () => {
    expect(isHostAllowed("evil.example", hostAllowlist(["localhost", "*"], "0.0.0.0"))).toBe(true);
  });

  test("entries that can never match are reported", () => {
    expect(allowlistEntryProblem("*")).toBeUndefined();
    expect(allowlistEntryProblem("[::1]")).toBeUndefined();
    expect(allowlistEntryProblem("fe80::1")).toBeUndefined();
    expect(allowlistEntryProblem("signer:9000")).toContain("without a port");
    expect(allowlistEntryProblem("a b")).toContain("not a host name");
  });
});
