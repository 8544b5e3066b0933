import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** Runtime tokens: a recognisable prefix (for secret scanners) and 256 random bits. */
const TOKEN_PREFIX = "sgl_";
const TOKEN_BYTES = 32;

export interface NewToken {
  /** Shown once to whoever created it; never stored. */
  readonly token: string;
  readonly hash: string;
  readonly accessor: string;
}

/** Seal-lifecycle credentials get their own prefixes, so a leaked one is recognisable for what it is. */
export const REGISTRATION_TOKEN_PREFIX = "sgr_";
export const OPERATOR_CREDENTIAL_PREFIX = "sgo_";

export function newToken(prefix: string = TOKEN_PREFIX): NewToken {
  const token = prefix + randomBytes(TOKEN_BYTES).toString("base64url");
  return { token, hash: hashToken(token), accessor: randomBytes(12).toString("hex") };
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Equal-time comparison of two secrets of any length (compares their digests). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(
    createHash("sha256").update(a).digest(),
    createHash("sha256").update(b).digest(),
  );
}

export type PresentedToken =
  | { readonly kind: "none" }
  | { readonly kind: "token"; readonly value: string }
  | { readonly kind: "malformed"; readonly reason: string };

/** Standard base64 as RFC 4648 §4 writes it: whole quanta, padding only at the end. */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

const malformed = (reason: string): PresentedToken => ({ kind: "malformed", reason });

/**
 * `Authorization: Bearer <token>`, or HTTP Basic with the token as the password (the user name
 * is ignored), which is how credentials embedded in a signer URL arrive. Exactly one header:
 * the Fetch API joins repeated headers with ", ", and no token holds a comma (RFC 6750's
 * b64token, base64, and the token rules of config validation exclude it), so a comma means two
 * headers, and two headers are refused whatever their schemes: which one would count is exactly
 * what a proxy and the signer could disagree on. Basic credentials are strict base64 of UTF-8, so
 * that no bytes are silently dropped before the comparison.
 */
export function presentedToken(authorization: string | null): PresentedToken {
  if (authorization === null || authorization.trim() === "") return { kind: "none" };
  if (authorization.includes(",")) {
    return malformed("more than one Authorization header (send exactly one)");
  }
  const [scheme = "", ...rest] = authorization.trim().split(/\s+/);
  const credentials = rest.join(" ");
  if (scheme.toLowerCase() === "bearer") {
    return credentials ? { kind: "token", value: credentials } : malformed("empty bearer token");
  }
  if (scheme.toLowerCase() === "basic") {
    const decoded = STRICT_BASE64.test(credentials) ? strictUtf8(credentials) : undefined;
    if (decoded === undefined)
      return malformed("Basic credentials that are not base64 of user:password");
    const colon = decoded.indexOf(":");
    const password = colon < 0 ? "" : decoded.slice(colon + 1);
    return password
      ? { kind: "token", value: password }
      : malformed("Basic credentials without a password");
  }
  // The "scheme" is echoed nowhere: a client that forgot "Bearer " sent its token in its place.
  return malformed("unsupported authorization scheme (expected Bearer or Basic)");
}

function strictUtf8(base64: string): string | undefined {
  try {
    return UTF8.decode(Buffer.from(base64, "base64"));
  } catch {
    return undefined;
  }
}
