import type { Server } from "bun";
import type { ErrorCode } from "../errors";
import { checkHost, type HostAllowlist, isHostAllowed } from "../net/host";
import type { Logger } from "../observability/log";
import { acceptWithoutDefer } from "../os/listen-socket";
import type { Dispatch } from "./app";
import { type CorsPolicy, corsResponseHeaders, isPreflight, preflightHeaders } from "./cors";
import { errorResponse } from "./errors";
import { attachRequestMeta } from "./request-meta";
import type { ServerTls } from "./tls";

export interface HttpServerOptions {
  hostname: string;
  port: number;
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (announced in `Keep-Alive: timeout=`). */
  keepAliveSeconds: number;
  /** Host names answered; absent = any valid Host (the metrics listener). */
  hostAllowlist?: HostAllowlist;
  cors?: CorsPolicy;
  /** https only, with the checked material of server.tls; absent = plain http. */
  tls?: ServerTls;
  logger: Logger;
  /** The application's decision on a request: its deadline (undefined = the default) and answer. */
  dispatch: (request: Request) => Dispatch;
}

export interface RunningHttpServer {
  readonly hostname: string;
  readonly port: number;
  readonly url: string;
  inFlight(): number;
  /** Stops accepting, waits for in-flight requests up to `graceMs`, then closes what is left. */
  shutdown(graceMs: number): Promise<{ forced: boolean }>;
}

/** Bun's idle timer takes whole seconds up to this; 0 switches it off. */
export const MAX_BUN_IDLE_SECONDS = 255;
/** Bun must not close a connection before the request's own deadline has answered it. */
const IDLE_MARGIN_SECONDS = 5;
const SHUTDOWN_POLL_MS = 10;

/**
 * The listener around an application: the Host check, request ids, the per-request deadline,
 * CORS, connection persistence, and draining on shutdown. Body size is enforced by the app's
 * reader so that every 413 has a JSON body; Bun's own limit is only a backstop far above it.
 *
 * Connections: Bun closes a connection after the response when the request asked for it
 * (`Connection: close`), for HTTP/1.0, and after a response that says `Connection: close`. The
 * response says so whenever sigil knows, so that a client pooling connections never sends its
 * next request down a socket that is closing (RFC 9112 §9.6). Every other response announces
 * the idle timeout (`Keep-Alive: timeout=N`), which Node's and undici's pools honour by
 * retiring a socket before the signer would close it (1 s and 2 s early).
 */
export function startHttpServer(options: HttpServerOptions): RunningHttpServer {
  const log = options.logger;
  const keepAlive = `timeout=${options.keepAliveSeconds}`;
  let inFlight = 0;
  let draining = false;
  let sequence = 0;

  const fetch = async (request: Request, server: Server<undefined>): Promise<Response> => {
    const id = `${Date.now().toString(36)}-${(++sequence).toString(36)}`;
    let close = draining || asksToClose(request.headers.get("connection"));
    const finish = (response: Response, extra?: Record<string, string>) =>
      withHeaders(response, extra, id, close ? null : keepAlive);
    const refuse = (code: ErrorCode, message: string) => {
      close = true;
      return finish(errorResponse(code, message));
    };
    const host = checkHost(request.headers.get("host"));
    if (!host.ok) return refuse("invalid_host", host.reason);
    if (options.hostAllowlist && !isHostAllowed(host.name, options.hostAllowlist)) {
      return finish(
        errorResponse(
          "host_not_allowed",
          `host ${JSON.stringify(host.name)} is not in server.host_allowlist`,
        ),
      );
    }
    // Bun's URL is relative for a target that is not a path (CONNECT's host:port): no router
    // may see one.
    const url = request.url;
    const authorityStart = url.indexOf("://") + 3;
    if (authorityStart < 3) {
      return refuse("invalid_request", "the request target must be a path (origin-form)");
    }
    const pathStart = url.indexOf("/", authorityStart);
    const target = pathStart < 0 ? "/" : url.slice(pathStart);
    if (draining) return finish(errorResponse("shutting_down", "signer is shutting down"));
    const origin = request.headers.get("origin");
    if (options.cors && isPreflight(request)) {
      const headers = preflightHeaders(options.cors, request);
      return finish(
        headers
          ? new Response(null, { status: 204, headers })
          : errorResponse(
              "cors_origin_denied",
              "origin not allowed by server.cors_allowed_origins",
            ),
      );
    }
    if (request.method !== "GET" && (await closedBehind(request))) {
      log.warn("request not served: the client sent another before its answer (HTTP pipelining)", {
        request_id: id,
        method: request.method,
        path: target.split("?")[0],
      });
      return errorResponse("invalid_request", "connection closed: HTTP pipelining is not served");
    }
    inFlight++;
    const started = performance.now();
    const deadline = new AbortController();
    // The peer address is looked up when something asks for it (a CIDR-bound token, the debug
    // log), while the request is still open: most requests never need it.
    let client: ReturnType<typeof server.requestIP> | undefined;
    const peer = () => {
      if (client === undefined) client = server.requestIP(request);
      return client;
    };
    attachRequestMeta(request, {
      id,
      get clientIp() {
        return peer()?.address;
      },
      deadline: deadline.signal,
    });
    const dispatched = options.dispatch(request);
    const timeoutMs = dispatched.timeoutMs ?? options.requestTimeoutMs;
    const idleSeconds = Math.ceil(timeoutMs / 1000) + IDLE_MARGIN_SECONDS;
    // Bun's idle timer also runs while a request is handled. A deadline it would cut short gets
    // a longer timer (or none, past Bun's maximum, where the deadline below ends the request),
    // and the connection gets its keep-alive timer back before the answer is written.
    const longer = idleSeconds > options.keepAliveSeconds;
    if (longer) setIdle(server, request, idleSeconds > MAX_BUN_IDLE_SECONDS ? 0 : idleSeconds);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<Response>((resolve) => {
      timer = setTimeout(() => {
        // The body may still be arriving: what is left of it must never be read as a request.
        close = true;
        deadline.abort();
        resolve(
          errorResponse("request_timeout", `request not answered within ${timeoutMs / 1000} s`),
        );
      }, timeoutMs);
    });
    try {
      const response = await Promise.race([dispatched.respond(), timedOut]);
      // Draining began while this request ran: it is answered, and its connection closed.
      close ||= draining;
      return finish(response, options.cors ? corsResponseHeaders(options.cors, origin) : undefined);
    } catch (error) {
      log.error("request failed outside the application", { request_id: id, error: String(error) });
      return finish(errorResponse("internal_error", "internal error"));
    } finally {
      clearTimeout(timer);
      if (longer) setIdle(server, request, options.keepAliveSeconds);
      inFlight--;
      if (log.enabled("debug")) {
        log.debug("request", {
          request_id: id,
          method: request.method,
          path: target.split("?")[0],
          client_port: peer()?.port,
          ms: Math.round(performance.now() - started),
        });
      }
    }
  };

  const server = Bun.serve({
    hostname: options.hostname,
    port: options.port,
    idleTimeout: Math.min(MAX_BUN_IDLE_SECONDS, options.keepAliveSeconds),
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Never Bun's development error page (HTML, with source lines), whatever NODE_ENV says.
    development: false,
    ...(options.tls ? { tls: options.tls.options } : {}),
    fetch,
    // Only reached if the wrapper above throws: one log line, and the same JSON as any error.
    error(error) {
      log.error("request failed in the listener", { error: String(error) });
      return errorResponse("internal_error", "internal error", { connection: "close" });
    },
  });
  const port = server.port ?? options.port;
  const hostname = server.hostname ?? options.hostname;
  // Bun defers accepting a connection until its first bytes; a stop in that window drops it
  // unseen, and the client's first request after a restart is reset (os/listen-socket.ts).
  const deferred = acceptWithoutDefer(port);
  if (deferred) {
    log.warn("connections are accepted only once they send (Bun's TCP_DEFER_ACCEPT stays on)", {
      reason: deferred,
    });
  }
  return {
    hostname,
    port,
    url: `${options.tls ? "https" : "http"}://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`,
    inFlight: () => inFlight,
    async shutdown(graceMs) {
      draining = true;
      // Idle keep-alive connections are closed at once; busy ones after their answer, which
      // says `Connection: close`. Bun's own wait would also last for connections a client
      // opened and never used, which carry no request: only answers are waited for, and what
      // is left then is closed, as the process's exit would.
      void server.stop(false);
      const deadline = performance.now() + graceMs;
      while (server.pendingRequests > 0 && performance.now() < deadline) {
        await Bun.sleep(SHUTDOWN_POLL_MS);
      }
      const forced = server.pendingRequests > 0;
      await server.stop(true);
      return { forced };
    },
  };
}

/**
 * Whether Bun closed the request's connection because the client pipelined another request
 * behind it. Bun (1.4.5, uWS's "denying async pipelining") closes a connection, answering
 * nothing, when a request arrives on it while the one before is still being answered; the one
 * before is aborted only once the read that carried the next is parsed, after this handler's
 * first turn. A request that may change something (a signature recorded, a key imported) waits
 * for that turn and is not run on a closed connection, so nothing is done for an answer nobody
 * can receive. A client that waits for each answer (every known validator client) never meets
 * this.
 */
async function closedBehind(request: Request): Promise<boolean> {
  await new Promise((resolve) => setImmediate(resolve));
  return request.signal.aborted;
}

function setIdle(server: Server<undefined>, request: Request, seconds: number): void {
  try {
    server.timeout(request, seconds);
  } catch {
    // The client is gone: there is no connection left to time.
  }
}

/**
 * The response with `extra` (CORS), the request id, and `Connection: close` (keepAlive null) or
 * the `Keep-Alive` announcement; a response whose headers are immutable is copied first.
 */
function withHeaders(
  response: Response,
  extra: Record<string, string> | undefined,
  id: string,
  keepAlive: string | null,
): Response {
  try {
    setHeaders(response.headers, extra, id, keepAlive);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    setHeaders(copy.headers, extra, id, keepAlive);
    return copy;
  }
}

function setHeaders(
  headers: Headers,
  extra: Record<string, string> | undefined,
  id: string,
  keepAlive: string | null,
): void {
  if (extra) for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  headers.set("x-request-id", id);
  if (keepAlive === null) headers.set("connection", "close");
  else headers.set("keep-alive", keepAlive);
}

/**
 * Whether the request's `Connection` header carries the `close` option. Bun then closes the
 * connection after the response, so the response must say so (RFC 9112 §9.6), or a client that
 * pools connections sends its next request down a closed socket.
 */
function asksToClose(connection: string | null): boolean {
  if (connection === null) return false;
  for (const option of connection.split(",")) {
    if (option.trim().toLowerCase() === "close") return true;
  }
  return false;
}
