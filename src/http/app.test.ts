import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { testLogger } from "../../test/support/log-capture";
import { SigilError } from "../errors";
import { createHttpApp, type DirectRoute } from "./app";

const MAX_BODY = 256;
const ORIGIN = "http://sigil.local";

interface Seen {
  via: "direct" | "elysia";
  param: string;
  body: unknown;
}

/**
 * One app with the same handler reachable two ways: directly under /direct/ and through Elysia
 * under /framework/ (and /direct/ too, for what the direct path hands back to Elysia). Comparing
 * the two answers to the same request is what shows the direct path answers as Elysia would.
 */
function harness(handler: (param: string, body: unknown) => Promise<Response> | Response) {
  const seen: Seen[] = [];
  const logs: string[] = [];
  const sigilErrors: string[] = [];
  const direct: DirectRoute = {
    method: "POST",
    prefix: "/direct/",
    async handle(_request, param, body) {
      seen.push({ via: "direct", param, body });
      return handler(param, body);
    },
  };
  const viaElysia = async (param: string, body: unknown) => {
    seen.push({ via: "elysia", param, body });
    return handler(param, body);
  };
  const routes = new Elysia()
    .post("/direct/:param", ({ params, body }) => viaElysia(params.param, body))
    .post("/framework/:param", ({ params, body }) => viaElysia(params.param, body));
  const app = createHttpApp({
    routes: [routes],
    direct: [direct],
    maxBodyBytes: MAX_BODY,
    onSigilError: (error) => sigilErrors.push(error.code),
    logger: testLogger("debug", logs),
  });
  return { app, seen, logs, sigilErrors };
}

type Body = string | Uint8Array | ReadableStream;

const post = (path: string, body: Body, headers: Record<string, string> = {}) =>
  new Request(`${ORIGIN}${path}`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
  });

async function answer(response: Response) {
  return { status: response.status, body: await response.text(), headers: [...response.headers] };
}

describe("direct routes", () => {
  test("serve their path without Elysia: the parameter without the query, the parsed body", async () => {
    const { app, seen } = harness((param) => Response.json({ param }));
    const response = await app.handle(post("/direct/0xAbC?x=1", '{"a":[1,2]}'));
    expect(await response.json()).toEqual({ param: "0xAbC" });
    expect(seen).toEqual([{ via: "direct", param: "0xAbC", body: { a: [1, 2] } }]);
  });

  test.each([
    ["a percent-encoded parameter", "POST", "/direct/0x%41bc", "0xAbc"],
    ["a second path segment", "POST", "/direct/a/b", null],
    ["an empty parameter", "POST", "/direct/", null],
    ["another method", "PUT", "/direct/abc", null],
  ])("leave %s to Elysia", async (_name, method, path, elysiaParam) => {
    const { app, seen } = harness((param) => Response.json({ param }));
    const response = await app.handle(
      new Request(`${ORIGIN}${path}`, {
        method,
        body: "{}",
        headers: { "content-type": "application/json" },
      }),
    );
    expect(seen.map((s) => s.via)).toEqual(elysiaParam === null ? [] : ["elysia"]);
    if (elysiaParam !== null) expect(await response.json()).toEqual({ param: elysiaParam });
    else expect(response.status).toBe(404);
  });

  test.each([
    ["invalid JSON", (): Body => "{not json", {}],
    ["no JSON content type", (): Body => "{}", { "content-type": "text/plain" }],
    ["an empty body", (): Body => "", {}],
    ["a body over the limit", (): Body => JSON.stringify({ pad: "x".repeat(MAX_BODY) }), {}],
    ["invalid UTF-8", (): Body => new Uint8Array([0x7b, 0xff, 0x7d]), {}],
    [
      "a body stream that fails",
      (): Body =>
        new ReadableStream({
          pull(controller) {
            controller.error(new Error("connection reset"));
          },
        }),
      {},
    ],
  ] as const)("answer %s exactly as Elysia does", async (_name, body, headers) => {
    const { app, seen } = harness(() => new Response("unreachable"));
    const direct = await answer(await app.handle(post("/direct/p", body(), headers)));
    const framework = await answer(await app.handle(post("/framework/p", body(), headers)));
    expect(seen).toEqual([]);
    expect(direct.status).toBeGreaterThanOrEqual(400);
    expect(direct).toEqual(framework);
  });

  test("map a typed error as Elysia does, and report it to onSigilError", async () => {
    const { app, sigilErrors } = harness(() => {
      throw new SigilError("queue_full", "too many signing requests", 3);
    });
    const direct = await answer(await app.handle(post("/direct/p", "{}")));
    const framework = await answer(await app.handle(post("/framework/p", "{}")));
    expect(direct.status).toBe(503);
    expect(JSON.parse(direct.body)).toEqual({
      code: "queue_full",
      message: "too many signing requests",
    });
    expect(direct.headers).toContainEqual(["retry-after", "3"]);
    expect(direct).toEqual(framework);
    expect(sigilErrors).toEqual(["queue_full", "queue_full"]);
  });

  test("answer an unexpected error with a bare 500 and log it, as Elysia does", async () => {
    const { app, logs } = harness(() => {
      throw new TypeError("secret-looking detail");
    });
    const direct = await answer(await app.handle(post("/direct/p", "{}")));
    const framework = await answer(await app.handle(post("/framework/p", "{}")));
    expect(JSON.parse(direct.body)).toEqual({ code: "internal_error", message: "internal error" });
    expect(direct).toEqual(framework);
    const unhandled = logs.filter((line) => line.includes("unhandled error"));
    expect(unhandled).toHaveLength(2);
    expect(unhandled[0]).toContain("TypeError: secret-looking detail");
  });
});
