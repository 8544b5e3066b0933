/**
 * `sigil operator …` as an HTTP client, run as a real process against a fake signer (Bun.serve,
 * in memory) that implements the Auth API contract minimally. The fake checks nothing the real
 * server is responsible for; it records what the client sends so the tests can assert flags,
 * headers, bodies, output formats, error lines and exit codes.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import type { Server } from "bun";
import { parseRules } from "../../src/cli/operator/auth";
import { checkSignerUrl, isLoopbackHost } from "../../src/cli/operator/client";
import { formatTable } from "../../src/cli/operator/output";
import { type CliResult, cleanEnv, sigilCommand, TempDir } from "../support/cli";
import { captureProcessOutput } from "../support/log-capture";
import { TEST_TLS } from "../support/postgres";

const repoRoot = resolve(import.meta.dir, "../..");
const MGMT = "mgmt-0123456789abcdef0123456789abcdef";
const CLIENT_TOKEN_PREFIX = "sgl_client_";
const KEY = `0x${"a1".repeat(48)}`;

function commandLine(args: readonly string[]): string[] {
  return sigilCommand(["operator", ...args]);
}

/** Asynchronous on purpose: the fake signer answers from this process's event loop. */
async function operator(
  args: readonly string[],
  env: Record<string, string> = {},
  stdin?: string,
): Promise<CliResult> {
  const proc = Bun.spawn(commandLine(args), {
    cwd: repoRoot,
    env: cleanEnv(env),
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  captureProcessOutput(proc.pid, { stdout, stderr });
  return { code, stdout, stderr };
}

interface Seen {
  method: string;
  path: string;
  authorization: string | null;
  contentType: string | null;
  body: unknown;
}

interface TokenRecord {
  accessor: string;
  kind: "management" | "client";
  policies: string[];
  token_bound_cidrs: string[];
  created_at: string;
  expires_at: string | null;
}

const CIDR = /^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$|^[0-9a-f:]+\/\d{1,3}$/i;

/** The Auth API contract, in memory. */
class FakeSigner {
  readonly seen: Seen[] = [];
  readonly policies = new Map<string, unknown[]>();
  readonly tokens = new Map<string, TokenRecord>();
  /** Answers the next request instead of the contract (proxies, broken servers, stateless mode). */
  override: ((request: Request) => Response) | undefined;
  #next = 1;

  reset(): void {
    this.seen.length = 0;
    this.policies.clear();
    this.tokens.clear();
    this.override = undefined;
    this.#next = 1;
    this.tokens.set(MGMT, {
      accessor: "acc-root",
      kind: "management",
      policies: [],
      token_bound_cidrs: [],
      created_at: "2026-01-01T00:00:00.000Z",
      expires_at: null,
    });
  }

  readonly fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const raw = await request.text();
    let body: unknown;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {
      body = raw;
    }
    this.seen.push({
      method: request.method,
      path: url.pathname,
      authorization: request.headers.get("authorization"),
      contentType: request.headers.get("content-type"),
      body,
    });
    if (this.override) return this.override(request);
    return this.#route(request.method, url.pathname, request.headers, body);
  };

  #route(method: string, path: string, headers: Headers, body: unknown): Response {
    const auth = headers.get("authorization");
    const token = auth?.startsWith("Bearer ") ? this.tokens.get(auth.slice(7)) : undefined;
    if (!token) return error(401, "unauthorized", "missing or invalid token");
    if (token.kind !== "management") return error(403, "forbidden", "management token required");

    const policy = path.match(/^\/api\/v1\/signer\/auth\/policies\/([^/]+)$/);
    const revoke = path.match(/^\/api\/v1\/signer\/auth\/tokens\/([^/]+)$/);
    const b = asObject(body);
    if (path === "/api/v1/signer/auth/policies" && method === "POST") {
      if (typeof b.name !== "string" || !Array.isArray(b.rules))
        return error(400, "invalid_request", "name and rules are required");
      if (this.policies.has(b.name)) return error(409, "policy_exists", `policy ${b.name} exists`);
      this.policies.set(b.name, b.rules);
      return json(201, { name: b.name, rules: b.rules });
    }
    if (path === "/api/v1/signer/auth/policies" && method === "GET") {
      return json(200, { data: [...this.policies].map(([name, rules]) => ({ name, rules })) });
    }
    if (policy?.[1] !== undefined) {
      const name = decodeURIComponent(policy[1]);
      const rules = this.policies.get(name);
      if (!rules) return error(404, "policy_not_found", `no policy named ${name}`);
      if (method === "GET") return json(200, { name, rules });
      if (method === "PUT") {
        if (!Array.isArray(b.rules)) return error(400, "invalid_request", "rules are required");
        this.policies.set(name, b.rules);
        return json(200, { name, rules: b.rules });
      }
      if (method === "DELETE") {
        this.policies.delete(name);
        return new Response(null, { status: 204 });
      }
    }
    if (path === "/api/v1/signer/auth/tokens" && method === "POST") {
      const policies = Array.isArray(b.policies) ? b.policies.map(String) : [];
      const unknown = policies.find((p) => !this.policies.has(p));
      if (unknown !== undefined) return error(400, "invalid_request", `unknown policy ${unknown}`);
      const ttl = b.ttl_seconds;
      if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl < 1 || ttl > 31_536_000)
        return error(400, "invalid_request", "ttl_seconds must be 1 to 31536000");
      const cidrs = Array.isArray(b.token_bound_cidrs) ? b.token_bound_cidrs.map(String) : [];
      const bad = cidrs.find((c) => !CIDR.test(c));
      if (bad !== undefined) return error(400, "invalid_request", `invalid CIDR ${bad}`);
      const accessor = `acc-${this.#next++}`;
      const secret = `${CLIENT_TOKEN_PREFIX}${accessor}`;
      const meta = this.#meta(accessor, "client", policies, cidrs, ttl);
      this.tokens.set(secret, meta);
      const { kind: _kind, ...shown } = meta;
      return json(201, { token: secret, ...shown });
    }
    if (path === "/api/v1/signer/auth/tokens" && method === "GET") {
      return json(200, { data: [...this.tokens.values()] });
    }
    if (revoke?.[1] !== undefined && method === "DELETE") {
      const accessor = decodeURIComponent(revoke[1]);
      const entry = [...this.tokens].find(([, t]) => t.accessor === accessor);
      if (!entry) return error(404, "token_not_found", `no token with accessor ${accessor}`);
      this.tokens.delete(entry[0]);
      return new Response(null, { status: 204 });
    }
    return error(404, "not_found", `no route ${method} ${path}`);
  }

  #meta(
    accessor: string,
    kind: TokenRecord["kind"],
    policies: string[],
    cidrs: string[],
    ttl = 3600,
  ): TokenRecord {
    return {
      accessor,
      kind,
      policies,
      token_bound_cidrs: cidrs,
      created_at: "2026-05-01T12:00:00.000Z",
      expires_at: new Date(Date.parse("2026-05-01T12:00:00.000Z") + ttl * 1000).toISOString(),
    };
  }
}

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
}
function json(status: number, body: unknown): Response {
  return Response.json(body, { status });
}
function error(status: number, code: string, message: string): Response {
  return Response.json({ code, message }, { status });
}

const fake = new FakeSigner();
const dir = new TempDir();
let server: Server<undefined>;
let tlsServer: Server<undefined>;
let url: string;

beforeAll(() => {
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: fake.fetch });
  tlsServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: TEST_TLS.cert, key: TEST_TLS.key },
    fetch: fake.fetch,
  });
  url = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server.stop(true);
  await tlsServer.stop(true);
  dir.remove();
});
beforeEach(() => fake.reset());

/** The flags every Auth API call needs against the fake. */
const at = (...args: string[]) => [...args, "--signer-url", url, "--token", "env:MGMT"];
const ENV = { MGMT };

function expectOk(result: CliResult): void {
  expect(result.code, result.stderr).toBe(0);
}

/** One line on stderr, exit 1, and the management token nowhere. */
function expectFailure(result: CliResult, line: string | RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stdout).toBe("");
  const lines = result.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  if (typeof line === "string") expect(lines[0]).toBe(line);
  else expect(lines[0] ?? "").toMatch(line);
  expect(result.stderr).not.toContain(MGMT);
}

function expectUsage(result: CliResult, fragment: string): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe("");
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toContain(fragment);
}

const RULES = [
  { effect: "allow", scopes: ["sign", "public_keys"], keys: [KEY] },
  { effect: "deny", operations: ["BLOCK_V2"] },
];

describe("operator auth policy", () => {
  test("create sends the bearer token and {name, rules}; prints the policy as a table", async () => {
    const result = await operator(
      at("auth", "policy", "create", "--name", "validators", "--rules", JSON.stringify(RULES)),
      ENV,
    );
    expectOk(result);
    expect(fake.seen).toEqual([
      {
        method: "POST",
        path: "/api/v1/signer/auth/policies",
        authorization: `Bearer ${MGMT}`,
        contentType: "application/json",
        body: { name: "validators", rules: RULES },
      },
    ]);
    expect(result.stdout).toBe(
      [
        "policy validators",
        "",
        "#  EFFECT  SCOPES            OPERATIONS  KEYS",
        `1  allow   sign,public_keys  any         ${KEY}`,
        "2  deny    any               BLOCK_V2    any",
        "",
      ].join("\n"),
    );
    expect(result.stdout + result.stderr).not.toContain(MGMT);
  });

  test("--rules @file and @- read the rules; --json prints the server's JSON", async () => {
    const file = dir.file("rules.json", JSON.stringify(RULES));
    const fromFile = await operator(
      at("auth", "policy", "create", "--name", "a", "--rules", `@${file}`, "--json"),
      ENV,
    );
    expectOk(fromFile);
    expect(JSON.parse(fromFile.stdout)).toEqual({ name: "a", rules: RULES });
    const fromStdin = await operator(
      at("auth", "policy", "create", "--name=b", "--rules=@-", "--json"),
      ENV,
      JSON.stringify([{ effect: "allow", scopes: ["signer_status"] }]),
    );
    expectOk(fromStdin);
    expect(fake.seen[1]?.body).toEqual({
      name: "b",
      rules: [{ effect: "allow", scopes: ["signer_status"] }],
    });
  });

  test("list: aligned table, --json, and a note when there are none", async () => {
    const empty = await operator(at("auth", "policy", "list"), ENV);
    expectOk(empty);
    expect(empty.stdout).toBe("");
    expect(empty.stderr).toContain("no policies");
    fake.policies.set("validators", RULES);
    fake.policies.set("monitoring-readonly", [{ effect: "allow", scopes: ["signer_status"] }]);
    const table = await operator(at("auth", "policy", "list"), ENV);
    expectOk(table);
    expect(table.stdout).toBe(
      [
        "NAME                 RULES  ALLOW  DENY",
        "validators           2      1      1",
        "monitoring-readonly  1      1      0",
        "",
      ].join("\n"),
    );
    const asJson = await operator(at("auth", "policy", "list", "--json"), ENV);
    expectOk(asJson);
    expect(JSON.parse(asJson.stdout)).toEqual({
      data: [
        { name: "validators", rules: RULES },
        { name: "monitoring-readonly", rules: [{ effect: "allow", scopes: ["signer_status"] }] },
      ],
    });
    expect(fake.seen.map((s) => `${s.method} ${s.path} ${s.authorization}`)).toEqual(
      Array(3).fill(`GET /api/v1/signer/auth/policies Bearer ${MGMT}`),
    );
  });

  test("get, update, delete address the policy by (encoded) name", async () => {
    fake.policies.set("team a", RULES);
    const got = await operator(at("auth", "policy", "get", "--name", "team a", "--json"), ENV);
    expectOk(got);
    expect(JSON.parse(got.stdout)).toEqual({ name: "team a", rules: RULES });

    const newRules = [{ effect: "allow", scopes: [] }];
    const updated = await operator(
      at("auth", "policy", "update", "--name", "team a", "--rules", JSON.stringify(newRules)),
      ENV,
    );
    expectOk(updated);
    expect(updated.stdout).toContain("1  allow   none    any         any");

    const deleted = await operator(at("auth", "policy", "delete", "--name", "team a"), ENV);
    expectOk(deleted);
    expect(deleted.stdout).toBe("");
    expect(deleted.stderr).toBe("deleted policy team a\n");

    expect(fake.seen.map((s) => [s.method, s.path, s.body])).toEqual([
      ["GET", "/api/v1/signer/auth/policies/team%20a", undefined],
      ["PUT", "/api/v1/signer/auth/policies/team%20a", { rules: newRules }],
      ["DELETE", "/api/v1/signer/auth/policies/team%20a", undefined],
    ]);
    expect(fake.seen.every((s) => s.authorization === `Bearer ${MGMT}`)).toBe(true);
    expect(fake.policies.has("team a")).toBe(false);
  });

  test("server errors become one line `sigil: <status> <code>: <message>`, exit 1", async () => {
    expectFailure(
      await operator(at("auth", "policy", "get", "--name", "nope"), ENV),
      "sigil: 404 policy_not_found: no policy named nope",
    );
    fake.policies.set("dup", []);
    expectFailure(
      await operator(at("auth", "policy", "create", "--name", "dup", "--rules", "[]"), ENV),
      "sigil: 409 policy_exists: policy dup exists",
    );
    expectFailure(
      await operator(at("auth", "policy", "delete", "--name", "nope"), ENV),
      "sigil: 404 policy_not_found: no policy named nope",
    );
    expectFailure(
      await operator(at("auth", "policy", "update", "--name", "nope", "--rules", "[]"), ENV),
      "sigil: 404 policy_not_found: no policy named nope",
    );
  });

  test("bad --rules are refused before any request (exit 2)", async () => {
    const cases: [string, string][] = [
      ["{", "--rules: not valid JSON"],
      ['{"effect":"allow"}', "--rules: must be a list of rules"],
      ['[{"effect":"permit"}]', '--rules: [0].effect: must be "allow" or "deny"'],
      [
        '[{"effect":"allow","scope":["sign"]}]',
        "--rules: [0].scope: unknown field (fields: effect, scopes, keys, operations)",
      ],
      [
        '[{"effect":"allow"},{"effect":"deny","keys":"0xab"}]',
        "--rules: [1].keys: must be a list of public keys",
      ],
      [`@${dir.path}/missing.json`, "--rules: cannot read"],
    ];
    for (const [rules, message] of cases) {
      expectUsage(
        await operator(at("auth", "policy", "create", "--name", "x", "--rules", rules), ENV),
        message,
      );
    }
    expectUsage(
      await operator(at("auth", "policy", "create", "--name", "x"), ENV),
      "--rules is required",
    );
    expectUsage(await operator(at("auth", "policy", "get"), ENV), "--name is required");
    expect(fake.seen).toEqual([]);
  });
});

describe("operator auth token", () => {
  test("create sends {policies, ttl_seconds, token_bound_cidrs} and shows the new token once", async () => {
    fake.policies.set("a", []);
    fake.policies.set("b", []);
    const result = await operator(
      at(
        "auth",
        "token",
        "create",
        "--policies",
        "a, b",
        "--ttl-seconds",
        "7200",
        "--token-bound-cidrs",
        "10.0.0.0/8,fd00::/8",
      ),
      ENV,
    );
    expectOk(result);
    expect(fake.seen).toEqual([
      {
        method: "POST",
        path: "/api/v1/signer/auth/tokens",
        authorization: `Bearer ${MGMT}`,
        contentType: "application/json",
        body: {
          policies: ["a", "b"],
          ttl_seconds: 7200,
          token_bound_cidrs: ["10.0.0.0/8", "fd00::/8"],
        },
      },
    ]);
    expect(result.stdout).toBe(
      [
        `token              ${CLIENT_TOKEN_PREFIX}acc-1`,
        "accessor           acc-1",
        "policies           a,b",
        "token_bound_cidrs  10.0.0.0/8,fd00::/8",
        "created_at         2026-05-01T12:00:00.000Z",
        "expires_at         2026-05-01T14:00:00.000Z",
        "",
      ].join("\n"),
    );
    expect(result.stderr).toContain("shown only this once");
    expect(result.stdout + result.stderr).not.toContain(MGMT);
  });

  test("create without CIDRs omits the field; --json prints the server's answer", async () => {
    fake.policies.set("a", []);
    const result = await operator(
      at("auth", "token", "create", "--policies", "a", "--ttl-seconds", "60", "--json"),
      ENV,
    );
    expectOk(result);
    expect(fake.seen[0]?.body).toEqual({ policies: ["a"], ttl_seconds: 60 });
    const body = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(
      ["accessor", "created_at", "expires_at", "policies", "token", "token_bound_cidrs"].sort(),
    );
    expect(body.token).toBe(`${CLIENT_TOKEN_PREFIX}acc-1`);
  });

  test("create: flag errors exit 2 before any request; server 400 exits 1", async () => {
    expectUsage(
      await operator(at("auth", "token", "create", "--ttl-seconds", "60"), ENV),
      "--policies is required",
    );
    expectUsage(
      await operator(
        at("auth", "token", "create", "--policies", " , ", "--ttl-seconds", "60"),
        ENV,
      ),
      "--policies",
    );
    for (const ttl of ["0", "-5", "1.5", "1h", "99999999999999999999"]) {
      expectUsage(
        await operator(
          at("auth", "token", "create", "--policies", "a", `--ttl-seconds=${ttl}`),
          ENV,
        ),
        "--ttl-seconds",
      );
    }
    expect(fake.seen).toEqual([]);
    expectFailure(
      await operator(
        at("auth", "token", "create", "--policies", "ghost", "--ttl-seconds", "60"),
        ENV,
      ),
      "sigil: 400 invalid_request: unknown policy ghost",
    );
    fake.policies.set("a", []);
    expectFailure(
      await operator(
        at(
          "auth",
          "token",
          "create",
          "--policies",
          "a",
          "--ttl-seconds",
          "60",
          "--token-bound-cidrs",
          "10.0.0.300",
        ),
        ENV,
      ),
      "sigil: 400 invalid_request: invalid CIDR 10.0.0.300",
    );
  });

  test("list shows accessors and metadata, never tokens; revoke deletes by accessor", async () => {
    fake.policies.set("a", []);
    fake.policies.set("b", []);
    expectOk(
      await operator(
        at(
          "auth",
          "token",
          "create",
          "--policies",
          "a,b",
          "--ttl-seconds",
          "3600",
          "--token-bound-cidrs",
          "192.168.0.0/16",
        ),
        ENV,
      ),
    );
    const listed = await operator(at("auth", "token", "list"), ENV);
    expectOk(listed);
    expect(listed.stdout).toBe(
      [
        "ACCESSOR  KIND        POLICIES  CIDRS           CREATED                   EXPIRES",
        "acc-root  management  -         any             2026-01-01T00:00:00.000Z  never",
        "acc-1     client      a,b       192.168.0.0/16  2026-05-01T12:00:00.000Z  2026-05-01T13:00:00.000Z",
        "",
      ].join("\n"),
    );
    expect(listed.stdout).not.toContain(CLIENT_TOKEN_PREFIX);
    const asJson = await operator(at("auth", "token", "list", "--json"), ENV);
    expect(JSON.parse(asJson.stdout).data).toHaveLength(2);

    const revoked = await operator(at("auth", "token", "revoke", "--accessor", "acc-1"), ENV);
    expectOk(revoked);
    expect(revoked.stderr).toBe("revoked token acc-1\n");
    expect(fake.seen.at(-1)).toMatchObject({
      method: "DELETE",
      path: "/api/v1/signer/auth/tokens/acc-1",
      authorization: `Bearer ${MGMT}`,
    });
    expectFailure(
      await operator(at("auth", "token", "revoke", "--accessor", "acc-1"), ENV),
      "sigil: 404 token_not_found: no token with accessor acc-1",
    );
    expectUsage(await operator(at("auth", "token", "revoke"), ENV), "--accessor is required");
  });
});

describe("operator init and rotate quorum: the plan is checked before anything is sent", () => {
  const RECIPIENT = `age1${"q".repeat(58)}`;
  const AGE_SECRET = `AGE-SECRET-KEY-1${"Q".repeat(58)}`;
  const init = (...args: string[]) =>
    operator(["init", "--setup-token", "env:SETUP", "--signer-url", url, ...args], {
      SETUP: "sgl_setup",
    });
  const rotate = (...args: string[]) => operator(["rotate", "quorum", ...at(...args)], ENV);

  test("an age secret key in --share-wrap is refused, and never echoed", async () => {
    for (const run of [
      () => init("--share-wrap", `age:${RECIPIENT},age:${AGE_SECRET}`, "--threshold", "2"),
      () => rotate("--share-wrap", `age:${AGE_SECRET}`, "--threshold", "1"),
    ]) {
      const result = await run();
      expectUsage(result, "--share-wrap: entry");
      expect(result.stderr).toContain("is an age secret key (AGE-SECRET-KEY-…), not a recipient");
      expect(result.stderr).not.toContain(AGE_SECRET);
    }
    expect(fake.seen).toEqual([]);
  });

  test("a missing --threshold is named as missing", async () => {
    expectUsage(
      await init("--share-wrap", `age:${RECIPIENT},age:${RECIPIENT.replace("q", "p")}`),
      "--threshold is missing: how many of the 2 shares unseal the signer",
    );
    expectUsage(
      await rotate("--share-wrap", `age:${RECIPIENT}`),
      "--threshold is missing: how many of the 1 shares unseal the signer",
    );
    expect(fake.seen).toEqual([]);
  });

  test("a 1-of-N quorum is allowed, with a warning", async () => {
    const result = await init(
      "--share-wrap",
      `age:${RECIPIENT},age:${RECIPIENT.replace("q", "p")}`,
      "--threshold",
      "1",
    );
    expect(result.stderr).toContain(
      "sigil: warning: --threshold 1: any one of the 2 operators can unseal alone",
    );
    expect(fake.seen.map((r) => `${r.method} ${r.path}`)).toContain("POST /api/v1/signer/sys/init");
  });
});

describe("management token", () => {
  test("--token value and env:VAR; missing, unset or invalid is refused", async () => {
    const direct = await operator(["auth", "policy", "list", "--signer-url", url, "--token", MGMT]);
    expectOk(direct);
    expect(fake.seen[0]?.authorization).toBe(`Bearer ${MGMT}`);

    expectUsage(
      await operator(["auth", "policy", "list", "--signer-url", url], { SIGNER_TOKEN: MGMT }),
      "--token is required",
    );
    expectUsage(
      await operator([
        "auth",
        "policy",
        "list",
        "--signer-url",
        url,
        "--token",
        "env:NOT_SET_HERE",
      ]),
      "--token: environment variable NOT_SET_HERE is not set",
    );
    const spaced = await operator(
      ["auth", "policy", "list", "--signer-url", url, "--token", "env:T"],
      {
        T: `${MGMT}\n`,
      },
    );
    expectUsage(spaced, "--token: the token contains spaces or control characters");
    expect(spaced.stderr).not.toContain(MGMT);
    expect(fake.seen).toHaveLength(1);
  });

  test("401 and 403 from the server are reported without echoing the token", async () => {
    const wrong = "wrong-token-value-123456";
    const unauthorized = await operator([
      "auth",
      "policy",
      "list",
      "--signer-url",
      url,
      "--token",
      wrong,
    ]);
    expectFailure(unauthorized, "sigil: 401 unauthorized: missing or invalid token");
    expect(unauthorized.stderr).not.toContain(wrong);

    fake.policies.set("a", []);
    await operator(at("auth", "token", "create", "--policies", "a", "--ttl-seconds", "60"), ENV);
    expectFailure(
      await operator(["auth", "token", "list", "--signer-url", url, "--token", "env:C"], {
        C: `${CLIENT_TOKEN_PREFIX}acc-1`,
      }),
      "sigil: 403 forbidden: management token required",
    );
  });
});

describe("signer URL and transport", () => {
  test("plain http to a non-loopback host is refused (exit 2) unless --allow-plaintext-signer", async () => {
    const port = server.port ?? 0;
    // 0.0.0.0 is not loopback by name, yet on Linux a connection to it reaches this host.
    const remote = [
      "auth",
      "policy",
      "list",
      "--signer-url",
      `http://0.0.0.0:${port}`,
      "--token",
      "env:MGMT",
    ];
    const refused = await operator(remote, ENV);
    expectUsage(refused, "refusing plain http to 0.0.0.0");
    expect(refused.stderr).toContain("in clear");
    expect(fake.seen).toEqual([]);
    expectUsage(
      await operator([
        "auth",
        "policy",
        "list",
        "--signer-url",
        "http://10.1.2.3:9000",
        "--token",
        "t",
      ]),
      "--allow-plaintext-signer",
    );
    expect(fake.seen).toEqual([]);

    const allowed = await operator([...remote, "--allow-plaintext-signer"], ENV);
    expectOk(allowed);
    expect(fake.seen).toHaveLength(1);
  });

  test("malformed, credentialed or non-http URLs exit 2", async () => {
    for (const [target, message] of [
      ["not a url", "is not a URL"],
      ["ftp://127.0.0.1/", "ftp: is not http: or https:"],
      ["https://user:pw@signer.example", "must not carry credentials"],
      ["http://127.0.0.1:9000/?x=1", "query or fragment"],
    ] as const) {
      const result = await operator([
        "auth",
        "policy",
        "list",
        "--signer-url",
        target,
        "--token",
        "t",
      ]);
      expectUsage(result, message);
      expect(result.stderr).not.toContain("pw@");
    }
  });

  test("a base path on --signer-url prefixes the API routes", async () => {
    fake.override = () => Response.json({ data: [] });
    expectOk(
      await operator(["auth", "policy", "list", "--signer-url", `${url}/signer/`, "--token", MGMT]),
    );
    expect(fake.seen[0]?.path).toBe("/signer/api/v1/signer/auth/policies");
  });

  test("connection failure: one line naming the URL, exit 1", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const port = closed.port;
    await closed.stop(true);
    const result = await operator([
      "auth",
      "policy",
      "list",
      "--signer-url",
      `http://127.0.0.1:${port}`,
      "--token",
      MGMT,
    ]);
    expectFailure(
      result,
      new RegExp(`^sigil: cannot reach the signer at http://127\\.0\\.0\\.1:${port}: `),
    );
  });

  test("https with --ca-cert; without it the certificate is not trusted", async () => {
    const ca = dir.file("ca.pem", TEST_TLS.ca);
    const tlsUrl = `https://localhost:${tlsServer.port}`;
    const trusted = await operator(
      [
        "auth",
        "policy",
        "list",
        "--signer-url",
        tlsUrl,
        "--token",
        "env:MGMT",
        "--ca-cert",
        ca,
        "--json",
      ],
      ENV,
    );
    expectOk(trusted);
    expect(JSON.parse(trusted.stdout)).toEqual({ data: [] });
    expect(fake.seen[0]?.authorization).toBe(`Bearer ${MGMT}`);

    // The client certificate files are read and offered (this server does not ask for one).
    const cert = dir.file("client.pem", TEST_TLS.cert);
    const key = dir.file("client.key", TEST_TLS.key);
    expectOk(
      await operator(
        [
          "auth",
          "policy",
          "list",
          "--signer-url",
          tlsUrl,
          "--token",
          "env:MGMT",
          "--ca-cert",
          ca,
        ].concat(["--client-cert", cert, "--client-key", key]),
        ENV,
      ),
    );

    const untrusted = await operator(
      ["auth", "policy", "list", "--signer-url", tlsUrl, "--token", "env:MGMT"],
      ENV,
    );
    expectFailure(untrusted, new RegExp(`^sigil: cannot reach the signer at ${tlsUrl}: `));
  });

  test("TLS flag mistakes exit 2", async () => {
    const ca = dir.file("ca2.pem", TEST_TLS.ca);
    expectUsage(
      await operator([
        "auth",
        "policy",
        "list",
        "--signer-url",
        url,
        "--token",
        "t",
        "--ca-cert",
        ca,
      ]),
      "need an https:// --signer-url",
    );
    expectUsage(
      await operator([
        "auth",
        "policy",
        "list",
        "--signer-url",
        "https://localhost:1",
        "--token",
        "t",
        "--client-cert",
        ca,
      ]),
      "--client-cert and --client-key go together",
    );
    expectUsage(
      await operator([
        "auth",
        "policy",
        "list",
        "--signer-url",
        "https://localhost:1",
        "--token",
        "t",
        "--ca-cert",
        `${dir.path}/absent.pem`,
      ]),
      "--ca-cert: cannot read",
    );
  });

  test("answers outside the contract: stateless 404, non-JSON errors, redirects (not followed)", async () => {
    fake.override = () =>
      Response.json({ code: "not_found", message: "stateless mode" }, { status: 404 });
    expectFailure(
      await operator(at("auth", "policy", "list"), ENV),
      "sigil: 404 not_found: stateless mode",
    );

    fake.override = () => new Response("<html>\nBad Gateway\n</html>", { status: 502 });
    expectFailure(
      await operator(at("auth", "policy", "list"), ENV),
      "sigil: 502 http_error: <html> Bad Gateway </html>",
    );

    fake.override = () =>
      new Response(null, { status: 302, headers: { location: "http://evil.example/" } });
    expectFailure(
      await operator(at("auth", "policy", "list"), ENV),
      /^sigil: 302 redirect: the signer redirects to http:\/\/evil\.example\/; not followed/,
    );
    expect(fake.seen).toHaveLength(3);
  });
});

describe("command line", () => {
  test("--help at every level, exit 0", async () => {
    const levels: [string[], string[]][] = [
      [
        ["--help"],
        ["auth", "generate-root-token", "init", "register", "unseal", "seal", "rotate", "status"],
      ],
      [
        ["auth", "--help"],
        ["policy", "token"],
      ],
      [
        ["auth", "policy", "--help"],
        ["create", "list", "get", "update", "delete"],
      ],
      [
        ["auth", "token", "--help"],
        ["create", "list", "revoke"],
      ],
      [
        ["auth", "policy", "create", "--help"],
        ["--name", "--rules", "--token", "--signer-url"],
      ],
      [
        ["auth", "policy", "list", "--help"],
        ["--json", "--ca-cert", "--allow-plaintext-signer"],
      ],
      [["auth", "policy", "get", "--help"], ["--name"]],
      [["auth", "policy", "update", "--help"], ["--rules"]],
      [["auth", "policy", "delete", "--help"], ["--name"]],
      [
        ["auth", "token", "create", "--help"],
        ["--policies", "--ttl-seconds", "--token-bound-cidrs"],
      ],
      [["auth", "token", "list", "--help"], ["--json"]],
      [["auth", "token", "revoke", "--help"], ["--accessor"]],
      [
        ["generate-root-token", "--help"],
        ["--credential", "--identity", "--client-cert", "--client-key"],
      ],
      [
        ["init", "--help"],
        ["--setup-token", "--share-wrap", "--threshold"],
      ],
      [["register", "--help"], ["--registration-token"]],
      [
        ["unseal", "--help"],
        ["--credential", "--identity"],
      ],
      [["seal", "--help"], ["--token"]],
      [
        ["rotate", "quorum", "--help"],
        ["--share-wrap", "--threshold", "--cancel", "--credential"],
      ],
      [["status", "--help"], ["--json"]],
    ];
    for (const [args, expected] of levels) {
      const result = await operator(args, { NO_COLOR: "1" });
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
      for (const text of expected) expect(result.stdout).toContain(text);
    }
    expect(fake.seen).toEqual([]);
  });

  test("unknown flags and stray arguments exit 2", async () => {
    expectUsage(
      await operator(at("auth", "policy", "list", "--polices", "a"), ENV),
      "unknown option --polices for sigil operator auth policy list; see sigil help operator auth policy list",
    );
    expectUsage(await operator(at("auth", "policy", "get", "--name", "a", "extra"), ENV), "extra");
    expectUsage(await operator(["auth", "policy", "get", "--name"]), "--name");
    expect(fake.seen).toEqual([]);
  });
});

describe("pure parts", () => {
  test("loopback host names", () => {
    for (const host of ["localhost", "127.0.0.1", "127.8.9.10", "[::1]"])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of [
      "0.0.0.0",
      "10.0.0.1",
      "[::]",
      "localhost.example",
      "128.0.0.1",
      "[fe80::1]",
    ])
      expect(isLoopbackHost(host), host).toBe(false);
    // URL normalises other spellings of loopback first.
    for (const raw of [
      "http://127.1:9000",
      "http://[::ffff:127.0.0.1]:9000",
      "http://LOCALHOST:9000",
    ]) {
      expect(checkSignerUrl(raw, false).ok, raw).toBe(true);
    }
    expect(checkSignerUrl("http://2130706433", false).ok).toBe(true);
    expect(checkSignerUrl("https://signer.example", false).ok).toBe(true);
    expect(checkSignerUrl("http://signer.example", false).ok).toBe(false);
    expect(checkSignerUrl("http://signer.example", true).ok).toBe(true);
  });

  test("parseRules checks rules with the server's rule schema, names included", () => {
    expect(parseRules(JSON.stringify(RULES)) as unknown).toEqual({ ok: true, rules: RULES });
    expect(parseRules('[{"effect":"deny","scopes":["not-a-scope"]}]')).toEqual({
      ok: false,
      reason: '[0].scopes[0]: unknown scope "not-a-scope"',
    });
    expect(parseRules("[]")).toEqual({ ok: true, rules: [] });
    expect(parseRules("[null]").ok).toBe(false);
  });

  test("formatTable aligns columns without trailing blanks", () => {
    expect(
      formatTable(
        ["A", "BB"],
        [
          ["xxx", ""],
          ["y", "z"],
        ],
      ),
    ).toBe("A    BB\nxxx\ny    z");
  });
});
