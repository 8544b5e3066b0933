import type { Server, SocketAddress } from "bun";
import { checkHost, type HostAllowlist, isHostAllowed } from "../net/host";
import type { Logger } from "../observability/log";
import { acceptWithoutDefer } from "../os/listen-socket";
import type { Dispatch } from "./app";
import { type CorsPolicy, corsResponseHeaders, isPreflight, preflightHeaders } from "./cors";
import { Deadlines } from "./deadlines";
import { errorResponse } from "./errors";
import { attachRequestMeta, type RequestMeta } from "./request-meta";
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
  const deadlines = new Deadlines();
  const nextId = requestIds();
  let inFlight = 0;
  let draining = false;

  // Not async: a refusal is answered in the turn it arrived, and a served request makes no
  // promise beyond its answer's.
  const fetch = (request: Request, server: Server<undefined>): Response | Promise<Response> => {
    const id = nextId();
    const headers = request.headers;
    const close = draining || asksToClose(headers.get("connection"));
    const host = checkHost(headers.get("host"));
    if (!host.ok)
      return withHeaders(errorResponse("invalid_host", host.reason), undefined, id, null);
    if (options.hostAllowlist && !isHostAllowed(host.name, options.hostAllowlist)) {
      return withHeaders(
        errorResponse(
          "host_not_allowed",
          `host ${JSON.stringify(host.name)} is not in server.host_allowlist`,
        ),
        undefined,
        id,
        close ? null : keepAlive,
      );
    }
    // Bun's URL is relative for a target that is not a path (CONNECT's host:port): no router
    // may see one.
    const url = request.url;
    const authorityStart = url.indexOf("://") + 3;
    if (authorityStart < 3) {
      return withHeaders(
        errorResponse("invalid_request", "the request target must be a path (origin-form)"),
        undefined,
        id,
        null,
      );
    }
    const pathStart = url.indexOf("/", authorityStart);
    const target = pathStart < 0 ? "/" : url.slice(pathStart);
    if (draining) {
      return withHeaders(
        errorResponse("shutting_down", "signer is shutting down"),
        undefined,
        id,
        null,
      );
    }
    const origin = headers.get("origin");
    if (options.cors && isPreflight(request)) {
      const preflight = preflightHeaders(options.cors, request);
      return withHeaders(
        preflight
          ? new Response(null, { status: 204, headers: preflight })
          : errorResponse(
              "cors_origin_denied",
              "origin not allowed by server.cors_allowed_origins",
            ),
        undefined,
        id,
        close ? null : keepAlive,
      );
    }
    // One promise per served request, resolved by whichever of the application and the deadline
    // answers first (and rejected, for Bun's error handler, only if the listener itself fails).
    if (request.method === "GET") {
      return new Promise((resolve, reject) =>
        serve(request, server, id, close, target, origin, resolve, reject),
      );
    }
    // A request that may change something waits for the end of this turn (afterThisTurn).
    return new Promise((resolve, reject) => {
      afterThisTurn().then(() => {
        try {
          if (request.signal.aborted) resolve(notServed(request, id, target));
          else serve(request, server, id, close, target, origin, resolve, reject);
        } catch (error) {
          reject(error);
        }
      });
    });
  };

  const notServed = (request: Request, id: string, target: string): Response => {
    log.warn("request not served: the client sent another before its answer (HTTP pipelining)", {
      request_id: id,
      method: request.method,
      path: target.split("?")[0],
    });
    return errorResponse("invalid_request", "connection closed: HTTP pipelining is not served");
  };

  const serve = (
    request: Request,
    server: Server<undefined>,
    id: string,
    closeAsked: boolean,
    target: string,
    origin: string | null,
    resolve: (response: Response) => void,
    reject: (error: unknown) => void,
  ): void => {
    const started = performance.now();
    const deadline = new AbortController();
    const meta = new ListenerMeta(id, deadline.signal, server, request);
    attachRequestMeta(request, meta);
    let dispatched: Dispatch;
    try {
      dispatched = options.dispatch(request);
    } catch (error) {
      reject(error);
      return;
    }
    inFlight++;
    const timeoutMs = dispatched.timeoutMs ?? options.requestTimeoutMs;
    const idleSeconds = Math.ceil(timeoutMs / 1000) + IDLE_MARGIN_SECONDS;
    // Bun's idle timer also runs while a request is handled. A deadline it would cut short gets
    // a longer timer (or none, past Bun's maximum, where the deadline below ends the request),
    // and the connection gets its keep-alive timer back before the answer is written.
    const longer = idleSeconds > options.keepAliveSeconds;
    if (longer) setIdle(server, request, idleSeconds > MAX_BUN_IDLE_SECONDS ? 0 : idleSeconds);
    let close = closeAsked;
    let answered = false;
    // The first of the application's answer and the deadline's is the one sent.
    const answer = (response: Response, extra: Record<string, string> | undefined) => {
      if (answered) return;
      answered = true;
      timer.cancel();
      if (longer) setIdle(server, request, options.keepAliveSeconds);
      inFlight--;
      if (log.enabled("debug")) {
        log.debug("request", {
          request_id: id,
          method: request.method,
          path: target.split("?")[0],
          client_port: meta.peer()?.port,
          ms: Math.round(performance.now() - started),
        });
      }
      resolve(withHeaders(response, extra, id, close ? null : keepAlive));
    };
    const cors = () => (options.cors ? corsResponseHeaders(options.cors, origin) : undefined);
    const timer = deadlines.add(timeoutMs, () => {
      // The body may still be arriving: what is left of it must never be read as a request.
      close = true;
      deadline.abort();
      answer(
        errorResponse("request_timeout", `request not answered within ${timeoutMs / 1000} s`),
        cors(),
      );
    });
    const failed = (error: unknown) => {
      log.error("request failed outside the application", {
        request_id: id,
        error: String(error),
      });
      answer(errorResponse("internal_error", "internal error"), undefined);
    };
    try {
      dispatched.respond().then((response) => {
        // Draining began while this request ran: it is answered, and its connection closed.
        close ||= draining;
        answer(response, cors());
      }, failed);
    } catch (error) {
      failed(error);
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
 * Resolves at the end of the current turn of the event loop, once for every request that waits
 * for it in that turn: the pipelining guard's turn (one `setImmediate` and one promise a turn,
 * not one of each a request).
 *
 * Why a request waits for it: Bun (1.4.5, uWS's "denying async pipelining") closes a
 * connection, answering nothing, when a request arrives on it while the one before is still
 * being answered; the one before is aborted only once the read that carried the next is parsed,
 * after this handler's first turn. A request that may change something (a signature recorded, a
 * key imported) waits for that turn and is not run on a closed connection, so nothing is done for
 * an answer nobody can receive. A shared turn keeps that: it is scheduled from a handler, so it
 * runs after the read that handler came from has been parsed whole. A client that waits for each
 * answer (every known validator client) never meets this.
 */
function afterThisTurn(): Promise<void> {
  turn ??= new Promise((resolve) =>
    setImmediate(() => {
      turn = undefined;
      resolve();
    }),
  );
  return turn;
}

let turn: Promise<void> | undefined;

/**
 * Request ids: the millisecond in base 36 and a per-listener sequence number, `mk3x0q2a-1f`. The
 * millisecond's text is built once per millisecond, not once per request.
 */
function requestIds(): () => string {
  let sequence = 0;
  let ms = -1;
  let prefix = "";
  return () => {
    const now = Date.now();
    if (now !== ms) {
      ms = now;
      prefix = `${now.toString(36)}-`;
    }
    return prefix + (++sequence).toString(36);
  };
}

/** What the listener knows of a request; the peer address is looked up only when asked for. */
class ListenerMeta implements RequestMeta {
  #peer: SocketAddress | null | undefined;

  constructor(
    readonly id: string,
    readonly deadline: AbortSignal,
    private readonly server: Server<undefined>,
    private readonly request: Request,
  ) {}

  get clientIp(): string | undefined {
    return this.peer()?.address;
  }

  /** Looked up (a CIDR-bound token, the debug log) while the request is still open. */
  peer(): SocketAddress | null {
    if (this.#peer === undefined) this.#peer = this.server.requestIP(this.request);
    return this.#peer;
  }
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
