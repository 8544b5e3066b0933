import { Elysia } from "elysia";
import { authorize, keyAccess, type Principal, requireManagement } from "../auth/authenticator";
import { presentedToken } from "../auth/tokens";
import { isSigilError, SigilError } from "../errors";
import type { Logger } from "../observability/log";
import { checkShape, describeProblem } from "../wire/check";
import type { Authenticate } from "./access";
import { readJsonBody } from "./body";
import { errorResponse, responseForError } from "./errors";
import { requestMeta } from "./request-meta";
import type { Caller, Route } from "./route";
import { RouteTable } from "./route-table";

export interface HttpApp {
  handle(request: Request): Promise<Response>;
  /** The deadline of the route serving this request, when it has its own. */
  timeoutMsFor(request: Request): number | undefined;
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
  /** Sees every typed error answered (metrics, audit logging of denials). */
  onSigilError?: (error: SigilError, request: Request) => void;
  logger: Logger;
}

const SEALED_MESSAGE =
  "the signer is sealed: a quorum of operators must unseal it (sigil operator unseal)";

/**
 * The application built from the route table: the sealed gate and each route's body limit and
 * deadline come from its declaration; Elysia routes what the direct routes do not serve; every
 * error, unknown routes and framework errors included, is answered as `{"code","message"}`.
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const log = options.logger;
  const table = new RouteTable(options.routes);
  const isUnsealed = options.isUnsealed ?? (() => true);
  const readBody = (request: Request) => {
    const route = table.find(request);
    return readJsonBody(
      request,
      route?.maxBodyBytes ?? options.maxBodyBytes,
      route?.bodyless === true,
    );
  };
  const answerError = (error: unknown, request: Request): Response | undefined => {
    const cause = error instanceof Error && isSigilError(error.cause) ? error.cause : error;
    if (!isSigilError(cause)) return undefined;
    options.onSigilError?.(cause, request);
    return responseForError(cause);
  };
  const unhandled = (error: unknown, request: Request): Response => {
    log.error("unhandled error", {
      request_id: requestMeta(request).id,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    });
    return errorResponse("internal_error", "internal error");
  };
  const run = async (
    route: Route,
    request: Request,
    params: Record<string, string | null | undefined>,
    body: unknown,
  ): Promise<unknown> => {
    const caller = await admit(route, request, options.authenticate);
    let query: URLSearchParams | undefined;
    return route.handle(
      {
        body: checkedBody(route, body),
        params: decodedParams(route, params),
        // Parsed only for a handler that reads it (no signing request does).
        get query() {
          query ??= new URL(request.url).searchParams;
          return query;
        },
        headers: request.headers,
        meta: requestMeta(request),
      },
      caller,
    );
  };

  const app = new Elysia()
    .onParse({ as: "global" }, ({ request }) => readBody(request))
    .onError({ as: "global" }, ({ code, error, request }) => {
      const answered = answerError(error, request);
      if (answered) return answered;
      switch (code) {
        case "NOT_FOUND":
          return errorResponse(
            "not_found",
            `no route for ${request.method} ${new URL(request.url).pathname}`,
          );
        case "PARSE":
          return malformedJson();
        default:
          return unhandled(error, request);
      }
    });
  for (const route of options.routes) {
    app.route(route.method, route.path, ({ request, params, body }) =>
      run(route, request, (params ?? {}) as Record<string, string | null>, body),
    );
  }

  return {
    timeoutMsFor: (request) => table.find(request)?.timeoutMs,
    async handle(request) {
      const found = table.find(request);
      if (!isUnsealed() && !found?.servedWhileSealed) {
        return errorResponse("sealed", options.sealedMessage?.() ?? SEALED_MESSAGE);
      }
      const direct = found?.direct ? table.directParam(found, request) : undefined;
      if (!found || direct === undefined) return app.handle(request);
      let body: unknown;
      try {
        body = await readBody(request);
      } catch (error) {
        // As Elysia answers a failed parse hook (e.g. the client closed the connection).
        return answerError(error, request) ?? malformedJson();
      }
      try {
        const result = await run(found, request, direct, body);
        return result instanceof Response ? result : Response.json(result);
      } catch (error) {
        return answerError(error, request) ?? unhandled(error, request);
      }
    },
  };
}

const malformedJson = () => errorResponse("malformed_json", "request body is not valid JSON");

/** Authenticates and authorizes as the route's access says, before its handler runs. */
async function admit(route: Route, request: Request, authenticate: Authenticate): Promise<Caller> {
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
      requireManagement(await caller.authenticate());
      return caller;
    case "scope":
      authorize(await caller.authenticate(), { scope: access.scope });
      return caller;
    case "keys":
      return { ...caller, keys: keyAccess(await caller.authenticate(), access.scope, access.list) };
  }
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

function checkedBody(route: Route, body: unknown): unknown {
  if (!route.body) return body;
  const checked = checkShape(route.body, body);
  if (checked.ok) return checked.value;
  throw new SigilError("invalid_request", describeProblem(checked));
}

/** Elysia gives null for a parameter that is not valid percent-encoding. */
function decodedParams(
  route: Route,
  params: Record<string, string | null | undefined>,
): Record<string, string> {
  const decoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(params)) {
    if (typeof value !== "string" || value === "") {
      const words = route.params?.[name] ?? name;
      throw new SigilError(
        "invalid_request",
        `the ${words} in the path is not valid percent-encoding`,
      );
    }
    decoded[name] = value;
  }
  return decoded;
}
