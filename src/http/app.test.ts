import { describe, expect, test } from "bun:test";
import { testLogger } from "../../test/support/log-capture";
import { SigilError } from "../errors";
import { createHttpApp } from "./app";
import { route } from "./route";

const MAX_BODY = 256;
const ORIGIN = "http://sigil.local";

interface Seen {
  path: string;
  param: string;
  body: unknown;
}

/**
 * One app with the same handler declared twice: as a direct route under /direct/ and as an
 * ordinary (Elysia) route under /framework/. Comparing the two answers to the same request is what
 * shows the direct path answers as Elysia would; what the direct path cannot serve (a parameter to
 * percent-decode) it hands to Elysia.
 */
function harness(handler: (param: string, body: unknown) => Promise<unknown> | unknown) {
  const seen: Seen[] = [];
  const logs: string[] = [];
  const sigilErrors: string[] = [];
  const declare = (path: string, direct: boolean) =>
    route({
      method: "POST",
      path: `${path}/:param`,
      access: { kind: "public" },
      servedWhileSealed: true,
      direct,
      handle: ({ params, body }) => {
        seen.push({ path, param: params.param ?? "", body });
        return handler(params.param ?? "", body);
      },
    });
  const app = createHttpApp({
    routes: [declare("/direct", true), declare("/framework", false)],
    authenticate: async () => ({ kind: "unrestricted", management: false }),
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
  test("serve their path: the parameter without the query, the parsed body", async () => {
    const { app, seen } = harness((param) => Response.json({ param }));
    const response = await app.handle(post("/direct/0xAbC?x=1", '{"a":[1,2]}'));
    expect(await response.json()).toEqual({ param: "0xAbC" });
    expect(seen).toEqual([{ path: "/direct", param: "0xAbC", body: { a: [1, 2] } }]);
  });

  test("answer a plain result as Elysia does", async () => {
    const { app } = harness((param) => ({ param }));
    const direct = await answer(await app.handle(post("/direct/p", "{}")));
    const framework = await answer(await app.handle(post("/framework/p", "{}")));
    expect(JSON.parse(direct.body)).toEqual({ param: "p" });
    expect(direct).toEqual(framework);
  });

  test.each([
    ["a percent-encoded parameter (decoded through Elysia)", "POST", "/direct/0x%41bc", "0xAbc"],
    ["a second path segment", "POST", "/direct/a/b", null],
    ["an empty parameter", "POST", "/direct/", null],
    ["another method", "PUT", "/direct/abc", null],
  ])("%s", async (_name, method, path, param) => {
    const { app, seen } = harness((param) => Response.json({ param }));
    const response = await app.handle(
      new Request(`${ORIGIN}${path}`, {
        method,
        body: "{}",
        headers: { "content-type": "application/json" },
      }),
    );
    expect(seen.map((s) => s.param)).toEqual(param === null ? [] : [param]);
    if (param !== null) expect(await response.json()).toEqual({ param });
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
