// Every spelling of a route's path is that route, with that route's limits, or no route at all
// (404): property-tested against the dispatcher built from the real route table. Each route gets
// limits of its own (a body limit and a deadline no other group shares), so a spelling that
// reached the route but not its limits, or another route, shows.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createHttpApp } from "../../src/http/app";
import type { Route } from "../../src/http/route";
import {
  bindRoutes,
  type Handlers,
  type Limits,
  ROUTES,
  type RouteName,
} from "../../src/http/table";
import { testLogger } from "../support/log-capture";

const SERVER_BODY_LIMIT = 100;
const LIMITS: Limits = {
  key_manager_api: { timeoutMs: 41_000, maxBodyBytes: 10, maxItems: 5, maxItemsOption: "km" },
  cloud_kv_keygen: { timeoutMs: 42_000, maxBodyBytes: 20, maxItems: 5, maxItemsOption: "kg" },
  cloud_kv_writable: { timeoutMs: 43_000, maxBodyBytes: 30, maxItems: 5, maxItemsOption: "kw" },
};

const served: string[] = [];
const handlers = Object.fromEntries(
  (Object.keys(ROUTES) as RouteName[]).map((name) => [
    name,
    async ({ body }: { body: unknown }) => {
      // The signing route's service reads its body itself, within the route's limit.
      if (typeof body === "function") await body();
      served.push(name);
      return { served: name };
    },
  ]),
) as unknown as Handlers;
const routes = bindRoutes(handlers, LIMITS);
const app = createHttpApp({
  routes,
  authenticate: async () => ({ kind: "unrestricted", management: true }),
  maxBodyBytes: SERVER_BODY_LIMIT,
  logger: testLogger("off", []),
});

/** A concrete path for a declared one: each parameter a plain value. */
const concrete = (route: Route) => route.path.replace(/:[a-z_]+/g, "x");
const limitOf = (route: Route) => route.maxBodyBytes ?? SERVER_BODY_LIMIT;

function send(route: Route, path: string, body?: string) {
  return new Request(`http://sigil.local${path}`, {
    method: route.method,
    headers: { "content-type": "application/json", authorization: "Bearer sgo_operator" },
    ...(body !== undefined && { body }),
  });
}

/** One way of spelling a path differently, at a position chosen by the generator. */
type Respelling = (path: string, at: number) => string;
const RESPELLINGS: Record<string, Respelling> = {
  "trailing slash": (path) => `${path}/`,
  "doubled slash": (path, at) => {
    const slashes = [...path.matchAll(/\//g)].map((m) => m.index);
    const i = slashes[at % slashes.length] ?? 0;
    return `${path.slice(0, i)}/${path.slice(i)}`;
  },
  "percent-encoded letter": (path, at) => {
    const letters = [...path.matchAll(/[a-z]/g)].map((m) => m.index);
    const i = letters[at % letters.length] ?? 1;
    const hex = (path.charCodeAt(i) ?? 0).toString(16).toUpperCase();
    return `${path.slice(0, i)}%${hex}${path.slice(i + 1)}`;
  },
  "upper-case letter": (path, at) => {
    const letters = [...path.matchAll(/[a-z]/g)].map((m) => m.index);
    const i = letters[at % letters.length] ?? 1;
    return `${path.slice(0, i)}${path.charAt(i).toUpperCase()}${path.slice(i + 1)}`;
  },
  "query string": (path) => `${path}?a=1&b=%2F`,
  "empty query": (path) => `${path}?`,
};

const spelling = fc.record({
  route: fc.constantFrom(...routes),
  changes: fc.array(fc.tuple(fc.constantFrom(...Object.keys(RESPELLINGS)), fc.nat({ max: 1000 })), {
    minLength: 1,
    maxLength: 3,
  }),
});

describe("path spellings against the dispatcher and the real table", () => {
  test("every spelling is the route, with its deadline and body limit, or 404", async () => {
    await fc.assert(
      fc.asyncProperty(spelling, async ({ route, changes }) => {
        let path = concrete(route);
        for (const [name, at] of changes) path = (RESPELLINGS[name] as Respelling)(path, at);
        const over = route.method === "GET" ? undefined : "x".repeat(limitOf(route) + 1);
        const dispatched = app.dispatch(send(route, path, over));
        const response = await dispatched.respond();
        const answer = (await response.json()) as { code?: string; message?: string };
        if (dispatched.route === undefined) {
          expect({ path, status: response.status, code: answer.code }).toEqual({
            path,
            status: 404,
            code: "not_found",
          });
          return;
        }
        expect({ path, route: dispatched.route.name }).toEqual({ path, route: route.name });
        expect(dispatched.timeoutMs).toBe(route.timeoutMs);
        if (over !== undefined) {
          expect({ path, code: answer.code }).toEqual({ path, code: "payload_too_large" });
          expect(answer.message).toContain(`limit of ${limitOf(route)} bytes`);
        }
      }),
      { numRuns: 2000 },
    );
  });

  test("a trailing slash, a query, or both: always the route", async () => {
    for (const route of routes) {
      for (const path of [
        `${concrete(route)}/`,
        `${concrete(route)}?x=1`,
        `${concrete(route)}/?x`,
      ]) {
        expect({ path, route: app.dispatch(send(route, path)).route?.name }).toEqual({
          path,
          route: route.name,
        });
      }
    }
  });

  test("POST /eth/v1/keystores/ with a 50-byte body past its 10-byte limit is 413", async () => {
    const response = await app.handle(
      new Request("http://sigil.local/eth/v1/keystores/", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ pad: "x".repeat(40) }),
      }),
    );
    expect(response.status).toBe(413);
    expect(((await response.json()) as { message: string }).message).toBe(
      "request body exceeds the limit of 10 bytes",
    );
  });

  test("a percent-encoded parameter is decoded: the same route, the decoded value", async () => {
    served.length = 0;
    const response = await app.handle(
      new Request("http://sigil.local/api/v1/signer/auth/policies/a%20b%2Fc"),
    );
    expect(response.status).toBe(200);
    expect(served).toEqual(["getPolicy"]);
  });

  test("a doubled slash, a percent-encoded or an upper-case letter in a literal segment: 404", async () => {
    for (const path of [
      "//eth/v1/keystores",
      "/eth//v1/keystores",
      "/eth/v1/%6Beystores",
      "/ETH/v1/keystores",
    ]) {
      const response = await app.handle(new Request(`http://sigil.local${path}`));
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
    }
  });
});
