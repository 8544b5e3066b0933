import { describe, expect, test } from "bun:test";
import {
  type CorsPolicy,
  corsPolicy,
  corsResponseHeaders,
  isPreflight,
  originAllowed,
  preflightHeaders,
} from "./cors";

const APP = "https://app.example";
const policy: CorsPolicy = { allowed: [APP, "http://localhost:3000"] };
const any: CorsPolicy = { allowed: ["*"] };

function preflight(headers: Record<string, string>, method = "OPTIONS"): Request {
  return new Request("http://sigil.test/api/v1/eth2/sign/0xabc", { method, headers });
}

describe("corsPolicy", () => {
  test("null or an empty list disables CORS", () => {
    expect(corsPolicy(null)).toBeUndefined();
    expect(corsPolicy([])).toBeUndefined();
  });

  test("keeps the listed origins, lower-cased", () => {
    expect(corsPolicy(["https://App.Example", "*"])).toEqual({
      allowed: ["https://app.example", "*"],
    });
  });

  test("an origin configured with a trailing slash still matches the browser's Origin", () => {
    // Config validation accepts "https://app.example/" as an origin; browsers send no slash.
    const configured = corsPolicy([`${APP}/`]);
    expect(configured).toBeDefined();
    if (configured) expect(originAllowed(configured, APP)).toBe(true);
  });
});

describe("originAllowed", () => {
  test("allows listed origins only", () => {
    expect(originAllowed(policy, APP)).toBe(true);
    expect(originAllowed(policy, "http://localhost:3000")).toBe(true);
    expect(originAllowed(policy, "https://evil.example")).toBe(false);
    expect(originAllowed(policy, "http://app.example")).toBe(false);
    expect(originAllowed(policy, "https://app.example:8443")).toBe(false);
    expect(originAllowed(policy, "http://localhost:3001")).toBe(false);
    expect(originAllowed(policy, "https://app.example.evil.example")).toBe(false);
    expect(originAllowed(policy, "")).toBe(false);
  });

  test("compares case-insensitively and ignores a trailing slash on the request origin", () => {
    expect(originAllowed(policy, "HTTPS://APP.EXAMPLE")).toBe(true);
    expect(originAllowed(policy, `${APP}/`)).toBe(true);
  });

  test('"*" allows any origin', () => {
    expect(originAllowed(any, "https://whatever.example")).toBe(true);
    expect(originAllowed({ allowed: [APP, "*"] }, "https://other.example")).toBe(true);
  });
});

describe("corsResponseHeaders", () => {
  test("echoes an allowed origin and varies on Origin", () => {
    expect(corsResponseHeaders(policy, APP)).toEqual({
      "access-control-allow-origin": APP,
      vary: "Origin",
    });
  });

  test('with "*" echoes the specific origin rather than a wildcard', () => {
    expect(corsResponseHeaders(any, "https://x.example")).toEqual({
      "access-control-allow-origin": "https://x.example",
      vary: "Origin",
    });
  });

  test("no headers for a disallowed or missing origin", () => {
    expect(corsResponseHeaders(policy, "https://evil.example")).toEqual({});
    expect(corsResponseHeaders(policy, null)).toEqual({});
    expect(corsResponseHeaders(any, null)).toEqual({});
    expect(corsResponseHeaders(policy, "")).toEqual({});
  });

  test("never grants credentials", () => {
    expect(corsResponseHeaders(any, APP)).not.toHaveProperty("access-control-allow-credentials");
  });
});

describe("isPreflight", () => {
  test("OPTIONS with Access-Control-Request-Method", () => {
    expect(isPreflight(preflight({ origin: APP, "access-control-request-method": "POST" }))).toBe(
      true,
    );
  });

  test("plain OPTIONS or another method with the header is not a preflight", () => {
    expect(isPreflight(preflight({ origin: APP }))).toBe(false);
    expect(isPreflight(preflight({ "access-control-request-method": "POST" }, "GET"))).toBe(false);
    expect(isPreflight(preflight({ "access-control-request-method": "POST" }, "POST"))).toBe(false);
  });
});

describe("preflightHeaders", () => {
  test("an allowed origin gets origin, methods, default headers and max-age", () => {
    const headers = preflightHeaders(
      policy,
      preflight({ origin: APP, "access-control-request-method": "POST" }),
    );
    expect(headers).toEqual({
      "access-control-allow-origin": APP,
      vary: "Origin",
      "access-control-allow-methods": "GET, POST, PUT, DELETE, OPTIONS",
      "access-control-allow-headers": "authorization, content-type, accept",
      "access-control-max-age": "600",
    });
  });

  test("requested headers are echoed back", () => {
    const headers = preflightHeaders(
      policy,
      preflight({
        origin: APP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, x-custom",
      }),
    );
    expect(headers?.["access-control-allow-headers"]).toBe("content-type, x-custom");
  });

  test("undefined for a disallowed or missing origin", () => {
    expect(
      preflightHeaders(
        policy,
        preflight({ origin: "https://evil.example", "access-control-request-method": "POST" }),
      ),
    ).toBeUndefined();
    expect(
      preflightHeaders(policy, preflight({ "access-control-request-method": "POST" })),
    ).toBeUndefined();
    expect(
      preflightHeaders(any, preflight({ "access-control-request-method": "POST" })),
    ).toBeUndefined();
  });

  test('"*" accepts any origin in a preflight', () => {
    const headers = preflightHeaders(
      any,
      preflight({ origin: "https://x.example", "access-control-request-method": "DELETE" }),
    );
    expect(headers?.["access-control-allow-origin"]).toBe("https://x.example");
  });
});
