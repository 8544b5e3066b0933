import { authorize, keyAccess, type Principal, requireManagement } from "../auth/authenticator";
import { presentedToken } from "../auth/tokens";
import { isSigilError, SigilError } from "../errors";
import type { Logger } from "../observability/log";
import type { Authenticate } from "./access";
import { readJsonBody } from "./body";
import { BodyBudget } from "./body-budget";
import { errorResponse, responseForError } from "./errors";
import { RouteMatcher } from "./match";
import { type RequestMeta, requestMeta } from "./request-meta";
import { type Caller, type Route, type RouteInput, SERVICE_READS_BODY } from "./route";

/** What the dispatcher decided about a request before answering it. */
export interface Dispatch {
  /** The route the request names; undefined when it names none (404, 405, a bad parameter). */
  readonly route: Route | undefined;
  /** The matched route's own deadline; undefined = the listener's. */
  readonly timeoutMs: number | undefined;
  /** Runs the rest of the pipeline: sealed gate, access, body, handler. */
  respond(): Promise<Response>;
}

export interface HttpApp {
  /** Matches the request (once): the deadline is known before anything else runs. */
  dispatch(request: Request): Dispatch;
  /** `dispatch(request).respond()`, for a request built in-process. */
  handle(request: Request): Promise<Response>;
}

export interface HttpAppOptions {
  /** Every route, each declared with its access, sealed behaviour, limits and body shape. */
  routes: readonly Route[];
  authenticate: Authenticate;
  /** False while the signer is sealed: only routes served while sealed answer. */
  isUnsealed?: () => boolean;
  /** What the others answer then (503 `sealed`): not initialized yet, or sealed. */
  sealedMessage?: () => string;
  maxBodyBytes: number;
  /** Bytes of bodies read at once before any credential is checked (public and operator routes). */
  unauthenticatedBodyBytes?: number;
  /** Sees every typed error answered (metrics, audit logging of denials). */
  onSigilError?: (error: SigilError, request: Request) => void;
  logger: Logger;
}

const SEALED_MESSAGE =
  "the signer is sealed: a quorum of operators must unseal it (sigil operator unseal)";
const MAX_SHOWN_PATH = 120;
/** Eight bodies of 1 MiB; one body is always admitted, whatever its size (up to the route's limit). */
export const UNAUTHENTICATED_BODY_BYTES = 8 << 20;

/**
 * The dispatcher: for each request, in this order, the one match (route, or 404/405), the sealed
 * gate, access from the headers alone (401/403 before a byte of the body is read), the route's
 * body limit and deadline, the body read and checked against the route's shape, the handler.
 * Every error, unknown routes included, is answered as `{"code","message"}`.
 *
 * A refusal answered while the client's body is still on its way keeps the connection: Bun reads
 * the rest of the announced body (by Content-Length or chunks) into nothing and then serves the
 * connection's next request, so memory does not grow and the client reads its answer. Closing
 * instead resets the connection with the body unread, and the reset destroys the answer before
 * many clients read it (docs/limits.md has the figures).
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const log = options.logger;
  const matcher = new RouteMatcher(options.routes);
  const isUnsealed = options.isUnsealed ?? (() => true);
  const budget = new BodyBudget(options.unauthenticatedBodyBytes ?? UNAUTHENTICATED_BODY_BYTES);

  const answerError = (error: unknown, request: Request): Response => {
    const cause = error instanceof Error && isSigilError(error.cause) ? error.cause : error;
    if (isSigilError(cause)) {
      options.onSigilError?.(cause, request);
      return responseForError(cause);
    }
    log.error("unhandled error", {
      request_id: requestMeta(request).id,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    });
    return errorResponse("internal_error", "internal error");
  };

  // The steps chain without an async function or an await of their own: a signing request
  // (public key in the path, body read by the service) goes from here to its handler in the
  // turn it was dispatched, and its answer takes one promise here (`respond`). Each step returns
  // what the handler returned, or a promise of it.
  const run = (
    route: Route,
    request: Request,
    params: Record<string, string>,
    query: string,
  ): unknown => {
    if (!isUnsealed() && !route.servedWhileSealed) {
      return errorResponse("sealed", options.sealedMessage?.() ?? SEALED_MESSAGE);
    }
    const admitted = admit(route, request, options.authenticate);
    return admitted instanceof Promise
      ? admitted.then((caller) => withBody(route, request, params, query, caller))
      : withBody(route, request, params, query, admitted);
  };

  const withBody = (
    route: Route,
    request: Request,
    params: Record<string, string>,
    query: string,
    caller: Caller,
  ): unknown => {
    const limit = route.maxBodyBytes ?? options.maxBodyBytes;
    // Read before anyone is known: such bodies share one budget of bytes in flight.
    const readBody = () =>
      route.access.kind === "public" || route.access.kind === "operator"
        ? budget.within(request, limit, () => readJsonBody(request, limit, route.bodyless))
        : readJsonBody(request, limit, route.bodyless);
    if (route.body === SERVICE_READS_BODY)
      return handled(route, request, params, query, caller, readBody);
    if (route.method === "GET") return handled(route, request, params, query, caller, undefined);
    return readBody().then((body) => handled(route, request, params, query, caller, body));
  };

  const handled = (
    route: Route,
    request: Request,
    params: Record<string, string>,
    query: string,
    caller: Caller,
    body: unknown,
  ): unknown => {
    return route.handle(
      new Input(body, params, query, request.headers, requestMeta(request)),
      caller,
    );
  };

  /** Runs the pipeline; whatever it throws, at any step, is answered as an error. */
  const respond = (
    route: Route,
    request: Request,
    params: Record<string, string>,
    query: string,
  ): Promise<Response> => {
    let result: unknown;
    try {
      result = run(route, request, params, query);
    } catch (error) {
      return Promise.resolve(answerError(error, request));
    }
    const toResponse = (value: unknown): Response => {
      try {
        return asResponse(value);
      } catch (error) {
        return answerError(error, request);
      }
    };
    return isThenable(result)
      ? Promise.resolve(result).then(toResponse, (error: unknown) => answerError(error, request))
      : Promise.resolve(toResponse(result));
  };

  const dispatch = (request: Request): Dispatch => {
    const url = request.url;
    const pathStart = url.indexOf("/", url.indexOf("//") + 2);
    const queryStart = url.indexOf("?", pathStart);
    const path =
      pathStart < 0 ? "/" : url.slice(pathStart, queryStart < 0 ? undefined : queryStart);
    const query = queryStart < 0 ? "" : url.slice(queryStart + 1);
    const found = matcher.match(request.method, path);
    // A path is the client's text: an answer repeats no more than the start of it.
    const shown = path.length > MAX_SHOWN_PATH ? `${path.slice(0, MAX_SHOWN_PATH)}…` : path;
    switch (found.kind) {
      case "route":
        return {
          route: found.route,
          timeoutMs: found.route.timeoutMs,
          respond: () => respond(found.route, request, found.params, query),
        };
      case "bad_param": {
        const words = found.route.params?.[found.name] ?? found.name;
        return refusal(
          request,
          new SigilError(
            "invalid_request",
            `the ${words} in the path is not valid percent-encoding`,
          ),
        );
      }
      case "method_not_allowed":
        return refusal(
          request,
          new SigilError(
            "method_not_allowed",
            `${request.method} is not allowed on ${shown} (allowed: ${found.allow.join(", ")})`,
          ),
          { allow: found.allow.join(", ") },
        );
      case "not_found":
        return refusal(
          request,
          new SigilError("not_found", `no route for ${request.method} ${shown}`),
        );
    }
  };

  const refusal = (
    request: Request,
    error: SigilError,
    headers: Record<string, string> = {},
  ): Dispatch => ({
    route: undefined,
    timeoutMs: undefined,
    respond: async () => {
      const response = answerError(error, request);
      for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
      return response;
    },
  });

  return { dispatch, handle: (request) => dispatch(request).respond() };
}

/**
 * Authenticates and authorizes as the route's access says, from the headers alone, before any
 * body is read. Per-key routes are the service's to authenticate (it reads the body after): for
 * them, and public and operator routes, the caller is known at once (no promise).
 */
function admit(
  route: Route,
  request: Request,
  authenticate: Authenticate,
): Caller | Promise<Caller> {
  let principal: Promise<Principal> | undefined;
  const caller: Caller = {
    authenticate: () => {
      principal ??= authenticate(request);
      return principal;
    },
  };
  const access = route.access;
  switch (access.kind) {
    case "public":
    case "per_key":
      return caller;
    case "operator":
      return { ...caller, credential: operatorCredential(request) };
    case "management":
      return caller.authenticate().then((who) => {
        requireManagement(who);
        return caller;
      });
    case "scope":
      return caller.authenticate().then((who) => {
        authorize(who, { scope: access.scope });
        return caller;
      });
    case "keys":
      return caller
        .authenticate()
        .then((who) => ({ ...caller, keys: keyAccess(who, access.scope, access.list) }));
  }
}

/** A handler's input; a class, so that the lazy `query` costs no getter closure per request. */
class Input implements RouteInput<unknown> {
  #query: URLSearchParams | undefined;

  constructor(
    readonly body: unknown,
    readonly params: Readonly<Record<string, string>>,
    private readonly queryText: string,
    readonly headers: Headers,
    readonly meta: RequestMeta,
  ) {}

  /** Parsed only for a handler that reads it (no signing request does). */
  get query(): URLSearchParams {
    this.#query ??= new URLSearchParams(this.queryText);
    return this.#query;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** A handler's answer: its own Response, or its result as JSON. */
function asResponse(result: unknown): Response {
  return result instanceof Response ? result : Response.json(result);
}

function operatorCredential(request: Request): string {
  const presented = presentedToken(request.headers.get("authorization"));
  if (presented.kind === "token") return presented.value;
  throw new SigilError(
    "unauthorized",
    presented.kind === "none"
      ? "this route needs an operator credential (Authorization: Bearer sgo_…)"
      : presented.reason,
  );
}
