// The route table is what the listener enforces. This walks every route of a real signer with
// every feature on (stateful auth and the seal, the Key Manager API, cloud_kv keygen and import
// on a DynamoDB-protocol server) and checks, for each declaration, that the running signer does
// what it says: its access, its answer while sealed, its body limit, its body shape and its
// deadline. A route added without these is caught here, not in review.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync } from "node:fs";
import { join, resolve } from "node:path";
import { createHttpApp } from "../../src/http/app";
import { type Route, SERVICE_READS_BODY } from "../../src/http/route";
import { bootstrapStateful, managementCall } from "../support/ceremony";
import { TempDir } from "../support/cli";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { testLogger } from "../support/log-capture";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest } from "../support/slashing";

const TABLE = "route-table-keys";
const SERVER_BODY_LIMIT = 4096;
const KEY_MANAGER_BODY_LIMIT = 8192;
const CLOUD_KV_BODY_LIMIT = 16_384;
const REQUEST_TIMEOUT_SECONDS = 30;
const KEY_MANAGER_TIMEOUT_SECONDS = 45;
const KEYGEN_TIMEOUT_SECONDS = 50;
const WRITABLE_TIMEOUT_SECONDS = 55;

const dir = new TempDir();
let dynamo: RunningDynamo;
let signer: InProcessSigner;
let routes: readonly Route[] = [];
const savedEnv: Record<string, string | undefined> = {};
/** Answers while sealed (uninitialized), by route, gathered before the ceremony. */
const sealedAnswers = new Map<Route, { status: number; code?: string }>();
let management = "";
let operator = "";
let limited = "";

const label = (route: Route) => `${route.method} ${route.path}`;
/** A concrete path for a declared one: every parameter gets a plain value. */
const pathOf = (route: Route) =>
  route.path.replace(":identifier", `0x${"ab".repeat(48)}`).replace(/:[a-z_]+/g, "x");

async function call(
  route: Route,
  options: { token?: string; body?: string } = {},
): Promise<{ status: number; code?: string; message?: string }> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${signer.url}${pathOf(route)}`, {
    method: route.method,
    headers,
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  const text = await response.text();
  let json: { code?: string; message?: string } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    // A success answer in plain text (upcheck, a bare signature): no code.
  }
  return { status: response.status, code: json.code, message: json.message };
}

beforeAll(async () => {
  dynamo = await startDynamo();
  await dynamo.createSlashingTable(TABLE);
  // The cloud_kv table client takes its endpoint and credentials from the SDK's environment.
  for (const [name, value] of Object.entries(dynamo.processEnv)) {
    savedEnv[name] = process.env[name];
    process.env[name] = value;
  }
  const keys = join(dir.path, "keys");
  cpSync(resolve("examples/keys"), keys, { recursive: true });
  signer = await startInProcessSigner(dir, "route-table", {
    server: `server: {listen_address: 127.0.0.1, listen_port: 0, request_timeout_seconds: ${REQUEST_TIMEOUT_SECONDS}, max_request_body_bytes: ${SERVER_BODY_LIMIT}}`,
    yaml: [
      "key_sources:",
      `  filesystem: {paths: ["${keys}"]}`,
      `  key_manager_api: {enabled: true, request_timeout_seconds: ${KEY_MANAGER_TIMEOUT_SECONDS}, max_request_body_bytes: ${KEY_MANAGER_BODY_LIMIT}}`,
      "  cloud_kv:",
      `    table: ${TABLE}`,
      "    key_refresh_interval_minutes: 0",
      `    keygen: {enabled: true, request_timeout_seconds: ${KEYGEN_TIMEOUT_SECONDS}}`,
      `    writable: {enabled: true, request_timeout_seconds: ${WRITABLE_TIMEOUT_SECONDS}, max_request_body_bytes: ${CLOUD_KV_BODY_LIMIT}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ],
  });
  routes = signer.signer.routes;
  for (const route of routes) sealedAnswers.set(route, await call(route));
  const bootstrapped = await bootstrapStateful(signer.url, signer.logs);
  management = bootstrapped.management;
  operator = bootstrapped.operator.credential;
  const policy = await managementCall(
    signer.url,
    management,
    "POST",
    "/api/v1/signer/auth/policies",
    {
      name: "public-keys-only",
      rules: [{ effect: "allow", scopes: ["public_keys"] }],
    },
  );
  expect(policy.status).toBe(201);
  const token = await managementCall(signer.url, management, "POST", "/api/v1/signer/auth/tokens", {
    policies: ["public-keys-only"],
    ttl_seconds: 3600,
  });
  expect(token.status).toBe(201);
  limited = String(token.body.token);
}, 120_000);

afterAll(async () => {
  await signer?.stop();
  await dynamo?.stop();
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  dir.remove();
});

/** The routes a caller must authenticate for (every access kind but public and operator). */
const authenticated = (route: Route) =>
  route.access.kind === "scope" ||
  route.access.kind === "per_key" ||
  route.access.kind === "keys" ||
  route.access.kind === "management";

/** The writes that take no body: they name their target in the path, or have none. */
const BODY_LESS_WRITES = [
  "POST /api/v1/signer/sys/seal",
  "POST /reload",
  "DELETE /api/v1/signer/sys/rotate-quorum",
  "DELETE /api/v1/signer/auth/policies/:name",
  "DELETE /api/v1/signer/auth/tokens/:accessor",
];

describe("every route of the table", () => {
  test("the table has every feature's routes", () => {
    const names = routes.map(label);
    for (const expected of [
      "POST /api/v1/eth2/sign/:identifier",
      "GET /eth/v1/keystores",
      "POST /api/v1/signer/keys/generate",
      "DELETE /api/v1/signer/keys",
      "POST /api/v1/signer/auth/tokens",
      "POST /api/v1/signer/sys/unseal",
      "POST /reload",
    ]) {
      expect(names).toContain(expected);
    }
  });

  test("sealed: only the routes served while sealed answer; every other is 503 sealed", () => {
    for (const route of routes) {
      const answer = sealedAnswers.get(route);
      expect({ route: label(route), sealed: answer?.code === "sealed" }).toEqual({
        route: label(route),
        sealed: !route.servedWhileSealed,
      });
      if (!route.servedWhileSealed) expect(answer?.status).toBe(503);
    }
  });

  test("access: no token is 401 where the route authenticates, and a token without the grant is 403", async () => {
    for (const route of routes) {
      // A body that parses (one that does not is refused before anyone is asked who calls); the
      // signing route authorizes per key and operation, so it needs a real message.
      const body =
        route.method === "GET"
          ? undefined
          : route.body === SERVICE_READS_BODY
            ? JSON.stringify(attestationRequest(1, 2, 3).body)
            : "{}";
      const anonymous = await call(route, { ...(body && { body }) });
      const withoutGrant = await call(route, { token: limited, ...(body && { body }) });
      const where = label(route);
      if (authenticated(route)) {
        expect({ where, code: anonymous.code }).toEqual({ where, code: "unauthorized" });
        const grants = "scope" in route.access && route.access.scope === "public_keys";
        if (!grants)
          expect({ where, code: withoutGrant.code }).toEqual({ where, code: "forbidden" });
        else expect({ where, status: withoutGrant.status }).toEqual({ where, status: 200 });
      } else if (route.access.kind === "operator") {
        expect({ where, code: anonymous.code }).toEqual({ where, code: "unauthorized" });
      } else {
        expect({ where, code: anonymous.code }).not.toEqual({ where, code: "unauthorized" });
        expect({ where, code: anonymous.code }).not.toEqual({ where, code: "forbidden" });
      }
    }
  });

  test("body limit: one byte over the route's limit is 413, whoever asks", async () => {
    for (const route of routes.filter((r) => r.method !== "GET")) {
      const limit = route.maxBodyBytes ?? SERVER_BODY_LIMIT;
      const over = await call(route, {
        token: management,
        body: JSON.stringify({ pad: "x".repeat(limit) }),
      });
      const where = label(route);
      expect({ where, code: over.code }).toEqual({ where, code: "payload_too_large" });
      // Within the limit the body is read (a body-less route, such as seal, is not called again).
      if (!BODY_LESS_WRITES.includes(where)) {
        const within = await call(route, { token: management, body: "[]" });
        expect({ where, code: within.code }).not.toEqual({ where, code: "payload_too_large" });
      }
      expect(over.message).toContain(`${limit} bytes`);
    }
  });

  test("body shape: every route that takes a body declares how it is checked", () => {
    const undeclared = routes.filter((r) => r.method !== "GET" && !r.body).map(label);
    expect(undeclared.sort()).toEqual([...BODY_LESS_WRITES].sort());
  });

  test("body shape: a body that is not the declared shape is 400 invalid_request", async () => {
    for (const route of routes.filter((r) => r.body)) {
      const token = route.access.kind === "operator" ? operator : management;
      const answer = await call(route, { token, body: "[]" });
      const where = label(route);
      expect({ where, code: answer.code }).toEqual({ where, code: "invalid_request" });
    }
  });

  test("deadline: the listener gives each request its route's deadline", () => {
    const app = createHttpApp({
      routes,
      authenticate: async () => ({ kind: "unrestricted", management: false }),
      maxBodyBytes: SERVER_BODY_LIMIT,
      logger: testLogger("off", []),
    });
    const expected: Record<string, number | undefined> = {
      "/eth/v1/keystores": KEY_MANAGER_TIMEOUT_SECONDS * 1000,
      "/api/v1/signer/keys/generate": KEYGEN_TIMEOUT_SECONDS * 1000,
    };
    for (const route of routes) {
      const { timeoutMs: timeout } = app.dispatch(
        new Request(`http://sigil.local${pathOf(route)}`, { method: route.method }),
      );
      expect({ route: label(route), timeout }).toEqual({
        route: label(route),
        timeout: route.timeoutMs,
      });
      const declared =
        expected[route.path] ??
        (route.path === "/api/v1/signer/keys" && route.method !== "GET"
          ? WRITABLE_TIMEOUT_SECONDS * 1000
          : undefined);
      expect({ route: label(route), timeout: route.timeoutMs }).toEqual({
        route: label(route),
        timeout: declared,
      });
    }
  });
});
