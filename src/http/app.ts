import { type AnyElysia, Elysia } from "elysia";
import { isSigilError, SigilError } from "../errors";
import type { Logger } from "../observability/log";
import { readJsonBody } from "./body";
import { errorResponse, responseForError } from "./errors";
import { requestMeta } from "./request-meta";

/**
 * A route served without Elysia: the hot path (every signing request), where the framework's
 * per-request work (context, hooks, response mapping) was a measurable share of the main
 * thread's time. Its requests get exactly what Elysia's would: the same body reader and limit,
 * and the same error answers. A path `param` that needs percent-decoding is left to Elysia.
 */
export interface DirectRoute {
  readonly method: string;
  /** The path up to the one parameter, e.g. `/api/v1/eth2/sign/`. */
  readonly prefix: string;
  handle(request: Request, param: string, body: unknown): Promise<Response>;
}

export interface HttpApp {
  handle(request: Request): Promise<Response>;
}

export interface HttpAppOptions {
  /** Route modules (Elysia plugins), each a thin adapter over one service. */
  routes: readonly AnyElysia[];
  /** Served before Elysia is asked (see DirectRoute); each must also be among `routes`. */
  direct?: readonly DirectRoute[];
  maxBodyBytes: number;
  /** A route-specific body limit (e.g. Key Manager imports carry interchange data); undefined = the default. */
  maxBodyBytesFor?: (request: Request) => number | undefined;
  /** Sees every typed error answered (metrics, audit logging of denials). */
  onSigilError?: (error: SigilError, request: Request) => void;
  logger: Logger;
}

/**
 * The application: Elysia's routes and the direct routes in front of them, JSON bodies only (read
 * with a size limit), and every error, including unknown routes and framework errors, answered as
 * `{"code","message"}`.
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const log = options.logger;
  const readBody = (request: Request) =>
    readJsonBody(request, options.maxBodyBytesFor?.(request) ?? options.maxBodyBytes);
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
        case "VALIDATION":
          return responseForError(new SigilError("invalid_request", validationSummary(error)));
        default:
          return unhandled(error, request);
      }
    });
  for (const routes of options.routes) app.use(routes);
  const direct = options.direct ?? [];
  return {
    async handle(request) {
      for (const route of direct) {
        const param = directParam(route, request);
        if (param === undefined) continue;
        let body: unknown;
        try {
          body = await readBody(request);
        } catch (error) {
          // As Elysia answers a failed parse hook (e.g. the client closed the connection).
          return answerError(error, request) ?? malformedJson();
        }
        try {
          return await route.handle(request, param, body);
        } catch (error) {
          return answerError(error, request) ?? unhandled(error, request);
        }
      }
      return app.handle(request);
    },
  };
}

const malformedJson = () => errorResponse("malformed_json", "request body is not valid JSON");

/** The route's parameter when it serves this request: one plain path segment after the prefix. */
function directParam(route: DirectRoute, request: Request): string | undefined {
  if (request.method !== route.method) return undefined;
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  if (pathStart < 0 || !url.startsWith(route.prefix, pathStart)) return undefined;
  const query = url.indexOf("?", pathStart);
  const param = url.slice(pathStart + route.prefix.length, query < 0 ? url.length : query);
  if (param === "" || param.includes("/") || param.includes("%")) return undefined;
  return param;
}

/** Elysia's validation errors carry a JSON blob; keep the first problem, in words. */
function validationSummary(error: unknown): string {
  const first = (error as { valueError?: { path?: string; message?: string } }).valueError;
  if (!first) return "request does not match the expected shape";
  const where = first.path ? first.path.slice(1).replaceAll("/", ".") : "body";
  return `${where || "body"}: ${first.message ?? "invalid value"}`;
}
