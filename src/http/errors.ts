import { type ErrorCode, isSigilError } from "../errors";

/** The one table from error code to HTTP status. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  invalid_request: 400,
  unsupported_operation: 400,
  signing_root_mismatch: 400,
  unknown_pubkey: 404,
  slashing_protection: 412,
  slashing_db_unavailable: 503,
  malformed_json: 400,
  invalid_utf8: 400,
  unauthorized: 401,
  invalid_token: 401,
  forbidden: 403,
  cors_origin_denied: 403,
  invalid_host: 400,
  host_not_allowed: 403,
  policy_not_found: 404,
  token_not_found: 404,
  policy_exists: 409,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal_error: 500,
  proxy_key_unusable: 500,
  sealed: 503,
  already_initialized: 409,
  not_initialized: 409,
  already_unsealed: 409,
  invalid_share: 400,
  duplicate_share: 409,
  no_rotation: 409,
  rotation_in_progress: 409,
  seal_conflict: 409,
  share_wrap_failed: 502,
  key_write_failed: 502,
  proxy_store_unavailable: 503,
  queue_full: 503,
  request_timeout: 503,
  shutting_down: 503,
};

/** Every error on every route has this body: `{"code":"snake_case","message":"human text"}`. */
export function errorResponse(
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return Response.json({ code, message }, { status: STATUS_BY_CODE[code], headers });
}

/** Known errors keep their code; anything else is an internal error whose details stay in the log. */
export function responseForError(error: unknown): Response {
  if (!isSigilError(error)) return errorResponse("internal_error", "internal error");
  const headers: Record<string, string> =
    error.retryAfterSeconds === undefined ? {} : { "retry-after": String(error.retryAfterSeconds) };
  if (STATUS_BY_CODE[error.code] === 401)
    headers["www-authenticate"] = 'Bearer realm="sigil", Basic realm="sigil"';
  return errorResponse(error.code, error.message, headers);
}
