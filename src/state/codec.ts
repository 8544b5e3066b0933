/**
 * What the three signer_state backends share: checks of what is written, (de)coding of policy
 * rules as JSON, decoding of stored tokens and of the seal record, and the errors they throw.
 *
 * Rules are stored as the JSON of an array of rules holding only the known fields (`effect`,
 * `scopes`, `keys`, `operations`); a field that is absent (or undefined) stays absent, an empty
 * array stays an empty array. Reading checks the shape again: a row that is not a valid rule list
 * (hand-edited, or written by a newer sigil with scopes this one does not know) is an error, never
 * a silently narrowed or widened policy.
 */
import { RulesSchema, toRule } from "../auth/schema";
import type { Policy, Rule } from "../auth/types";
import { checkShape, describeProblem, joinPath } from "../wire/check";
import type { SealSlot, TokenKind, TokenRecord } from "./store";

/** createToken: a token with that accessor or hash already exists (nothing was written). */
export class TokenConflictError extends Error {
  override readonly name = "TokenConflictError";
}

/** The database or table was written by a newer sigil, or has the wrong layout. */
export class StateSchemaError extends Error {
  override readonly name = "StateSchemaError";
}

/** A stored row that does not decode (corrupted, or from a newer sigil). */
export class StateDataError extends Error {
  override readonly name = "StateDataError";
}

/** putSeal: the body is not JSON text, or is too large (nothing was written). */
export class SealBodyError extends TypeError {
  override readonly name = "SealBodyError";
}

const TOKEN_KINDS: readonly TokenKind[] = ["management", "client", "setup"];
/** Hex SHA-256, lower case: a token value ("sgl_…") can never pass for one. */
export const TOKEN_HASH = /^[0-9a-f]{64}$/;

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

export function isTokenKind(value: unknown): value is TokenKind {
  return typeof value === "string" && (TOKEN_KINDS as readonly string[]).includes(value);
}

// ─── policies ──────────────────────────────────────────────────────────────────────────────────

/** The rules of a policy, checked by the one rule schema; the problem as "where: what". */
function checkRules(rules: unknown): { ok: true; rules: Rule[] } | { ok: false; problem: string } {
  const checked = checkShape(RulesSchema, rules);
  if (!checked.ok) {
    const where = joinPath("rules", checked.where);
    return { ok: false, problem: describeProblem({ where, problem: checked.problem }) };
  }
  return { ok: true, rules: checked.value.map(toRule) };
}

/** Checks a policy to be written; returns its name and its rules as JSON. */
export function encodePolicy(policy: Policy): { name: string; rules: string } {
  if (typeof policy?.name !== "string" || policy.name === "") {
    throw new TypeError("signer_state: a policy needs a non-empty name");
  }
  const checked = checkRules(policy.rules);
  if (!checked.ok) throw new TypeError(`signer_state: policy "${policy.name}": ${checked.problem}`);
  return { name: policy.name, rules: JSON.stringify(checked.rules) };
}

/** Decodes a stored policy (rules as JSON text, or already parsed). */
export function decodePolicy(name: string, rules: unknown): Policy {
  let parsed = rules;
  if (typeof rules === "string") {
    try {
      parsed = JSON.parse(rules);
    } catch {
      throw new StateDataError(`signer_state: policy "${name}" has rules that are not JSON`);
    }
  }
  const checked = checkRules(parsed);
  if (!checked.ok)
    throw new StateDataError(`signer_state: stored policy "${name}": ${checked.problem}`);
  return { name, rules: checked.rules };
}

/** Policy names sort by code point (= UTF-8 byte order, what sqlite, `COLLATE "C"` and DynamoDB use). */
export function compareNames(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0) ?? 0);
  const y = [...b].map((c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

// ─── tokens ────────────────────────────────────────────────────────────────────────────────────

function isTimestamp(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** Checks a token to be written (never a token value: `hash` must be a hex SHA-256). */
export function checkTokenRecord(token: TokenRecord): void {
  const fail = (message: string) => new TypeError(`signer_state: token: ${message}`);
  if (typeof token?.accessor !== "string" || token.accessor === "") {
    throw fail("accessor must be a non-empty string");
  }
  if (typeof token.hash !== "string" || !TOKEN_HASH.test(token.hash)) {
    throw fail("hash must be the lower-case hex SHA-256 of the token (64 hex digits)");
  }
  if (!isTokenKind(token.kind)) throw fail(`kind must be one of ${TOKEN_KINDS.join(", ")}`);
  if (!isStringArray(token.policies)) throw fail("policies must be an array of strings");
  if (!isStringArray(token.cidrs)) throw fail("cidrs must be an array of strings");
  if (token.kind === "management" && token.cidrs.length > 0) {
    throw fail("management tokens are never CIDR-bound");
  }
  if (!isTimestamp(token.createdAt)) throw fail("createdAt must be milliseconds since the epoch");
  if (token.expiresAt !== undefined && !isTimestamp(token.expiresAt)) {
    throw fail("expiresAt must be milliseconds since the epoch, or undefined");
  }
}

/** A stored token's columns, as any backend reads them back. */
export interface TokenFields {
  readonly accessor: unknown;
  readonly hash: unknown;
  readonly kind: unknown;
  readonly policies: unknown;
  readonly cidrs: unknown;
  readonly createdAt: unknown;
  /** null or undefined = no expiry. */
  readonly expiresAt: unknown;
}

function asTimestamp(value: unknown): number | undefined {
  const number =
    typeof value === "bigint" || typeof value === "string" ? Number(value) : (value as number);
  return isTimestamp(number) ? number : undefined;
}

function asList(value: unknown): string[] | undefined {
  let parsed = value;
  if (typeof value === "string") {
    try {
      parsed = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return isStringArray(parsed) ? [...parsed] : undefined;
}

/** A token row of the SQL backends, columns named as in their tables (sqlite and PostgreSQL). */
export interface TokenRow {
  readonly hash: unknown;
  readonly accessor: unknown;
  readonly kind: unknown;
  readonly policies: unknown;
  readonly cidrs: unknown;
  readonly created_at: unknown;
  readonly expires_at: unknown;
}

export function decodeTokenRow(row: TokenRow): TokenRecord {
  return decodeToken({
    accessor: row.accessor,
    hash: row.hash,
    kind: row.kind,
    policies: row.policies,
    cidrs: row.cidrs,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  });
}

export function decodeToken(fields: TokenFields): TokenRecord {
  const fail = (what: string) =>
    new StateDataError(`signer_state: stored token ${String(fields.accessor)}: bad ${what}`);
  if (typeof fields.accessor !== "string") throw fail("accessor");
  if (typeof fields.hash !== "string") throw fail("hash");
  if (!isTokenKind(fields.kind)) throw fail("kind");
  const policies = asList(fields.policies);
  if (policies === undefined) throw fail("policies");
  const cidrs = asList(fields.cidrs);
  if (cidrs === undefined) throw fail("cidrs");
  const createdAt = asTimestamp(fields.createdAt);
  if (createdAt === undefined) throw fail("created_at");
  const record: TokenRecord = {
    accessor: fields.accessor,
    hash: fields.hash,
    kind: fields.kind,
    policies,
    cidrs,
    createdAt,
  };
  if (fields.expiresAt === null || fields.expiresAt === undefined) return record;
  const expiresAt = asTimestamp(fields.expiresAt);
  if (expiresAt === undefined) throw fail("expires_at");
  return { ...record, expiresAt };
}

/** listTokens order: creation time, then accessor (so equal times still sort the same way). */
export function compareTokens(a: TokenRecord, b: TokenRecord): number {
  return a.createdAt - b.createdAt || compareNames(a.accessor, b.accessor);
}

export function checkNow(now: number): void {
  if (typeof now !== "number" || !Number.isFinite(now)) {
    throw new TypeError("signer_state: deleteExpiredTokens needs a time in milliseconds");
  }
}

// ─── seal record ───────────────────────────────────────────────────────────────────────────────

/**
 * Largest seal record body putSeal accepts, in UTF-8 bytes, in every backend. DynamoDB caps an
 * item at 400 KB (409,600 bytes, attribute names and values together): this leaves ample room for
 * the item's key and version attributes. The same limit everywhere keeps a record movable between
 * backends, and a record written by one sigil readable by all. A record of the seal feature
 * (operators, wrapped shares, a check value) is far smaller: a few KB per operator.
 */
export const MAX_SEAL_BODY_BYTES = 350_000;

/**
 * Checks a seal record body before it is written: JSON text (RFC 8259, as JSON.parse reads it),
 * at most MAX_SEAL_BODY_BYTES in UTF-8, and well-formed UTF-16 (a lone surrogate cannot be stored
 * as UTF-8, so it would come back as U+FFFD: the body would not round-trip exactly).
 */
export function checkSealBody(body: string): void {
  if (typeof body !== "string") {
    throw new SealBodyError("signer_state: the seal record body must be a string of JSON text");
  }
  if (!body.isWellFormed()) {
    throw new SealBodyError("signer_state: the seal record body has a lone UTF-16 surrogate");
  }
  const bytes = Buffer.byteLength(body, "utf8");
  if (bytes > MAX_SEAL_BODY_BYTES) {
    throw new SealBodyError(
      `signer_state: the seal record body is ${bytes} bytes, more than the ${MAX_SEAL_BODY_BYTES} bytes every backend accepts`,
    );
  }
  try {
    JSON.parse(body);
  } catch {
    throw new SealBodyError("signer_state: the seal record body is not valid JSON text");
  }
}

function isVersion(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1;
}

/**
 * Checks putSeal's expectedVersion: undefined (create) or a version getSeal can have returned.
 * 0 or a fraction could never match a stored version, so it is a caller's bug, not a lost race.
 */
export function checkExpectedVersion(expectedVersion: number | undefined): void {
  if (expectedVersion === undefined || isVersion(expectedVersion)) return;
  throw new TypeError(
    `signer_state: putSeal's expectedVersion must be undefined (create) or an integer >= 1, not ${String(expectedVersion)}`,
  );
}

/** Decodes the stored seal record (version as number, bigint or numeric string). */
export function decodeSeal(body: unknown, version: unknown): SealSlot {
  if (typeof body !== "string") {
    throw new StateDataError("signer_state: the stored seal record has no text body");
  }
  const number =
    typeof version === "bigint" || typeof version === "string" ? Number(version) : version;
  if (!isVersion(number)) {
    throw new StateDataError(`signer_state: the stored seal record has a bad version`);
  }
  return { body, version: number };
}
