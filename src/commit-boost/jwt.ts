/**
 * The module JWT of the Commit-Boost signer API (commit-boost-client `utils.rs`): HS256 only,
 * claims `module`, `route` (the exact request path), `exp` (Unix seconds) and, when the request
 * has a body, `payload_hash` = 0x ‖ keccak256(body bytes as sent). Each module signs with its own
 * secret; the unverified `module` claim only picks the secret to check against. Every refusal is
 * one `JwtRefusal` reason, for the log and the audit line (never the token or the secret).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { isJsonObject } from "../wire/json";
import { keccak256 } from "./ecdsa";

/** Seconds of clock skew allowed on `exp`. */
export const EXP_LEEWAY_SECONDS = 10;
/** A bearer token longer than this is refused unread. */
const MAX_TOKEN_LENGTH = 8192;

export type JwtRefusal =
  | "missing_token"
  | "malformed_token"
  | "unsupported_algorithm"
  | "unknown_module"
  | "bad_signature"
  | "expired"
  | "wrong_route"
  | "wrong_payload_hash";

export type JwtCheck = { ok: true; module: string } | { ok: false; reason: JwtRefusal };

export interface JwtExpectation {
  /** The request's path, which the `route` claim must equal. */
  readonly route: string;
  /** The body as received; empty for a GET. */
  readonly body: Uint8Array;
  /** Unix seconds. */
  readonly now: number;
}

const refuse = (reason: JwtRefusal): JwtCheck => ({ ok: false, reason });

function decodeSegment(segment: string): unknown {
  if (!/^[A-Za-z0-9_-]*$/.test(segment)) return undefined;
  try {
    return JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
}

/** The `Authorization: Bearer …` token, or undefined. */
export function bearerToken(header: string | null): string | undefined {
  if (header === null) return undefined;
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
  return match?.[1];
}

/**
 * Checks `token` against the secret of the module it names and the request it came with.
 * `secretOf` answers undefined for a module that is not configured.
 */
export function checkModuleJwt(
  token: string | undefined,
  secretOf: (module: string) => string | undefined,
  expected: JwtExpectation,
): JwtCheck {
  if (token === undefined || token === "") return refuse("missing_token");
  if (token.length > MAX_TOKEN_LENGTH) return refuse("malformed_token");
  const parts = token.split(".");
  if (parts.length !== 3) return refuse("malformed_token");
  const [headerPart = "", claimsPart = "", signaturePart = ""] = parts;
  const header = decodeSegment(headerPart);
  const claims = decodeSegment(claimsPart);
  if (!isJsonObject(header) || !isJsonObject(claims)) return refuse("malformed_token");
  // Only HS256: never "none", never an algorithm the caller picks.
  if (header.alg !== "HS256") return refuse("unsupported_algorithm");
  const module = claims.module;
  if (typeof module !== "string" || module === "") return refuse("malformed_token");
  const secret = secretOf(module);
  if (secret === undefined) return refuse("unknown_module");
  const mac = createHmac("sha256", secret).update(`${headerPart}.${claimsPart}`).digest();
  const given = /^[A-Za-z0-9_-]+$/.test(signaturePart)
    ? Buffer.from(signaturePart, "base64url")
    : Buffer.alloc(0);
  if (given.length !== mac.length || !timingSafeEqual(given, mac)) return refuse("bad_signature");

  const exp = claims.exp;
  if (typeof exp !== "number" || !Number.isFinite(exp)) return refuse("malformed_token");
  if (exp + EXP_LEEWAY_SECONDS < expected.now) return refuse("expired");
  if (claims.route !== expected.route) return refuse("wrong_route");
  if (expected.body.length > 0) {
    const hash = claims.payload_hash;
    const want = `0x${keccak256(expected.body).toHex()}`;
    if (typeof hash !== "string" || hash.toLowerCase() !== want)
      return refuse("wrong_payload_hash");
  }
  return { ok: true, module };
}

export interface ModuleJwtClaims {
  readonly module: string;
  readonly route: string;
  readonly exp: number;
  /** The body the token is for; none for a GET. */
  readonly body?: Uint8Array;
}

/** A token as commit-boost-client's `create_jwt` makes it (tests, docs examples). */
export function createModuleJwt(claims: ModuleJwtClaims, secret: string): string {
  const header = Buffer.from(JSON.stringify({ typ: "JWT", alg: "HS256" })).toString("base64url");
  const body = {
    exp: claims.exp,
    module: claims.module,
    route: claims.route,
    payload_hash: claims.body ? `0x${keccak256(claims.body).toHex()}` : null,
  };
  const payload = Buffer.from(JSON.stringify(body)).toString("base64url");
  const mac = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
  return `${header}.${payload}.${mac}`;
}
