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

/**
 * `Authorization: Bearer <token>`, or HTTP Basic with the token as the password (the user name
 * is ignored), which is how credentials embedded in a signer URL arrive.
 */
export function presentedToken(authorization: string | null): PresentedToken {
  if (authorization === null || authorization.trim() === "") return { kind: "none" };
  const [scheme = "", ...rest] = authorization.trim().split(/\s+/);
  const credentials = rest.join(" ");
  if (scheme.toLowerCase() === "bearer") {
    return credentials
      ? { kind: "token", value: credentials }
      : { kind: "malformed", reason: "empty bearer token" };
  }
  if (scheme.toLowerCase() === "basic") {
    const decoded = Buffer.from(credentials, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const password = colon < 0 ? "" : decoded.slice(colon + 1);
    return password
      ? { kind: "token", value: password }
      : { kind: "malformed", reason: "Basic credentials without a password" };
  }
  // The "scheme" is echoed nowhere: a client that forgot "Bearer " sent its token in its place.
  return {
    kind: "malformed",
    reason: "unsupported authorization scheme (expected Bearer or Basic)",
  };
}
