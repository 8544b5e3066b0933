import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { testLogger } from "../../test/support/log-capture";
import type { Principal } from "../auth/authenticator";
import { SigilError } from "../errors";
import { createHttpApp } from "./app";
import { type Access, route, SERVICE_READS_BODY } from "./route";

const ORIGIN = "http://sigil.local";
const MAX_BODY = 256;

/**
 * The dispatcher's order, seen from what each step lets through: which steps ran (`seen`) and
 * whether the body was touched (`pulled`), for a request that stops at each step.
 */
function harness(options: { sealed?: boolean; principal?: () => Promise<Principal> } = {}) {
  const seen: string[] = [];
  const logs: string[] = [];
  const open = { servedWhileSealed: false } as const;
  const declare = (method: "GET" | "POST" | "PUT" | "DELETE", path: string, access: Access) =>
    route({
      method,
      path,
      access,
      ...open,
      handle: ({ params, body }) => {
        seen.push(`handler ${method} ${path}`);
        return { params, body: body ?? null };
      },
    });
  const app = createHttpApp({
    routes: [
      declare("POST", "/items", { kind: "scope", scope: "import_keystores" }),
      declare("GET", "/items", { kind: "public" }),
      declare("DELETE", "/items/:name", { kind: "management" }),
      declare("POST", "/open", { kind: "public" }),
      route({
        method: "PUT",
        path: "/typed",
        access: { kind: "public" },
        ...open,
        body: Type.Object({ n: Type.Number() }),
        handle: ({ body }) => ({ doubled: body.n * 2 }),
      }),
      route({
        method: "PUT",
        path: "/typed/:name",
        access: { kind: "public" },
        ...open,
        body: Type.Object({ n: Type.Number() }),
        handle: ({ body, params, query }) => ({ n: body.n, name: params.name, q: query.get("q") }),
      }),
      route({
        method: "POST",
        path: "/service/:id",
        access: { kind: "per_key", scope: "sign" },
        ...open,
        body: SERVICE_READS_BODY,
        handle: async ({ body }, caller) => {
          await caller.authenticate();
          return { body: await body() };
        },
      }),
    ],
    authenticate: async () => {
      seen.push("authenticate");
      return (options.principal ?? (async () => ({ kind: "unrestricted", management: true })))();
    },
    isUnsealed: () => !options.sealed,
    maxBodyBytes: MAX_BODY,
    unauthenticatedBodyBytes: 300,
    logger: testLogger("debug", logs),
  });
  return { app, seen, logs };
}

/** A request whose body records whether anyone pulled it. */
function request(
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
) {
  const pulls = { count: 0 };
  const bytes = body === undefined ? undefined : new TextEncoder().encode(body);
  const stream =
    bytes &&
    new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulls.count++;
          controller.enqueue(bytes);
          controller.close();
        },
      },
      { highWaterMark: 0 },
    );
  const init: RequestInit = {
    method,
    headers: {
      "content-type": "application/json",
      ...(bytes && { "content-length": String(bytes.length) }),
      ...headers,
    },
    ...(stream && { body: stream }),
  };
  return { request: new Request(`${ORIGIN}${path}`, init), pulls };
}

const refusedCaller = async (): Promise<Principal> => {
  throw new SigilError("unauthorized", "missing bearer token");
};

describe("the dispatcher's order", () => {
  test("a caller refused by access is answered before the body is read", async () => {
    const { app, seen } = harness({ principal: refusedCaller });
    const { request: r, pulls } = request("POST", "/items", '{"a":1}');
    const response = await app.handle(r);
    expect(response.status).toBe(401);
    expect(pulls.count).toBe(0);
    expect(seen).toEqual(["authenticate"]);
  });

  test("a service that authenticates first: refused before the body, which stays unread", async () => {
    const { app } = harness({ principal: refusedCaller });
    const { request: r, pulls } = request("POST", "/service/k", '{"a":1}');
    const response = await app.handle(r);
    expect(response.status).toBe(401);
    expect(pulls.count).toBe(0);
  });

  test("the sealed gate comes before access: nobody is asked who calls", async () => {
    const { app, seen } = harness({ sealed: true });
    const { request: r, pulls } = request("POST", "/items", "{}");
    expect((await app.handle(r)).status).toBe(503);
    expect(seen).toEqual([]);
    expect(pulls.count).toBe(0);
  });

  test("an admitted caller's body is read, checked, and handed over", async () => {
    const { app, seen } = harness();
    const { request: r, pulls } = request("POST", "/items", '{"a":1}');
    const response = await app.handle(r);
    expect(await response.json()).toEqual({ params: {}, body: { a: 1 } });
    expect(pulls.count).toBe(1);
    expect(seen).toEqual(["authenticate", "handler POST /items"]);
  });

  test("a body that is not the route's shape is 400 naming the field", async () => {
    const { app } = harness();
    const response = await app.handle(request("PUT", "/typed", '{"n":"x"}').request);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain("n");
    const fine = await app.handle(request("PUT", "/typed", '{"n":21}').request);
    expect(await fine.json()).toEqual({ doubled: 42 });
  });

  test("duplicate keys are refused, naming the key", async () => {
    const { app, seen } = harness();
    const response = await app.handle(request("POST", "/open", '{"a":{"b":1,"b":2}}').request);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      code: "invalid_request",
      message: 'request body has the key "a.b" twice; send each key once',
    });
    expect(seen).toEqual([]);
  });
});

describe("what the match answers", () => {
  test("a known path with another method is 405 with Allow, before anyone is asked", async () => {
    const { app, seen } = harness();
    const { request: r, pulls } = request("PUT", "/items", "{}");
    const response = await app.handle(r);
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, POST");
    expect(await response.json()).toEqual({
      code: "method_not_allowed",
      message: "PUT is not allowed on /items (allowed: GET, POST)",
    });
    expect(seen).toEqual([]);
    expect(pulls.count).toBe(0);
    const withParam = await app.handle(request("GET", "/items/x").request);
    expect([withParam.status, withParam.headers.get("allow")]).toEqual([405, "DELETE"]);
  });

  test("an unknown path is 404 naming it", async () => {
    const { app } = harness();
    const response = await app.handle(request("GET", "/nothing?x=1").request);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      code: "not_found",
      message: "no route for GET /nothing",
    });
  });

  test("a parameter is percent-decoded; invalid encoding is 400 naming it", async () => {
    const { app } = harness();
    const decoded = await app.handle(request("DELETE", "/items/a%20b").request);
    expect(((await decoded.json()) as { params: unknown }).params).toEqual({ name: "a b" });
    const invalid = await app.handle(request("DELETE", "/items/%zz").request);
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { message: string }).message).toBe(
      "the name in the path is not valid percent-encoding",
    );
  });

  test("an unexpected error is a bare 500, its detail only in the log", async () => {
    const logs: string[] = [];
    const app = createHttpApp({
      routes: [
        route({
          method: "GET",
          path: "/boom",
          access: { kind: "public" },
          servedWhileSealed: true,
          handle: () => {
            throw new TypeError("secret-looking detail");
          },
        }),
      ],
      authenticate: async () => ({ kind: "unrestricted", management: false }),
      maxBodyBytes: MAX_BODY,
      logger: testLogger("debug", logs),
    });
    const response = await app.handle(new Request(`${ORIGIN}/boom`));
    expect(await response.json()).toEqual({ code: "internal_error", message: "internal error" });
    expect(logs.filter((line) => line.includes("TypeError: secret-looking detail"))).toHaveLength(
      1,
    );
  });
});

describe("bodies read before authentication share one budget", () => {
  test("one that would take the bytes in flight past the cap is refused 503 without being read", async () => {
    const { app } = harness();
    // A body that never ends holds its 200 bytes of the budget (cap 300) while it is read.
    const held = new Request(`${ORIGIN}/open`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": "200" },
      body: new ReadableStream({ pull: () => new Promise(() => {}) }),
    });
    void app.handle(held);
    await Bun.sleep(0);
    const { request: r, pulls } = request("POST", "/open", `{"pad":"${"x".repeat(140)}"}`);
    const refused = await app.handle(r);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(pulls.count).toBe(0);
    // A small one still fits.
    const small = await app.handle(request("POST", "/open", '{"a":1}').request);
    expect(small.status).toBe(200);
  });
});

describe("a body that never completes", () => {
  test("is 400 invalid_request, not an internal error, and nothing is logged as one", async () => {
    const { app, logs } = harness();
    const failing = new Request(`${ORIGIN}/open`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        pull(controller) {
          controller.error(new Error("The connection was closed."));
        },
      }),
    });
    const response = await app.handle(failing);
    expect(await response.json()).toEqual({
      code: "invalid_request",
      message: "the request body ended before it was complete",
    });
    expect(logs.filter((line) => line.includes('"level":"error"'))).toEqual([]);
  });
});

describe("the handler's input", () => {
  test("a checked body comes with the path parameters and the query", async () => {
    const { app } = harness();
    const { request: r } = request("PUT", "/typed/a%20b?q=x&r=y", '{"n":3}');
    const response = await app.handle(r);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ n: 3, name: "a b", q: "x" });
  });
});
