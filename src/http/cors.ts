/**
 * CORS for browser-based tools (dashboards, key manager UIs). Off unless
 * `server.cors_allowed_origins` lists origins; "*" allows any origin.
 */
export interface CorsPolicy {
  allowed: readonly string[];
}

const ALLOWED_METHODS = "GET, POST, PUT, DELETE, OPTIONS";
const DEFAULT_ALLOWED_HEADERS = "authorization, content-type, accept";
const PREFLIGHT_MAX_AGE_SECONDS = "600";

export function corsPolicy(origins: readonly string[] | null): CorsPolicy | undefined {
  return origins && origins.length > 0 ? { allowed: origins.map(canonicalOrigin) } : undefined;
}

/** Browsers send `https://host:port` without a trailing slash; a config may carry one. */
function canonicalOrigin(origin: string): string {
  return origin.toLowerCase().replace(/\/$/, "");
}

export function originAllowed(policy: CorsPolicy, origin: string): boolean {
  return policy.allowed.includes("*") || policy.allowed.includes(canonicalOrigin(origin));
}

/** Headers added to an ordinary response for a request from `origin`. */
export function corsResponseHeaders(
  policy: CorsPolicy,
  origin: string | null,
): Record<string, string> {
  if (!origin || !originAllowed(policy, origin)) return {};
  return { "access-control-allow-origin": origin, vary: "Origin" };
}

export function isPreflight(request: Request): boolean {
  return request.method === "OPTIONS" && request.headers.has("access-control-request-method");
}

/** Headers of a successful preflight answer; undefined when the origin is not allowed. */
export function preflightHeaders(
  policy: CorsPolicy,
  request: Request,
): Record<string, string> | undefined {
  const origin = request.headers.get("origin");
  if (!origin || !originAllowed(policy, origin)) return undefined;
  return {
    ...corsResponseHeaders(policy, origin),
    "access-control-allow-methods": ALLOWED_METHODS,
    "access-control-allow-headers":
      request.headers.get("access-control-request-headers") ?? DEFAULT_ALLOWED_HEADERS,
    "access-control-max-age": PREFLIGHT_MAX_AGE_SECONDS,
  };
}
