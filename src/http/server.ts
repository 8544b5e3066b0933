import type { Server } from "bun";
import type { Logger } from "../observability/log";
import { type CorsPolicy, corsResponseHeaders, isPreflight, preflightHeaders } from "./cors";
import { errorResponse } from "./errors";
import { attachRequestMeta } from "./request-meta";
import type { ServerTls } from "./tls";

export interface HttpServerOptions {
  hostname: string;
  port: number;
  requestTimeoutMs: number;
  /** A route-specific deadline (e.g. the Key Manager API's own timeout); undefined = the default. */
  timeoutMsFor?: (request: Request) => number | undefined;
  cors?: CorsPolicy;
  /** https only, with the checked material of server.tls; absent = plain http. */
  tls?: ServerTls;
  logger: Logger;
  handle: (request: Request) => Response | Promise<Response>;
}

export interface RunningHttpServer {
  readonly hostname: string;
  readonly port: number;
  readonly url: string;
  inFlight(): number;
  /** Stops accepting, waits for in-flight requests up to `graceMs`, then closes what is left. */
  shutdown(graceMs: number): Promise<{ forced: boolean }>;
}

/** Bun closes connections idle longer than this; it must outlast the slowest allowed request. */
const MAX_BUN_IDLE_SECONDS = 255;
const CANONICAL_ORIGIN = "http://sigil.local";
const MIN_ROUTABLE_HOST_LENGTH = 4;

/**
 * The listener around the application: request ids, the per-request deadline, CORS, and
 * draining on shutdown. Body size is enforced by the app's reader so that every 413 has a
 * JSON body; Bun's own limit is only a backstop far above it.
 */
export function startHttpServer(options: HttpServerOptions): RunningHttpServer {
  const log = options.logger;
  let inFlight = 0;
  let draining = false;
  let sequence = 0;

  const fetch = async (incoming: Request, server: Server<undefined>): Promise<Response> => {
    // Rebound below to the canonical-origin copy the application routes on.
    let request = incoming;
    const id = `${Date.now().toString(36)}-${(++sequence).toString(36)}`;
    const withId = (response: Response, headers: Record<string, string> = {}) =>
      withHeaders(response, { ...headers, "x-request-id": id });
    if (draining) {
      return withId(
        errorResponse("shutting_down", "signer is shutting down", { connection: "close" }),
      );
    }
    const origin = request.headers.get("origin");
    if (options.cors && isPreflight(request)) {
      const headers = preflightHeaders(options.cors, request);
      return withId(
        headers
          ? new Response(null, { status: 204, headers })
          : errorResponse(
              "cors_origin_denied",
              "origin not allowed by server.cors_allowed_origins",
            ),
      );
    }
    // Elysia looks for the path from a fixed offset in the URL (after "http://" + 4 characters),
    // so a Host header shorter than that shifts what it routes on. Only such requests are copied
    // onto a canonical origin; copying every request would buffer streamed bodies.
    const { host, pathname, search } = new URL(incoming.url);
    if (host.length < MIN_ROUTABLE_HOST_LENGTH) {
      request = new Request(`${CANONICAL_ORIGIN}${pathname}${search}`, incoming);
    }
    inFlight++;
    const started = performance.now();
    const deadline = new AbortController();
    attachRequestMeta(request, {
      id,
      clientIp: server.requestIP(incoming)?.address,
      deadline: deadline.signal,
    });
    const timeoutMs = options.timeoutMsFor?.(request) ?? options.requestTimeoutMs;
    if (timeoutMs !== options.requestTimeoutMs) {
      // Bun's idle timer cannot exceed 255 s; beyond that it is switched off (0) for this
      // request and our own deadline below is what ends it.
      const idleSeconds = Math.ceil(timeoutMs / 1000) + 5;
      server.timeout(request, idleSeconds > MAX_BUN_IDLE_SECONDS ? 0 : idleSeconds);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<Response>((resolve) => {
      timer = setTimeout(() => {
        deadline.abort();
        resolve(
          errorResponse("request_timeout", `request not answered within ${timeoutMs / 1000} s`),
        );
      }, timeoutMs);
    });
    try {
      const response = await Promise.race([Promise.resolve(options.handle(request)), timedOut]);
      return withId(response, options.cors ? corsResponseHeaders(options.cors, origin) : {});
    } catch (error) {
      log.error("request failed outside the application", { request_id: id, error: String(error) });
      return withId(errorResponse("internal_error", "internal error"));
    } finally {
      clearTimeout(timer);
      inFlight--;
      if (log.enabled("debug")) {
        log.debug("request", {
          request_id: id,
          method: request.method,
          path: new URL(request.url).pathname,
          ms: Math.round(performance.now() - started),
        });
      }
    }
  };

  const server = Bun.serve({
    hostname: options.hostname,
    port: options.port,
    idleTimeout: Math.min(MAX_BUN_IDLE_SECONDS, Math.ceil(options.requestTimeoutMs / 1000) + 5),
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    ...(options.tls ? { tls: options.tls.options } : {}),
    fetch,
  });
  const port = server.port ?? options.port;
  const hostname = server.hostname ?? options.hostname;
  return {
    hostname,
    port,
    url: `${options.tls ? "https" : "http"}://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`,
    inFlight: () => inFlight,
    async shutdown(graceMs) {
      draining = true;
      const stopped = server.stop(false).then(() => false);
      const graceOver = Bun.sleep(graceMs).then(() => true);
      const forced = await Promise.race([stopped, graceOver]);
      if (forced) await server.stop(true);
      return { forced };
    },
  };
}

function withHeaders(response: Response, headers: Record<string, string>): Response {
  try {
    for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    for (const [name, value] of Object.entries(headers)) copy.headers.set(name, value);
    return copy;
  }
}
