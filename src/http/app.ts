import { type AnyElysia, Elysia } from "elysia";
import { isSigilError, SigilError } from "../errors";
import type { Logger } from "../observability/log";
import { readJsonBody } from "./body";
import { errorResponse, responseForError } from "./errors";
import { requestMeta } from "./request-meta";

export interface HttpAppOptions {
  /** Route modules (Elysia plugins), each a thin adapter over one service. */
  routes: readonly AnyElysia[];
  maxBodyBytes: number;
  /** A route-specific body limit (e.g. Key Manager imports carry interchange data); undefined = the default. */
  maxBodyBytesFor?: (request: Request) => number | undefined;
  /** Sees every typed error answered (metrics, audit logging of denials). */
  onSigilError?: (error: SigilError, request: Request) => void;
  logger: Logger;
}

/**
 * The Elysia application: JSON bodies only (read with a size limit), and every error, including
 * unknown routes and framework errors, answered as `{"code","message"}`.
 */
export function createHttpApp(options: HttpAppOptions): AnyElysia {
  const log = options.logger;
  const app = new Elysia()
    .onParse({ as: "global" }, ({ request }) =>
      readJsonBody(request, options.maxBodyBytesFor?.(request) ?? options.maxBodyBytes),
    )
    .onError({ as: "global" }, ({ code, error, request }) => {
      const cause = error instanceof Error && isSigilError(error.cause) ? error.cause : error;
      if (isSigilError(cause)) {
        options.onSigilError?.(cause, request);
        return responseForError(cause);
      }
      switch (code) {
        case "NOT_FOUND":
          return errorResponse(
            "not_found",
            `no route for ${request.method} ${new URL(request.url).pathname}`,
          );
        case "PARSE":
          return errorResponse("malformed_json", "request body is not valid JSON");
        case "VALIDATION":
          return responseForError(new SigilError("invalid_request", validationSummary(error)));
        default:
          log.error("unhandled error", {
            request_id: requestMeta(request).id,
            error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          });
          return errorResponse("internal_error", "internal error");
      }
    });
  for (const routes of options.routes) app.use(routes);
  return app;
}

/** Elysia's validation errors carry a JSON blob; keep the first problem, in words. */
function validationSummary(error: unknown): string {
  const first = (error as { valueError?: { path?: string; message?: string } }).valueError;
  if (!first) return "request does not match the expected shape";
  const where = first.path ? first.path.slice(1).replaceAll("/", ".") : "body";
  return `${where || "body"}: ${first.message ?? "invalid value"}`;
}
