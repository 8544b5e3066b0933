/**
 * Typed errors shared by every feature. A service throws a `SigilError` with a stable
 * snake_case `code`; only the HTTP adapter (`src/http/errors.ts`) decides the status code,
 * and only the CLI decides the exit code. Messages are shown to clients: never put a
 * secret (key, password, token) into one.
 */
export type ErrorCode =
  | "invalid_request"
  | "unsupported_operation"
  | "signing_root_mismatch"
  | "unknown_pubkey"
  | "unauthorized"
  | "invalid_token"
  | "forbidden"
  | "policy_exists"
  | "policy_not_found"
  | "token_not_found"
  | "slashing_protection"
  | "slashing_db_unavailable"
  | "malformed_json"
  | "invalid_utf8"
  | "payload_too_large"
  | "unsupported_media_type"
  | "not_found"
  | "method_not_allowed"
  | "cors_origin_denied"
  | "invalid_host"
  | "host_not_allowed"
  | "queue_full"
  | "request_timeout"
  | "shutting_down"
  | "sealed"
  | "already_initialized"
  | "not_initialized"
  | "already_unsealed"
  | "invalid_share"
  | "duplicate_share"
  | "no_rotation"
  | "rotation_in_progress"
  | "seal_conflict"
  | "share_wrap_failed"
  | "key_write_failed"
  | "proxy_store_unavailable"
  | "proxy_key_unusable"
  | "internal_error";

export class SigilError extends Error {
  override readonly name = "SigilError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Seconds a client should wait before retrying, where that is meaningful. */
    readonly retryAfterSeconds?: number,
    /** A machine-readable refinement of the code (e.g. the slashing refusal reason), for metrics. */
    readonly reason?: string,
  ) {
    super(message);
  }
}

export function isSigilError(value: unknown): value is SigilError {
  return value instanceof SigilError;
}
