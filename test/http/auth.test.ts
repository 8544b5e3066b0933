import { afterAll, describe, expect, test } from "bun:test";
import { request as httpRequest } from "node:http";
import { join, resolve } from "node:path";
import { ageKeys, bootstrapStateful, setupTokenFrom } from "../support/ceremony";
import { TempDir } from "../support/cli";
import { registerTestSecret } from "../support/log-capture";
import { startInProcessSigner } from "../support/signer";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());
const [K0 = "", K1 = "", K2 = "", K3 = ""] = INTEROP_KEYS;
const ALL_KEYS = [K0, K1, K2, K3].sort();

function start(name: string, authYaml: string, env: Record<string, string> = {}) {
  return startInProcessSigner(dir, name, {
    server: "server: {listen_address: 0.0.0.0, listen_port: 0}",
    yaml: [
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}`,
      authYaml,
    ],
    env,
  });
}

type Headers = Record<string, string>;
const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` });
const basic = (token: string): Headers => ({
  authorization: `Basic ${Buffer.from(`any-user:${token}`).toString("base64")}`,
});

async function call(
  url: string,
  path: string,
  headers: Headers = {},
  method = "GET",
  body?: unknown,
) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

let salt = 1000;
const signAs = (
  url: string,
  key: string,
  headers: Headers,
  body: unknown = attestationRequest(salt, salt + 1, salt++).body,
) => call(url, `/api/v1/eth2/sign/${key}`, headers, "POST", body);
const randao = {
  type: "RANDAO_REVEAL",
  fork_info: attestationRequest(1, 2, 3).body.fork_info,
  randao_reveal: { epoch: "370001" },
};

/** A GET with each header sent as given, repeated ones as separate lines (fetch would join them). */
function rawGet(port: number, path: string, headers: Record<string, string | string[]>) {
  return new Promise<{ status: number; body: Record<string, unknown> }>((done, fail) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
      });
      res.on("end", () => done({ status: res.statusCode ?? 0, body: JSON.parse(text || "{}") }));
    });
    req.on("error", fail);
    req.end();
  });
}

/** A request from another loopback address than 127.0.0.1, to exercise token_bound_cidrs. */
function fromAddress(localAddress: string, port: number, path: string, headers: Headers) {
  return new Promise<number>((done, fail) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, localAddress, headers }, (res) => {
      res.resume();
      res.on("end", () => done(res.statusCode ?? 0));
    });
    req.on("error", fail);
    req.end();
  });
}

const T_VC = "vc-token-0123456789abcdef";
const T_OPS = "ops-token-0123456789abcdef";

describe("legacy auth_policies (HTTP Basic)", () => {
  test("401 without a token, 403 for an unknown one, per-policy keys, operations and scopes", async () => {
    const s = await start(
      "legacy",
      [
        "auth_policies:",
        `  vc: {token: ${T_VC}, allowed_keys: ["${K0}"], allowed_signing_operations: [ATTESTATION]}`,
        `  ops: {token: "env:OPS_TOKEN", allowed_scopes: [public_keys]}`,
      ].join("\n"),
      { OPS_TOKEN: T_OPS },
    );
    try {
      expect((await signAs(s.url, K0, {})).status).toBe(401);
      expect((await signAs(s.url, K0, basic("not-a-known-token-at-all"))).status).toBe(403);
      expect((await signAs(s.url, K0, basic(T_VC))).status).toBe(200);
      expect((await signAs(s.url, K0, bearer(T_VC))).status).toBe(200);
      expect((await signAs(s.url, K1, basic(T_VC))).status).toBe(403); // key not in allowed_keys
      expect((await signAs(s.url, K0, basic(T_VC), randao)).status).toBe(403); // operation not allowed
      const keys = await call(s.url, "/api/v1/eth2/publicKeys", basic(T_OPS));
      expect(keys.status).toBe(200);
      expect((keys.body as unknown as string[]).sort()).toEqual(ALL_KEYS); // allowed_keys binds sign only
      expect((await signAs(s.url, K0, basic(T_OPS))).status).toBe(403); // scope not allowed
      const missing = await fetch(`${s.url}/api/v1/eth2/publicKeys`);
      expect(missing.headers.get("www-authenticate")).toContain("Basic");
      expect((await call(s.url, "/upcheck")).status).toBe(200); // liveness needs no token
    } finally {
      await s.signer.stop();
    }
  });

  test("exactly one Authorization header, with strict base64 in Basic: anything else is 401", async () => {
    const s = await start("legacy-strict", `auth_policies:\n  vc: {token: ${T_VC}}`);
    const path = "/api/v1/eth2/publicKeys";
    try {
      const good = basic(T_VC).authorization ?? "";
      expect((await rawGet(s.port, path, { authorization: good })).status).toBe(200);
      // Two headers: the first one used to win.
      const twice = await rawGet(s.port, path, {
        authorization: [good, basic("x").authorization ?? ""],
      });
      expect(twice).toEqual({
        status: 401,
        body: {
          code: "unauthorized",
          message: "more than one Authorization header (send exactly one)",
        },
      });
      const mixed = await rawGet(s.port, path, { authorization: [good, `Bearer ${T_VC}`] });
      expect(mixed.status).toBe(401);
      // Junk inside the base64 used to be skipped by the decoder, and the token still matched.
      const encoded = good.slice("Basic ".length);
      const junk = `Basic ${encoded.slice(0, 6)}*${encoded.slice(6)}`;
      const refused = await rawGet(s.port, path, { authorization: junk });
      expect(refused).toEqual({
        status: 401,
        body: {
          code: "unauthorized",
          message: "Basic credentials that are not base64 of user:password",
        },
      });
    } finally {
      await s.signer.stop();
    }
  });

  test("unauthenticated_policy governs requests without a token", async () => {
    const s = await start(
      "legacy-open",
      ["unauthenticated_policy: {allowed_scopes: [public_keys]}"].join("\n"),
    );
    try {
      expect((await call(s.url, "/api/v1/eth2/publicKeys")).status).toBe(200);
      expect((await signAs(s.url, K0, {})).status).toBe(403);
    } finally {
      await s.signer.stop();
    }
  });
});

const STATIC = [
  "static_auth:",
  "  policies:",
  `    - {name: vc, rules: [{effect: allow, scopes: [sign, public_keys], keys: ["${K0}", "${K1}"]}, {effect: deny, operations: [VOLUNTARY_EXIT]}]}`,
  "    - {name: monitoring, rules: [{effect: allow, scopes: [public_keys, list_keys, signer_status]}]}",
  "  tokens:",
  `    - {secret: ${T_VC}, policies: [vc]}`,
  `    - {secret: "env:MON_TOKEN", policies: [monitoring]}`,
  `    - {secret: cidr-token-0123456789abcdef, policies: [vc], token_bound_cidrs: ["127.0.0.2/32"]}`,
].join("\n");

describe("stateless static_auth", () => {
  test("401 without or with an invalid token; policies per key, operation and scope; publicKeys filtered", async () => {
    const s = await start("static", STATIC, { MON_TOKEN: "monitoring-token-0123456789" });
    try {
      expect((await signAs(s.url, K0, {})).status).toBe(401);
      expect((await signAs(s.url, K0, bearer("wrong-token-0123456789abcdef"))).status).toBe(401);
      expect((await signAs(s.url, K0, bearer(T_VC))).status).toBe(200);
      expect((await signAs(s.url, K2, bearer(T_VC))).status).toBe(403);
      const vcKeys = await call(s.url, "/api/v1/eth2/publicKeys", bearer(T_VC));
      expect((vcKeys.body as unknown as string[]).sort()).toEqual([K0, K1].sort());
      const monKeys = await call(
        s.url,
        "/api/v1/eth2/publicKeys",
        bearer("monitoring-token-0123456789"),
      );
      expect((monKeys.body as unknown as string[]).sort()).toEqual(ALL_KEYS);
      expect((await signAs(s.url, K0, bearer("monitoring-token-0123456789"))).status).toBe(403);
      expect(
        (await call(s.url, "/api/v1/signer/status", bearer("monitoring-token-0123456789"))).status,
      ).toBe(200);
      expect((await call(s.url, "/api/v1/signer/status", bearer(T_VC))).status).toBe(403);
      // The Auth API does not exist in stateless mode.
      expect((await call(s.url, "/api/v1/signer/auth/policies", bearer(T_VC))).status).toBe(404);
    } finally {
      await s.signer.stop();
    }
  });

  test("a CIDR-bound token is accepted from 127.0.0.2 and refused from 127.0.0.1", async () => {
    const s = await start("static-cidr", STATIC, { MON_TOKEN: "monitoring-token-0123456789" });
    try {
      const headers = bearer("cidr-token-0123456789abcdef");
      expect(await fromAddress("127.0.0.2", s.port, "/api/v1/eth2/publicKeys", headers)).toBe(200);
      expect(await fromAddress("127.0.0.1", s.port, "/api/v1/eth2/publicKeys", headers)).toBe(403);
    } finally {
      await s.signer.stop();
    }
  });
});

describe("stateful (signer_state)", () => {
  test("ceremony → management token → policies and tokens; expiry, revocation and policy changes apply at once", async () => {
    const s = await start(
      "stateful",
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    );
    try {
      expect(setupTokenFrom(s.logs)).toStartWith("sgl_");
      // Uninitialized: sealed, whoever asks.
      expect((await signAs(s.url, K0, {})).status).toBe(503);
      const { management: root } = await bootstrapStateful(s.url, s.logs);
      const management = bearer(root);
      expect((await signAs(s.url, K0, {})).status).toBe(401);

      const policy = {
        name: "vc",
        rules: [{ effect: "allow", scopes: ["sign", "public_keys"], keys: [K0] }],
      };
      expect(
        (await call(s.url, "/api/v1/signer/auth/policies", management, "POST", policy)).status,
      ).toBe(201);
      expect(
        (await call(s.url, "/api/v1/signer/auth/policies", management, "POST", policy)).status,
      ).toBe(409);
      const badCidr = await call(s.url, "/api/v1/signer/auth/tokens", management, "POST", {
        policies: ["vc"],
        ttl_seconds: 60,
        token_bound_cidrs: ["10.0.0.0/40"],
      });
      expect(badCidr.status).toBe(400);
      expect(badCidr.body.message).toBe('token_bound_cidrs[0]: invalid CIDR "10.0.0.0/40"');
      const forever = await call(s.url, "/api/v1/signer/auth/tokens", management, "POST", {
        policies: ["vc"],
        ttl_seconds: 0,
      });
      expect(forever.body.message).toBe("ttl_seconds: must be an integer from 1 to 31536000");
      const ghost = await call(s.url, "/api/v1/signer/auth/tokens", management, "POST", {
        policies: ["ghost"],
        ttl_seconds: 60,
      });
      expect(ghost.body.message).toBe('policy "ghost" does not exist');
      const created = await call(s.url, "/api/v1/signer/auth/tokens", management, "POST", {
        policies: ["vc"],
        ttl_seconds: 3600,
      });
      expect(created.status).toBe(201);
      registerTestSecret(String(created.body.token), "client token");
      const client = bearer(String(created.body.token));
      expect((await signAs(s.url, K0, client)).status).toBe(200);
      expect((await signAs(s.url, K1, client)).status).toBe(403);
      // A client token cannot use the Auth API.
      expect((await call(s.url, "/api/v1/signer/auth/policies", client)).status).toBe(403);

      // Policy update takes effect on the next request.
      const widened = { rules: [{ effect: "allow", scopes: ["sign"], keys: [K0, K1] }] };
      expect(
        (await call(s.url, "/api/v1/signer/auth/policies/vc", management, "PUT", widened)).status,
      ).toBe(200);
      expect((await signAs(s.url, K1, client)).status).toBe(200);

      // Expired: 401, not anonymous.
      const shortLived = await call(s.url, "/api/v1/signer/auth/tokens", management, "POST", {
        policies: ["vc"],
        ttl_seconds: 1,
      });
      registerTestSecret(String(shortLived.body.token), "client token");
      await Bun.sleep(1100);
      const expired = await signAs(s.url, K0, bearer(String(shortLived.body.token)));
      // One answer for expired, revoked and unknown tokens: a 401 tells nothing of a token's past.
      const unknown = await signAs(s.url, K0, bearer("sgl_no-such-token-0123456789abcdef"));
      expect(unknown).toEqual({
        status: 401,
        body: { code: "invalid_token", message: "invalid token" },
      });
      expect(expired).toEqual(unknown);

      // Revoked: 401.
      const revoke = await call(
        s.url,
        `/api/v1/signer/auth/tokens/${String(created.body.accessor)}`,
        management,
        "DELETE",
      );
      expect(revoke.status).toBe(204);
      expect(await signAs(s.url, K0, client)).toEqual(unknown);
      // A CIDR-bound runtime token: accepted only from 127.0.0.2.
      const listable = {
        rules: [{ effect: "allow", scopes: ["sign", "public_keys"], keys: [K0, K1] }],
      };
      expect(
        (await call(s.url, "/api/v1/signer/auth/policies/vc", management, "PUT", listable)).status,
      ).toBe(200);
      const bound = await call(s.url, "/api/v1/signer/auth/tokens", management, "POST", {
        policies: ["vc"],
        ttl_seconds: 600,
        token_bound_cidrs: ["127.0.0.2/32"],
      });
      registerTestSecret(String(bound.body.token), "client token");
      const boundHeaders = bearer(String(bound.body.token));
      expect(await fromAddress("127.0.0.2", s.port, "/api/v1/eth2/publicKeys", boundHeaders)).toBe(
        200,
      );
      expect(await fromAddress("127.0.0.1", s.port, "/api/v1/eth2/publicKeys", boundHeaders)).toBe(
        403,
      );

      // Deleting the policy takes the token's access away at once.
      expect(
        (await call(s.url, "/api/v1/signer/auth/policies/vc", management, "DELETE")).status,
      ).toBe(204);
      expect(await fromAddress("127.0.0.2", s.port, "/api/v1/eth2/publicKeys", boundHeaders)).toBe(
        403,
      );
      const listed = await call(s.url, "/api/v1/signer/auth/tokens", management);
      expect(JSON.stringify(listed.body)).not.toContain(String(created.body.token));
    } finally {
      await s.signer.stop();
    }
  });
});

describe("fixes from the security review", () => {
  test("init on an initialized signer is 409 and spends nothing: the management token sent by mistake survives", async () => {
    const s = await start(
      "review-root",
      `signer_state: {backend: sqlite, path: "${join(dir.path, "review.sqlite")}"}`,
    );
    try {
      const { management } = await bootstrapStateful(s.url, s.logs);
      const misuse = await call(s.url, "/api/v1/signer/sys/init", {}, "POST", {
        setup_token: management,
        share_wrap: [`age:${(await ageKeys(1))[0]?.recipient}`],
        threshold: 1,
      });
      expect(misuse.status).toBe(409);
      expect((await call(s.url, "/api/v1/signer/auth/policies", bearer(management))).status).toBe(
        200,
      );
      const tooMany = await call(s.url, "/api/v1/signer/auth/tokens", bearer(management), "POST", {
        policies: ["a", "a"],
        ttl_seconds: 60,
      });
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.message).toBe(
        "policies: must be a non-empty list of distinct policy names, at most 64",
      );
    } finally {
      await s.signer.stop();
    }
  });

  test("a token sent without a scheme is never echoed in the answer or the logs", async () => {
    const s = await start("review-echo", STATIC, { MON_TOKEN: "monitoring-token-0123456789" });
    try {
      const response = await call(s.url, "/api/v1/eth2/publicKeys", { authorization: T_VC });
      expect(response.status).toBe(401);
      expect(JSON.stringify(response.body)).not.toContain(T_VC);
      expect(s.logs.join("\n")).not.toContain(T_VC);
    } finally {
      await s.signer.stop();
    }
  });

  test("a path parameter that is not valid percent-encoding is 400, not 500", async () => {
    const s = await start("review-params", "");
    try {
      const response = await call(
        s.url,
        "/api/v1/eth2/sign/%zz",
        {},
        "POST",
        attestationRequest(1, 2, 3).body,
      );
      expect(response.status).toBe(400);
      expect(response.body.code).toBe("invalid_request");
    } finally {
      await s.signer.stop();
    }
  });

  test("a one-letter Host header does not change which route serves the request", async () => {
    const s = await startInProcessSigner(dir, "review-host", {
      server: 'server: {listen_address: 127.0.0.1, listen_port: 0, host_allowlist: ["x"]}',
      yaml: [
        `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, "review-host.sqlite")}"}`,
      ],
    });
    try {
      const status = (path: string) =>
        new Promise<number>((done, fail) => {
          const req = httpRequest(
            { host: "127.0.0.1", port: s.port, path, headers: { host: "x" } },
            (res) => {
              res.resume();
              res.on("end", () => done(res.statusCode ?? 0));
            },
          );
          req.on("error", fail);
          req.end();
        });
      expect(await status("/upcheck")).toBe(200);
      expect(await status("/zz/api/v1/eth2/publicKeys")).toBe(404);
    } finally {
      await s.signer.stop();
    }
  });
});
