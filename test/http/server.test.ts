import { afterEach, describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { createHttpApp } from "../../src/http/app";
import type { CorsPolicy } from "../../src/http/cors";
import { route } from "../../src/http/route";
import { healthHandlers } from "../../src/http/routes/health";
import { type RunningHttpServer, startHttpServer } from "../../src/http/server";
import { bindRoutes } from "../../src/http/table";
import { HealthRegistry, type HealthReport } from "../../src/observability/health";
import { JobLimiter } from "../../src/signing/limiter";
import { testLogger } from "../support/log-capture";

const MAX_BODY = 1024;
const ALLOWED_ORIGIN = "https://dashboard.example";
const OTHER_ORIGIN = "https://evil.example";

/** Shortens the per-check timeout so a hanging check costs 100 ms, not 2 s. */
class QuickHealthRegistry extends HealthRegistry {
  override report(timeoutMs = 100): Promise<HealthReport> {
    return super.report(timeoutMs);
  }
}

interface HarnessOptions {
  requestTimeoutMs?: number;
  keepAliveSeconds?: number;
  /** The deadline of the /work route, when it is not the default. */
  workTimeoutMs?: number;
  cors?: CorsPolicy;
  health?: HealthRegistry;
}

interface Harness {
  server: RunningHttpServer;
  limiter: JobLimiter;
  logs: string[];
  /** Deadline signals seen by /work and /hang handlers, in arrival order. */
  deadlines: AbortSignal[];
  /** Request ids seen by handlers. */
  ids: string[];
  /** What the server saw on the wire for the last request: content-length, transfer-encoding. */
  lastHeaders: { contentLength: string | null; transferEncoding: string | null };
  jobsStarted(): number;
  jobsFinished(): number;
  /** Lets every job that is waiting (or will wait) finish. */
  release(): void;
  events: string[];
}

const harnesses: Harness[] = [];

function start(options: HarnessOptions = {}): Harness {
  const logs: string[] = [];
  const logger = testLogger("debug", logs);
  const limiter = new JobLimiter({ maxConcurrent: 2, maxQueued: 1, retryAfterSeconds: 2 });
  const gate = Promise.withResolvers<void>();
  const deadlines: AbortSignal[] = [];
  const ids: string[] = [];
  const events: string[] = [];
  let started = 0;
  let finished = 0;
  const job = async () => {
    started++;
    await gate.promise;
    finished++;
    return "done";
  };

  const open = { access: { kind: "public" }, servedWhileSealed: true } as const;
  const testRoutes = [
    route({
      method: "POST",
      path: "/work",
      ...open,
      timeoutMs: options.workTimeoutMs,
      handle: async ({ meta }) => {
        deadlines.push(meta.deadline);
        ids.push(meta.id);
        const result = await limiter.run(job, meta.deadline);
        events.push("handler-done");
        return { result };
      },
    }),
    route({
      method: "POST",
      path: "/echo",
      ...open,
      handle: ({ body, meta }) => ({ received: body, id: meta.id }),
    }),
    route({
      method: "POST",
      path: "/typed",
      ...open,
      body: Type.Object({ n: Type.Number() }),
      handle: ({ body }) => ({ n: body.n }),
    }),
    route({
      method: "GET",
      path: "/boom",
      ...open,
      handle: () => {
        throw new Error("kaboom internal detail");
      },
    }),
  ];

  const health = options.health ?? new HealthRegistry();
  const app = createHttpApp({
    routes: [...bindRoutes(healthHandlers(health), {}), ...testRoutes],
    authenticate: async () => ({ kind: "unrestricted", management: false }),
    maxBodyBytes: MAX_BODY,
    logger,
  });
  const lastHeaders: Harness["lastHeaders"] = { contentLength: null, transferEncoding: null };
  const server = startHttpServer({
    hostname: "127.0.0.1",
    port: 0,
    requestTimeoutMs: options.requestTimeoutMs ?? 5000,
    keepAliveSeconds: options.keepAliveSeconds ?? 120,
    cors: options.cors,
    logger,
    dispatch: (request) => {
      lastHeaders.contentLength = request.headers.get("content-length");
      lastHeaders.transferEncoding = request.headers.get("transfer-encoding");
      return app.dispatch(request);
    },
  });
  const harness: Harness = {
    server,
    limiter,
    logs,
    deadlines,
    ids,
    lastHeaders,
    events,
    jobsStarted: () => started,
    jobsFinished: () => finished,
    release: () => gate.resolve(),
  };
  harnesses.push(harness);
  return harness;
}

afterEach(async () => {
  const all = harnesses.splice(0);
  for (const h of all) h.release();
  await Promise.all(all.map((h) => h.server.shutdown(0)));
});

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error("condition not met in time");
    await Bun.sleep(5);
  }
}

function work(h: Harness, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${h.server.url}/work`, {
    method: "POST",
    body: "{}",
    headers: { "content-type": "application/json", ...headers },
  });
}

function echo(
  h: Harness,
  body: RequestInit["body"],
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${h.server.url}/echo`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
  });
}

interface ErrorBody {
  code: string;
  message: string;
}

/** Asserts the `{"code","message"}` error contract and returns the body. */
async function expectError(response: Response, status: number, code: string): Promise<ErrorBody> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type") ?? "").toContain("application/json");
  const body = (await response.json()) as ErrorBody;
  expect(Object.keys(body).sort()).toEqual(["code", "message"]);
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe("string");
  expect(body.message.length).toBeGreaterThan(0);
  return body;
}

function corsHeaderNames(response: Response): string[] {
  return [...response.headers.keys()].filter((name) => name.startsWith("access-control-"));
}

/** A raw HTTP/1.1 connection, for what fetch cannot do (send half a request). */
async function rawConnection(port: number) {
  const received: string[] = [];
  const closed = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_socket, data) {
        received.push(data.toString());
      },
      close() {
        closed.resolve();
      },
      error() {
        closed.resolve();
      },
    },
  });
  return { socket, received, closed: closed.promise };
}

function parseRawResponse(text: string) {
  const split = text.indexOf("\r\n\r\n");
  const head = split < 0 ? text : text.slice(0, split);
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return {
    status: Number(statusLine.split(" ")[1]),
    headers,
    body: split < 0 ? "" : text.slice(split + 4),
  };
}

describe("health routes", () => {
  test("/upcheck answers plain OK by default and JSON when asked", async () => {
    const h = start();
    const plain = await fetch(`${h.server.url}/upcheck`);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toStartWith("text/plain");
    expect(await plain.text()).toBe("OK");

    const json = await fetch(`${h.server.url}/upcheck`, {
      headers: { accept: "application/json" },
    });
    expect(json.status).toBe(200);
    expect(json.headers.get("content-type") ?? "").toContain("application/json");
    expect(await json.json()).toEqual({ status: "OK" });
  });

  test("/healthcheck is 200 UP with every check listed", async () => {
    const health = new HealthRegistry();
    health.register("keys", () => ({ status: "UP", data: { loaded: 3 } }));
    health.register("db", async () => ({ status: "UP" }));
    const h = start({ health });
    const response = await fetch(`${h.server.url}/healthcheck`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: "UP",
      outcome: "UP",
      checks: [
        { id: "keys", status: "UP", data: { loaded: 3 } },
        { id: "db", status: "UP" },
      ],
    });
  });

  test("/healthcheck with no checks is UP", async () => {
    const h = start();
    const response = await fetch(`${h.server.url}/healthcheck`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "UP", outcome: "UP", checks: [] });
  });

  test("/healthcheck is 503 DOWN when a check reports DOWN", async () => {
    const health = new HealthRegistry();
    health.register("keys", () => ({ status: "UP" }));
    health.register("db", () => ({ status: "DOWN", data: { reason: "unreachable" } }));
    const h = start({ health });
    const response = await fetch(`${h.server.url}/healthcheck`);
    expect(response.status).toBe(503);
    const report = (await response.json()) as HealthReport;
    expect(report.status).toBe("DOWN");
    expect(report.outcome).toBe("DOWN");
    expect(report.checks).toEqual([
      { id: "keys", status: "UP" },
      { id: "db", status: "DOWN", data: { reason: "unreachable" } },
    ]);
  });

  test("/healthcheck is 503 DOWN when a check throws or hangs", async () => {
    const health = new QuickHealthRegistry();
    health.register("throws", () => {
      throw new Error("db exploded");
    });
    health.register("rejects", () => Promise.reject(new Error("kms unavailable")));
    health.register("hangs", () => new Promise(() => {}));
    health.register("fine", () => ({ status: "UP" }));
    const h = start({ health });
    const started = performance.now();
    const response = await fetch(`${h.server.url}/healthcheck`);
    expect(performance.now() - started).toBeLessThan(1500);
    expect(response.status).toBe(503);
    const report = (await response.json()) as HealthReport;
    expect(report.status).toBe("DOWN");
    expect(report.outcome).toBe("DOWN");
    const byId = Object.fromEntries(report.checks.map((c) => [c.id, c]));
    expect(byId.throws).toEqual({ id: "throws", status: "DOWN", data: { error: "db exploded" } });
    expect(byId.rejects).toEqual({
      id: "rejects",
      status: "DOWN",
      data: { error: "kms unavailable" },
    });
    expect(byId.hangs).toEqual({ id: "hangs", status: "DOWN", data: { error: "check timed out" } });
    expect(byId.fine).toEqual({ id: "fine", status: "UP" });
  });
});

describe("error contract", () => {
  test("unknown routes are 404 not_found; a known one with another method is 405 with Allow", async () => {
    const h = start();
    const missing = await expectError(await fetch(`${h.server.url}/nope`), 404, "not_found");
    expect(missing.message).toContain("/nope");
    const deleted = await fetch(`${h.server.url}/upcheck`, { method: "DELETE" });
    expect(deleted.headers.get("allow")).toBe("GET");
    await expectError(deleted, 405, "method_not_allowed");
    const got = await fetch(`${h.server.url}/echo`);
    expect(got.headers.get("allow")).toBe("POST");
    await expectError(got, 405, "method_not_allowed");
  });

  test("malformed JSON is 400 malformed_json and the message does not echo the body", async () => {
    const h = start();
    const body = await expectError(
      await echo(h, '{"password": "supersecret"', { "content-type": "application/json" }),
      400,
      "malformed_json",
    );
    expect(body.message).not.toContain("supersecret");
  });

  test("invalid UTF-8 is 400 invalid_utf8", async () => {
    const h = start();
    await expectError(await echo(h, new Uint8Array([0x22, 0xff, 0xfe, 0x22])), 400, "invalid_utf8");
  });

  test("an empty body is 400 invalid_request", async () => {
    const h = start();
    await expectError(
      await fetch(`${h.server.url}/echo`, { method: "POST" }),
      400,
      "invalid_request",
    );
  });

  test("a body that fails the route's schema is 400 invalid_request", async () => {
    const h = start();
    const ok = await fetch(`${h.server.url}/typed`, {
      method: "POST",
      body: '{"n": 7}',
      headers: { "content-type": "application/json" },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ n: 7 });
    const bad = await expectError(
      await fetch(`${h.server.url}/typed`, {
        method: "POST",
        body: '{"n": "seven"}',
        headers: { "content-type": "application/json" },
      }),
      400,
      "invalid_request",
    );
    expect(bad.message).toStartWith("n:");
  });

  test("an unexpected exception is 500 internal_error; the detail goes to the log only", async () => {
    const h = start();
    const response = await fetch(`${h.server.url}/boom`);
    const requestId = response.headers.get("x-request-id");
    const body = await expectError(response, 500, "internal_error");
    expect(body.message).not.toContain("kaboom");
    const logged = h.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    const entry = logged.find((record) => record.msg === "unhandled error");
    expect(entry?.level).toBe("error");
    expect(entry?.request_id).toBe(requestId);
    expect(String(entry?.error)).toContain("kaboom internal detail");
  });

  test("valid JSON is echoed back", async () => {
    const h = start();
    const payload = { type: "AGGREGATION_SLOT", nested: [1, { a: "é✓" }] };
    const response = await echo(h, JSON.stringify(payload), { "content-type": "application/json" });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { received: unknown }).received).toEqual(payload);
  });
});

describe("body size limit", () => {
  test("a body of exactly the limit is accepted; one byte more is 413", async () => {
    const h = start();
    const exact = JSON.stringify("a".repeat(MAX_BODY - 2));
    expect(exact.length).toBe(MAX_BODY);
    const ok = await echo(h, exact);
    expect(ok.status).toBe(200);
    expect(h.lastHeaders.contentLength).toBe(String(MAX_BODY));

    const over = JSON.stringify("a".repeat(MAX_BODY - 1));
    const body = await expectError(await echo(h, over), 413, "payload_too_large");
    expect(body.message).toContain(String(MAX_BODY));
  });

  test("a large body with Content-Length is 413 with a JSON body", async () => {
    const h = start();
    const big = "x".repeat(4 * 1024 * 1024);
    const response = await echo(h, big, { "content-type": "application/json" });
    expect(h.lastHeaders.contentLength).toBe(String(big.length));
    await expectError(response, 413, "payload_too_large");
    expect(response.headers.get("x-request-id")).toBeTruthy();
  });

  test("a chunked body without Content-Length is cut off at the limit: 413 JSON", async () => {
    const h = start();
    const chunk = new TextEncoder().encode(" ".repeat(256));
    const totalChunks = 100;
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (pulled >= totalChunks) {
          controller.close();
          return;
        }
        pulled++;
        await Bun.sleep(10);
        controller.enqueue(chunk);
      },
    });
    const started = performance.now();
    const response = await echo(h, stream);
    expect(h.lastHeaders.contentLength).toBeNull();
    expect(h.lastHeaders.transferEncoding).toBe("chunked");
    await expectError(response, 413, "payload_too_large");
    // The server answered long before the client could have sent all 100 chunks (~1 s).
    expect(performance.now() - started).toBeLessThan(800);
    expect(pulled).toBeLessThan(totalChunks);
  });

  test("a chunked body within the limit is read whole", async () => {
    const h = start();
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"a":'));
        controller.enqueue(encoder.encode("[1,2,"));
        controller.enqueue(encoder.encode("3]}"));
        controller.close();
      },
    });
    const response = await echo(h, stream);
    expect(h.lastHeaders.contentLength).toBeNull();
    expect(response.status).toBe(200);
    expect(((await response.json()) as { received: unknown }).received).toEqual({ a: [1, 2, 3] });
  });
});

describe("request ids", () => {
  test("ordinary and error responses carry x-request-id, unique per request", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const responses = [
      await fetch(`${h.server.url}/upcheck`),
      await fetch(`${h.server.url}/upcheck`),
      await fetch(`${h.server.url}/nope`),
      await echo(h, "{bad"),
      await echo(h, "x".repeat(MAX_BODY + 1)),
      await fetch(`${h.server.url}/boom`),
    ];
    const ids = responses.map((r) => r.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(/^[0-9a-z]+-[0-9a-z]+$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("the id in x-request-id is the one handlers see in requestMeta", async () => {
    const h = start();
    const response = await echo(h, "{}");
    const body = (await response.json()) as { id: string };
    expect(body.id).toBe(response.headers.get("x-request-id") ?? "missing");
    const logged = h.logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((record) => record.msg === "request" && record.request_id === body.id);
    expect(logged?.path).toBe("/echo");
    expect(logged?.method).toBe("POST");
  });

  test("CORS preflight answers carry x-request-id too (204 and 403)", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const allowed = await fetch(`${h.server.url}/echo`, {
      method: "OPTIONS",
      headers: { origin: ALLOWED_ORIGIN, "access-control-request-method": "POST" },
    });
    expect(allowed.status).toBe(204);
    const denied = await fetch(`${h.server.url}/echo`, {
      method: "OPTIONS",
      headers: { origin: OTHER_ORIGIN, "access-control-request-method": "POST" },
    });
    expect(denied.status).toBe(403);
    expect(allowed.headers.get("x-request-id")).toBeTruthy();
    expect(denied.headers.get("x-request-id")).toBeTruthy();
  });
});

describe("CORS", () => {
  test("a preflight from an allowed origin is 204 with access-control-allow-* headers", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const response = await fetch(`${h.server.url}/api/v1/eth2/sign/0xabc`, {
      method: "OPTIONS",
      headers: {
        origin: ALLOWED_ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, authorization",
      },
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    expect(response.headers.get("access-control-allow-methods")).toContain("POST");
    expect(response.headers.get("access-control-allow-headers")).toBe(
      "content-type, authorization",
    );
    expect(response.headers.get("access-control-max-age")).toBe("600");
    expect(response.headers.get("vary")).toBe("Origin");
  });

  test("a preflight from a disallowed origin is 403 cors_origin_denied", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const response = await fetch(`${h.server.url}/echo`, {
      method: "OPTIONS",
      headers: { origin: OTHER_ORIGIN, "access-control-request-method": "POST" },
    });
    await expectError(response, 403, "cors_origin_denied");
    expect(corsHeaderNames(response)).toEqual([]);
  });

  test("a preflight without Origin is denied", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const response = await fetch(`${h.server.url}/echo`, {
      method: "OPTIONS",
      headers: { "access-control-request-method": "POST" },
    });
    await expectError(response, 403, "cors_origin_denied");
  });

  test("ordinary responses carry access-control-allow-origin only for allowed origins", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const allowed = await fetch(`${h.server.url}/upcheck`, {
      headers: { origin: ALLOWED_ORIGIN },
    });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    expect(allowed.headers.get("vary")).toBe("Origin");

    const denied = await fetch(`${h.server.url}/upcheck`, { headers: { origin: OTHER_ORIGIN } });
    expect(denied.status).toBe(200);
    expect(corsHeaderNames(denied)).toEqual([]);

    const none = await fetch(`${h.server.url}/upcheck`);
    expect(corsHeaderNames(none)).toEqual([]);
  });

  test("error responses to an allowed origin carry the CORS header too", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const notFound = await fetch(`${h.server.url}/nope`, { headers: { origin: ALLOWED_ORIGIN } });
    expect(notFound.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    await expectError(notFound, 404, "not_found");
    const tooLarge = await echo(h, "x".repeat(MAX_BODY + 1), { origin: ALLOWED_ORIGIN });
    expect(tooLarge.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    await expectError(tooLarge, 413, "payload_too_large");
  });

  test('"*" allows any origin', async () => {
    const h = start({ cors: { allowed: ["*"] } });
    const response = await fetch(`${h.server.url}/upcheck`, { headers: { origin: OTHER_ORIGIN } });
    expect(response.headers.get("access-control-allow-origin")).toBe(OTHER_ORIGIN);
    const preflight = await fetch(`${h.server.url}/echo`, {
      method: "OPTIONS",
      headers: { origin: OTHER_ORIGIN, "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
  });

  test("no CORS headers at all when cors is undefined", async () => {
    const h = start();
    const ordinary = await fetch(`${h.server.url}/upcheck`, {
      headers: { origin: ALLOWED_ORIGIN },
    });
    expect(ordinary.status).toBe(200);
    expect(corsHeaderNames(ordinary)).toEqual([]);
    expect(ordinary.headers.get("vary")).toBeNull();

    // Without a policy a preflight is just an OPTIONS request, a method no route takes.
    const preflight = await fetch(`${h.server.url}/echo`, {
      method: "OPTIONS",
      headers: { origin: ALLOWED_ORIGIN, "access-control-request-method": "POST" },
    });
    expect(corsHeaderNames(preflight)).toEqual([]);
    await expectError(preflight, 405, "method_not_allowed");
  });
});

describe("job limiter behind the server", () => {
  test("queue full: with 2 running and 1 queued the 4th is 503 queue_full at once", async () => {
    const h = start({ cors: { allowed: [ALLOWED_ORIGIN] } });
    const accepted = [work(h), work(h)];
    await until(() => h.limiter.running === 2);
    accepted.push(work(h));
    await until(() => h.limiter.queued === 1);

    const started = performance.now();
    const rejected = await work(h, { origin: ALLOWED_ORIGIN });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(rejected.headers.get("retry-after")).toBe("2");
    expect(rejected.headers.get("x-request-id")).toBeTruthy();
    expect(rejected.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    await expectError(rejected, 503, "queue_full");
    expect(h.jobsStarted()).toBe(2);
    expect(h.server.inFlight()).toBe(3);

    h.release();
    const responses = await Promise.all(accepted);
    for (const response of responses) {
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ result: "done" });
    }
    expect(h.jobsFinished()).toBe(3);
    await until(() => h.limiter.running === 0);
    expect(h.limiter.queued).toBe(0);
    expect(h.server.inFlight()).toBe(0);
    // Answered requests never see their deadline fire.
    for (const signal of h.deadlines) expect(signal.aborted).toBe(false);
  });

  test("timeout: 503 request_timeout, the deadline is aborted and the queued job is dropped", async () => {
    const h = start({ requestTimeoutMs: 300 });
    const requests = [work(h), work(h)];
    await until(() => h.limiter.running === 2);
    requests.push(work(h));
    await until(() => h.limiter.queued === 1);
    expect(h.deadlines).toHaveLength(3);
    for (const signal of h.deadlines) expect(signal.aborted).toBe(false);

    const started = performance.now();
    const responses = await Promise.all(requests);
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThan(150);
    expect(elapsed).toBeLessThan(2000);
    for (const response of responses) {
      expect(response.headers.get("x-request-id")).toBeTruthy();
      const body = await expectError(response, 503, "request_timeout");
      expect(body.message).toContain("0.3 s");
    }
    for (const signal of h.deadlines) expect(signal.aborted).toBe(true);
    // The aborted deadline took the waiting job out of the queue; it never started.
    expect(h.limiter.queued).toBe(0);
    expect(h.limiter.running).toBe(2);
    expect(h.jobsStarted()).toBe(2);
    expect(h.server.inFlight()).toBe(0);

    h.release();
    await until(() => h.limiter.running === 0);
    expect(h.jobsStarted()).toBe(2);
    expect(h.jobsFinished()).toBe(2);
  });

  test("a request answered in time does not have its deadline aborted later", async () => {
    const h = start({ requestTimeoutMs: 300 });
    h.release();
    const response = await work(h);
    expect(response.status).toBe(200);
    await Bun.sleep(400);
    expect(h.deadlines).toHaveLength(1);
    expect(h.deadlines[0]?.aborted).toBe(false);
  });
});

/** Sends `requests` (raw HTTP text) on one connection; resolves with all it got once closed or idle. */
async function exchange(port: number, requests: string, settleMs = 300) {
  const raw = await rawConnection(port);
  raw.socket.write(requests);
  const closed = await Promise.race([
    raw.closed.then(() => true),
    Bun.sleep(settleMs).then(() => false),
  ]);
  if (!closed) raw.socket.end();
  return { text: raw.received.join(""), closedByServer: closed };
}

const get = (port: number, path: string, headers = "") =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${headers}\r\n`;

describe("connections (RFC 9112 §9)", () => {
  test("Connection: close is answered Connection: close and the server closes after it", async () => {
    const h = start();
    for (const option of ["close", "Close", "keep-alive, close", "TE,close"]) {
      const { text, closedByServer } = await exchange(
        h.server.port,
        get(h.server.port, "/upcheck", `Connection: ${option}\r\n`),
        2000,
      );
      const answer = parseRawResponse(text);
      expect(answer.status).toBe(200);
      expect(answer.headers.connection).toBe("close");
      expect(answer.headers["keep-alive"]).toBeUndefined();
      expect(closedByServer).toBe(true);
    }
  });

  test("without close the connection stays open, says its idle timeout, and serves the next request", async () => {
    const h = start({ keepAliveSeconds: 77 });
    const port = h.server.port;
    const { text, closedByServer } = await exchange(
      port,
      get(port, "/upcheck") + get(port, "/upcheck", "Connection: keep-alive\r\n"),
    );
    expect(closedByServer).toBe(false);
    const answers = text.split("HTTP/1.1 ").slice(1);
    expect(answers).toHaveLength(2);
    for (const answer of answers) {
      const parsed = parseRawResponse(`HTTP/1.1 ${answer}`);
      expect(parsed.status).toBe(200);
      expect(parsed.headers.connection).toBeUndefined();
      expect(parsed.headers["keep-alive"]).toBe("timeout=77");
    }
  });

  test("a body too slow for the deadline: 503 request_timeout, and the connection closes", async () => {
    const h = start({ requestTimeoutMs: 300 });
    const port = h.server.port;
    const raw = await rawConnection(port);
    const late = `"pad"}GET /upcheck HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
    raw.socket.write(
      `POST /echo HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${5 + late.length}\r\n\r\n{"a":`,
    );
    const closed = await Promise.race([
      raw.closed.then(() => true),
      Bun.sleep(3000).then(() => false),
    ]);
    // The rest of the body, had the connection stayed, would have been read after the answer.
    if (!closed) raw.socket.write(late);
    await Bun.sleep(100);
    const text = raw.received.join("");
    const answer = parseRawResponse(text);
    expect(answer.status).toBe(503);
    expect(text).toContain('"code":"request_timeout"');
    expect(answer.headers.connection).toBe("close");
    expect(closed).toBe(true);
    expect(text.split("HTTP/1.1 ")).toHaveLength(2);
    raw.socket.end();
  });

  test("a request pipelined after one that asked to close is not served", async () => {
    const h = start();
    const port = h.server.port;
    const { text, closedByServer } = await exchange(
      port,
      get(port, "/upcheck", "Connection: close\r\n") + get(port, "/healthcheck"),
      2000,
    );
    expect(closedByServer).toBe(true);
    expect(text.split("HTTP/1.1 ")).toHaveLength(2);
    expect(parseRawResponse(text).headers.connection).toBe("close");
  });

  test("POSTs pipelined in one write: nothing is run for a connection Bun closed", async () => {
    const h = start();
    const port = h.server.port;
    const post = `POST /work HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
    for (let round = 0; round < 3; round++) {
      const { text, closedByServer } = await exchange(port, post + post, 2000);
      expect(closedByServer).toBe(true);
      expect(text).toBe("");
    }
    // The first of each pair waited for the end of its turn, found its connection closed, and
    // never reached the application.
    expect(h.ids).toEqual([]);
    expect(h.logs.filter((line) => line.includes("request not served"))).toHaveLength(3);
  });

  test("POSTs on many connections in one turn share the turn's wait and are all served", async () => {
    const h = start();
    const port = h.server.port;
    const raws = await Promise.all(Array.from({ length: 16 }, () => rawConnection(port)));
    const body = (i: number) => JSON.stringify({ i });
    for (const [i, raw] of raws.entries()) {
      raw.socket.write(
        `POST /echo HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body(i).length}\r\n\r\n${body(i)}`,
      );
    }
    await until(() => raws.every((raw) => raw.received.join("").includes("\r\n\r\n{")));
    for (const [i, raw] of raws.entries()) {
      const answer = parseRawResponse(raw.received.join(""));
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).received).toEqual({ i });
      raw.socket.end();
    }
  });

  test("an HTTP/1.0 request without Host is 400 invalid_host, as JSON, and closes", async () => {
    const h = start();
    const { text, closedByServer } = await exchange(
      h.server.port,
      "GET /upcheck HTTP/1.0\r\n\r\n",
      2000,
    );
    const answer = parseRawResponse(text);
    expect(answer.status).toBe(400);
    expect(answer.headers["content-type"]).toContain("application/json");
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.body)).toEqual({
      code: "invalid_host",
      message: "the request has no Host header",
    });
    expect(closedByServer).toBe(true);
  });

  test("a route with a longer deadline gives its connection the keep-alive timer back", async () => {
    // Bun's idle timer also runs during a request, so /work gets a longer one; after the answer
    // the connection must be closed after the keep-alive timeout again (Bun's timer ticks in
    // steps of up to 4 s), not kept for the route's deadline.
    const h = start({ keepAliveSeconds: 1, workTimeoutMs: 60_000 });
    h.release();
    const raw = await rawConnection(h.server.port);
    raw.socket.write(
      `POST /work HTTP/1.1\r\nHost: 127.0.0.1:${h.server.port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
    );
    await until(() => raw.received.join("").includes('"done"'));
    const answered = performance.now();
    await Promise.race([raw.closed, Bun.sleep(15_000)]);
    raw.socket.end();
    // Closed by the server within its keep-alive timeout plus Bun's tick, long before 65 s.
    expect(performance.now() - answered).toBeLessThan(12_000);
  }, 20_000);
});

describe("shutdown", () => {
  test("an in-flight request finishes and shutdown reports forced:false after it", async () => {
    const h = start();
    const slow = work(h);
    await until(() => h.limiter.running === 1);
    expect(h.server.inFlight()).toBe(1);

    const shutdown = h.server.shutdown(5000).then((result) => {
      h.events.push("shutdown-resolved");
      return result;
    });
    await Bun.sleep(100);
    expect(h.events).toEqual([]);

    // A new request while draining is refused or told the signer is shutting down.
    const during = await fetch(`${h.server.url}/upcheck`).then(
      async (response) => ({ status: response.status, body: await response.text() }),
      () => "refused" as const,
    );
    if (during !== "refused") {
      expect(during.status).toBe(503);
      expect(JSON.parse(during.body)).toEqual({
        code: "shutting_down",
        message: expect.any(String),
      });
    }

    h.release();
    const response = await slow;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ result: "done" });
    // Answered while draining: the client learns this connection will not carry another request.
    expect(response.headers.get("connection")).toBe("close");
    expect(await shutdown).toEqual({ forced: false });
    expect(h.events).toEqual(["handler-done", "shutdown-resolved"]);
    expect(h.server.inFlight()).toBe(0);

    // The listener is gone: new connections fail.
    await expect(fetch(`${h.server.url}/upcheck`)).rejects.toThrow();
    await expect(
      Bun.connect({ hostname: "127.0.0.1", port: h.server.port, socket: { data() {} } }),
    ).rejects.toThrow();
  });

  test("shutdown with nothing in flight is prompt and not forced", async () => {
    const h = start();
    expect((await fetch(`${h.server.url}/upcheck`)).status).toBe(200);
    const started = performance.now();
    expect(await h.server.shutdown(5000)).toEqual({ forced: false });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test("a grace period too short for the in-flight request reports forced:true", async () => {
    const h = start();
    const slow = work(h).then(
      (response) => response.status,
      () => "connection closed" as const,
    );
    await until(() => h.limiter.running === 1);
    const started = performance.now();
    expect(await h.server.shutdown(50)).toEqual({ forced: true });
    expect(performance.now() - started).toBeLessThan(1000);
    // The connection was closed under the request; it got no answer.
    expect(await slow).toBe("connection closed");
    await expect(fetch(`${h.server.url}/upcheck`)).rejects.toThrow();
  });

  /**
   * Sends half a request on a connection opened before shutdown starts and the rest after it,
   * so the request reaches the server while it drains (a new connection would be refused).
   */
  async function requestWhileDraining(h: Harness) {
    const slow = work(h);
    await until(() => h.limiter.running === 1);
    const raw = await rawConnection(h.server.port);
    raw.socket.write(`GET /upcheck HTTP/1.1\r\nHost: 127.0.0.1:${h.server.port}\r\n`);
    await Bun.sleep(50);
    const shutdown = h.server.shutdown(5000);
    await Bun.sleep(50);
    raw.socket.write("\r\n");
    await until(() => raw.received.join("").includes("\r\n\r\n{"));
    const answer = parseRawResponse(raw.received.join(""));
    await raw.closed;
    h.release();
    expect((await slow).status).toBe(200);
    expect(await shutdown).toEqual({ forced: false });
    return answer;
  }

  test("a request arriving on an open connection while draining is 503 shutting_down", async () => {
    const answer = await requestWhileDraining(start());
    expect(answer.status).toBe(503);
    expect(answer.headers["content-type"] ?? "").toContain("application/json");
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.body)).toEqual({
      code: "shutting_down",
      message: "signer is shutting down",
    });
  });

  test("the shutting_down answer carries x-request-id like every other response", async () => {
    const answer = await requestWhileDraining(start());
    expect(answer.status).toBe(503);
    expect(answer.headers["x-request-id"]).toBeTruthy();
  });
});
