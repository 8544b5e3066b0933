import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { bearerToken, checkModuleJwt, createModuleJwt, EXP_LEEWAY_SECONDS } from "./jwt";

const NOW = 1_800_000_000;
const ROUTE = "/signer/v1/request_signature/bls";
const BODY = new TextEncoder().encode('{"pubkey":"0x01","object_root":"0x02","nonce":0}');
const secrets = (module: string) => ({ alpha: "alpha-secret", beta: "beta-secret" })[module];
const expect_ = { route: ROUTE, body: BODY, now: NOW };
const token = (claims: Partial<{ module: string; route: string; exp: number; body: Uint8Array }>) =>
  createModuleJwt(
    { module: "alpha", route: ROUTE, exp: NOW + 300, body: BODY, ...claims },
    claims.module === "beta" ? "beta-secret" : "alpha-secret",
  );

describe("module JWT", () => {
  test("a token for this module, route and body passes", () => {
    expect(checkModuleJwt(token({}), secrets, expect_)).toEqual({ ok: true, module: "alpha" });
  });

  test("each wrong claim is refused with its reason", () => {
    const cases: [string | undefined, string][] = [
      [undefined, "missing_token"],
      ["not.a.jwt.at-all", "malformed_token"],
      [token({ route: "/signer/v1/request_signature/proxy-bls" }), "wrong_route"],
      [token({ body: new TextEncoder().encode("{}") }), "wrong_payload_hash"],
      [token({ exp: NOW - EXP_LEEWAY_SECONDS - 1 }), "expired"],
      [token({ module: "gamma" }), "unknown_module"],
    ];
    for (const [jwt, reason] of cases)
      expect(checkModuleJwt(jwt, secrets, expect_)).toEqual({ ok: false, reason } as never);
    // Claims of module beta, signed with alpha's secret: the module claim picks beta's secret.
    const forged = createModuleJwt(
      { module: "beta", route: ROUTE, exp: NOW + 300, body: BODY },
      "alpha-secret",
    );
    expect(checkModuleJwt(forged, secrets, expect_)).toEqual({
      ok: false,
      reason: "bad_signature",
    });
  });

  test("within the leeway an expired token still passes", () => {
    expect(checkModuleJwt(token({ exp: NOW - EXP_LEEWAY_SECONDS }), secrets, expect_).ok).toBe(
      true,
    );
  });

  test("alg none and HS512 are refused even with a valid HMAC", () => {
    for (const alg of ["none", "HS512", "hs256"]) {
      const header = Buffer.from(JSON.stringify({ alg, typ: "JWT" })).toString("base64url");
      const claims = token({}).split(".")[1];
      const mac = createHmac("sha256", "alpha-secret")
        .update(`${header}.${claims}`)
        .digest("base64url");
      expect(checkModuleJwt(`${header}.${claims}.${mac}`, secrets, expect_)).toEqual({
        ok: false,
        reason: "unsupported_algorithm",
      });
    }
  });

  test("a GET needs no payload hash", () => {
    const get = createModuleJwt(
      { module: "alpha", route: "/signer/v1/get_pubkeys", exp: NOW + 60 },
      "alpha-secret",
    );
    const check = { route: "/signer/v1/get_pubkeys", body: new Uint8Array(0), now: NOW };
    expect(checkModuleJwt(get, secrets, check)).toEqual({ ok: true, module: "alpha" });
  });

  test("bearer token parsing", () => {
    expect(bearerToken("Bearer abc.def.ghi")).toBe("abc.def.ghi");
    expect(bearerToken("bearer  abc")).toBe("abc");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken(null)).toBeUndefined();
  });
});
