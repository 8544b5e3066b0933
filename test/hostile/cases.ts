// The hostile-input suite as data: a table of routes (what each takes, with a valid-shaped body and
// a description of its fields) and a table of hostile classes (what each does to a route). Every
// case is one request and the answer it must get; test/hostile/runner.ts is the one runner.
//
// A base body is valid in shape, and on routes that write it is one the server would act on (the
// sign route signs it with a loaded key, the Auth API would create the policy), so a mutation that
// is wrongly accepted shows up as a 2xx here and as a write in the end-of-run snapshot. Mutations
// are chosen to be invalid for the field they hit; null is never used, since several optional
// fields take null as "absent".
import type { Bytes, RawRequest, SendOptions } from "./raw-http";

export type Path = readonly (string | number)[];

/** What a JSON field (or query parameter) holds, which decides the mutations that apply to it. */
export type FieldType =
  | { readonly kind: "uint64" }
  | { readonly kind: "integer" }
  | { readonly kind: "hex"; readonly bytes: number }
  | { readonly kind: "enum" }
  | { readonly kind: "text"; readonly jsonText?: boolean }
  | { readonly kind: "object" }
  | { readonly kind: "list" };

export interface Field {
  readonly at: Path;
  readonly type: FieldType;
  /** Dropping it must be refused (optional fields are only ever given bad values). */
  readonly required?: boolean;
  /**
   * A bad value here is refused per item, as the Key Manager API answers: 200 with every item
   * `error` (keystore and password contents), instead of a 4xx for the request.
   */
  readonly perItem?: boolean;
}

export interface RouteSpec {
  /** Shown in failures and figures. */
  readonly name: string;
  readonly method: string;
  /** With `{param}` placeholders. */
  readonly path: string;
  /** Valid values of the path parameters. */
  readonly params?: Readonly<Record<string, string>>;
  readonly query?: { readonly base: Readonly<Record<string, string>>; readonly fields: Field[] };
  readonly auth?: "management" | "operator";
  /**
   * `json`: the handler reads these fields. `ignored`: a POST/PUT/DELETE whose handler takes no
   * body; only bodies that fail before the handler (parse, size, type) are sent, since a
   * well-formed one would run it (seal the signer, delete the policy).
   */
  readonly body?: { readonly base: unknown; readonly fields: readonly Field[] } | "ignored";
  /** Statuses a request this route refuses may get (a semantic refusal, not a parse failure). */
  readonly refusals: readonly number[];
  /** Its body limit in bytes. */
  readonly bodyLimit: number;
  /** Slow-loris cases are sent to this route (they take seconds each: a few routes suffice). */
  readonly slowLoris?: boolean;
}

export type Expectation =
  /** A JSON `{code,message}` error with one of these statuses (and codes, when given). */
  | {
      readonly kind: "error";
      readonly status: readonly number[];
      readonly code?: readonly string[];
    }
  /** 200 whose every item is `error` (the Key Manager API's per-item refusal). */
  | { readonly kind: "items" }
  /** Refused by Bun's HTTP parser before sigil sees it: a bare status line, or a close. */
  | { readonly kind: "parser"; readonly status: readonly number[] }
  /** Slow-loris: cut by the request deadline (503 request_timeout) or closed by the idle timer. */
  | { readonly kind: "cut" };

export interface HostileCase {
  readonly route: string;
  readonly hostileClass: HostileClass;
  readonly name: string;
  readonly request: RawRequest;
  readonly send?: SendOptions;
  readonly expect: Expectation;
}

export const HOSTILE_CLASSES = [
  "malformed_json",
  "wrong_types",
  "missing_fields",
  "long_strings",
  "huge_bodies",
  "deep_nesting",
  "invalid_hex",
  "uint64_overflow",
  "negative_numbers",
  "path_traversal",
  "invalid_utf8",
  "wrong_content_type",
  "slow_loris",
] as const;
export type HostileClass = (typeof HOSTILE_CLASSES)[number];

/** What the cases need from the running signer. */
export interface HostileContext {
  readonly management: string;
  readonly operator: string;
  /** Slow-loris deadline of the server, for the trickle pace. */
  readonly requestTimeoutMs: number;
}

// ---- JSON with raw pieces ----

/** Bytes spliced verbatim into a JSON text: numbers JSON.stringify cannot write, invalid UTF-8, depth. */
export class Raw {
  constructor(readonly bytes: Bytes) {}
}

export function jsonBytes(value: unknown): Buffer {
  const parts: Buffer[] = [];
  const write = (v: unknown): void => {
    if (v instanceof Raw) parts.push(Buffer.from(v.bytes));
    else if (Array.isArray(v)) {
      parts.push(Buffer.from("["));
      v.forEach((item, i) => {
        if (i > 0) parts.push(Buffer.from(","));
        write(item);
      });
      parts.push(Buffer.from("]"));
    } else if (typeof v === "object" && v !== null) {
      parts.push(Buffer.from("{"));
      Object.entries(v).forEach(([key, item], i) => {
        parts.push(Buffer.from(`${i > 0 ? "," : ""}${JSON.stringify(key)}:`));
        write(item);
      });
      parts.push(Buffer.from("}"));
    } else parts.push(Buffer.from(JSON.stringify(v) ?? "null"));
  };
  write(value);
  return Buffer.concat(parts);
}

type JsonNode = Record<string | number, unknown>;

/** The value at `at` inside `root`. */
export const valueAt = (root: unknown, at: Path): unknown =>
  at.reduce<unknown>((node, key) => (node as JsonNode)[key], root);

/** Sets the value at `at`, in place; `remove` deletes it instead (an array element is spliced out). */
export function setAt(root: unknown, at: Path, value: unknown, remove = false): void {
  const parent = valueAt(root, at.slice(0, -1)) as JsonNode;
  const key = at[at.length - 1] as string | number;
  if (!remove) parent[key] = value;
  else if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete parent[key];
}

function withValue(base: unknown, at: Path, value: unknown): unknown {
  const copy = structuredClone(base);
  setAt(copy, at, value);
  return copy;
}

function without(base: unknown, at: Path): unknown {
  const copy = structuredClone(base);
  setAt(copy, at, undefined, true);
  return copy;
}

const showPath = (at: Path) => at.map((k) => (typeof k === "number" ? `[${k}]` : `.${k}`)).join("");

// ---- Values ----

export const MIB = 1024 * 1024;
const DEPTH = 100_000;
const deepArrays = (depth: number) => new Raw(`${"[".repeat(depth)}${"]".repeat(depth)}`);
const deepObjects = (depth: number) => new Raw(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`);

const WRONG_TYPES: Record<FieldType["kind"], readonly unknown[]> = {
  uint64: [true, {}, [], 1.5, "ten"],
  integer: [true, "60", {}, [], 1.5],
  hex: [true, 42, {}, []],
  enum: [true, 42, {}, []],
  text: [true, 42, {}, []],
  object: ["x", 42, [], true],
  list: ["x", 42, {}, true],
};

function longString(type: FieldType): string | undefined {
  switch (type.kind) {
    case "uint64":
      return "9".repeat(MIB);
    case "hex":
      return `0x${"ab".repeat(MIB / 2)}`;
    case "enum":
    case "text":
      return "A".repeat(MIB);
    default:
      return undefined;
  }
}

function badHex(bytes: number): [string, string][] {
  const digits = 2 * bytes;
  return [
    ["odd length", `0x${"a".repeat(digits - 1)}`],
    ["non-hex digits", `0x${"zz".repeat(bytes)}`],
    ["missing 0x", "ab".repeat(bytes)],
    ["one byte short", `0x${"ab".repeat(bytes - 1)}`],
    ["one byte long", `0x${"ab".repeat(bytes + 1)}`],
    ["empty", "0x"],
    ["full-width digits", `0x${"\uff10".repeat(digits)}`],
  ];
}

const OVERFLOWS: [string, unknown][] = [
  ["2^64 as a string", "18446744073709551616"],
  ["twenty 9s as a string", "99999999999999999999"],
  ["21 digits as a string", "184467440737095516150"],
  ["2^64 as a JSON number", new Raw("18446744073709551616")],
  ["2^53+1 as a JSON number", new Raw("9007199254740993")],
  ["1e20 as a JSON number", new Raw("1e20")],
  ["1e400 as a JSON number", new Raw("1e400")],
];

const NEGATIVES: [string, unknown][] = [
  ["-1", -1],
  ['"-1"', "-1"],
  ["-2^53-1", new Raw("-9007199254740993")],
  ["-1e400", new Raw("-1e400")],
  ["-0.5", -0.5],
  ["unicode minus", "\u22121"],
];

const INVALID_UTF8: [string, number[]][] = [
  ["0xff", [0xff]],
  ["overlong NUL (c0 80)", [0xc0, 0x80]],
  ["lone surrogate (ed a0 80)", [0xed, 0xa0, 0x80]],
  ["truncated sequence (e2 82)", [0xe2, 0x82]],
  ["5-byte form", [0xf8, 0x88, 0x80, 0x80, 0x80]],
  ["above U+10FFFF (f4 90 80 80)", [0xf4, 0x90, 0x80, 0x80]],
];

const MALFORMED: [string, string][] = [
  ["unclosed object", "{"],
  ["missing value", '{"type":}'],
  ["missing colon", '{"type" "x"}'],
  ["single quotes", "{'type':'x'}"],
  ["trailing comma", '{"type":"x",}'],
  ["unclosed array", "[1,2"],
  ["bare word", "nul"],
  ["NaN", "NaN"],
  ["trailing garbage", '{"type":"x"} garbage'],
  ["unterminated string", '"abc'],
  ["bad escape", '{"type":"\\x41"}'],
  ["leading zero", '{"n":01}'],
  ["comment", '{"type":"x" /* c */}'],
  ["NUL byte", "\u0000"],
];

const TRAVERSALS: [string, string][] = [
  ["encoded ../../etc/passwd", "..%2F..%2Fetc%2Fpasswd"],
  ["double-encoded ../", "..%252F..%252Fetc%252Fpasswd"],
  ["encoded dots and slashes", "%2e%2e%2f%2e%2e%2fetc%2fpasswd"],
  ["encoded slash", "a%2Fb"],
  ["backslashes", "..%5C..%5Cwindows%5Cwin.ini"],
  ["encoded NUL", "%00"],
  ["NUL inside", "0xab%00cd"],
  ["overlong 8 KiB", "a".repeat(8 * 1024)],
  ["invalid percent-encoding", "%zz"],
];

// ---- Building requests ----

function target(route: RouteSpec, params = route.params, query = route.query?.base): string {
  let path = route.path;
  for (const [name, value] of Object.entries(params ?? {})) path = path.replace(`{${name}}`, value);
  const search = new URLSearchParams(query ?? {}).toString();
  return search ? `${path}?${search}` : path;
}

function authHeader(route: RouteSpec, ctx: HostileContext): [string, string][] {
  if (route.auth === "management") return [["Authorization", `Bearer ${ctx.management}`]];
  if (route.auth === "operator") return [["Authorization", `Bearer ${ctx.operator}`]];
  return [];
}

interface RequestParts {
  target?: Bytes;
  body?: Bytes;
  /** undefined: application/json when there is a body; null: no Content-Type header. */
  contentType?: Bytes | null;
  authorization?: Bytes;
  extraHeaders?: [string, Bytes][];
  framing?: RawRequest["framing"];
  chunkBytes?: number;
}

function request(route: RouteSpec, ctx: HostileContext, parts: RequestParts): RawRequest {
  const headers: [string, Bytes][] =
    parts.authorization === undefined
      ? authHeader(route, ctx)
      : [["Authorization", parts.authorization]];
  headers.push(["Accept", "application/json"]);
  const contentType =
    parts.contentType === undefined
      ? parts.body === undefined
        ? null
        : "application/json"
      : parts.contentType;
  if (contentType !== null) headers.push(["Content-Type", contentType]);
  headers.push(...(parts.extraHeaders ?? []));
  return {
    method: route.method,
    target: parts.target ?? target(route),
    headers,
    body: parts.body,
    framing: parts.framing,
    chunkBytes: parts.chunkBytes,
  };
}

/** The body a route's parse-level cases start from: its base, or `{}` where the body is ignored. */
function baseBody(route: RouteSpec): unknown {
  return route.body === "ignored" || route.body === undefined ? {} : route.body.base;
}

/** A JSON text without its last byte: never valid, whatever the text was. */
const truncated = (json: Buffer) => json.subarray(0, json.length - 1).toString("latin1");

/** A small well-formed body, longer than the 10 bytes a lying Content-Length admits. */
const SMALL_BODY = Buffer.from(`{"pad":"${"x".repeat(40)}"}`);

type Draft = Omit<HostileCase, "route" | "hostileClass">;
type ClassBuilder = (route: RouteSpec, ctx: HostileContext) => Draft[];

const refused = (route: RouteSpec): Expectation => ({ kind: "error", status: route.refusals });

/** Where a field lives: the query string carries text only, so its values are sent as text. */
type Where = "body" | "query";

/** Cases that set one field (of the body or the query) to each of `values`. */
function fieldCases(
  route: RouteSpec,
  ctx: HostileContext,
  label: string,
  valuesFor: (field: Field, where: Where) => [string, unknown][],
): Draft[] {
  const drafts: Draft[] = [];
  const prefix = label ? `${label} ` : "";
  if (route.body && route.body !== "ignored") {
    const { base, fields } = route.body;
    for (const field of fields) {
      for (const [name, value] of valuesFor(field, "body")) {
        drafts.push({
          name: `${prefix}${showPath(field.at)} = ${name}`,
          request: request(route, ctx, { body: jsonBytes(withValue(base, field.at, value)) }),
          // Contents of a keystore or password string are judged per item; a non-string is not.
          expect: field.perItem && typeof value === "string" ? { kind: "items" } : refused(route),
        });
      }
    }
  }
  for (const field of route.query?.fields ?? []) {
    const key = String(field.at[0]);
    for (const [name, value] of valuesFor(field, "query")) {
      const text = queryText(value);
      // Past Bun's header limit a query never reaches sigil; digits alone are a valid limit.
      if (text.length > 16 * 1024 || /^\d{1,4}$/.test(text)) continue;
      const query = { ...route.query?.base, [key]: text };
      drafts.push({
        name: `${prefix}?${key}=${name}`,
        request: request(route, ctx, { target: target(route, route.params, query) }),
        expect: refused(route),
      });
    }
  }
  return drafts;
}

function queryText(value: unknown): string {
  if (value instanceof Raw) return Buffer.from(value.bytes).toString("latin1");
  return typeof value === "string" ? value : JSON.stringify(value);
}

const hasBody = (route: RouteSpec) => route.body !== undefined;
const show = (value: unknown): string =>
  value instanceof Raw ? Buffer.from(value.bytes).toString("latin1") : JSON.stringify(value);

const CLASS_BUILDERS: Record<HostileClass, ClassBuilder> = {
  malformed_json: (route, ctx) =>
    hasBody(route)
      ? [
          ...MALFORMED,
          ["truncated valid body", truncated(jsonBytes(baseBody(route)))] as [string, string],
        ].map(([name, body]) => ({
          name,
          request: request(route, ctx, { body }),
          expect: { kind: "error", status: [400], code: ["malformed_json"] },
        }))
      : [],

  wrong_types: (route, ctx) => {
    const drafts = fieldCases(route, ctx, "", (field) =>
      WRONG_TYPES[field.type.kind].map((value) => [show(value), value]),
    );
    if (route.body && route.body !== "ignored") {
      for (const whole of [[], "body", 42, true, null]) {
        drafts.push({
          name: `whole body = ${JSON.stringify(whole)}`,
          request: request(route, ctx, { body: jsonBytes(whole) }),
          expect: refused(route),
        });
      }
    }
    return drafts;
  },

  missing_fields: (route, ctx) => {
    if (!route.body || route.body === "ignored") return [];
    const { base, fields } = route.body;
    return [
      {
        name: "empty object",
        request: request(route, ctx, { body: "{}" }),
        expect: refused(route),
      },
      ...fields
        .filter((field) => field.required)
        .map((field) => ({
          name: `without ${showPath(field.at)}`,
          request: request(route, ctx, { body: jsonBytes(without(base, field.at)) }),
          expect: refused(route),
        })),
    ];
  },

  long_strings: (route, ctx) =>
    fieldCases(route, ctx, "1 MiB", (field, where) => {
      if (where === "query") return [["8 KiB of digits", "9".repeat(8192)]];
      const long = longString(field.type);
      return long === undefined ? [] : [["string", long]];
    }),

  huge_bodies: (route, ctx) => {
    if (!hasBody(route)) return [];
    const limit = route.bodyLimit;
    // A JSON string padded to `bytes` long, so only its size is wrong.
    const padded = (bytes: number) => `"${"a".repeat(bytes - 2)}"`;
    const tooLarge: Expectation = { kind: "error", status: [413], code: ["payload_too_large"] };
    const small = SMALL_BODY;
    return [
      {
        name: "limit + 1 byte",
        request: request(route, ctx, { body: padded(limit + 1) }),
        expect: tooLarge,
      },
      {
        name: "3 × the limit",
        request: request(route, ctx, { body: padded(3 * limit) }),
        expect: tooLarge,
      },
      {
        name: "chunked, no Content-Length, 2 × the limit",
        request: request(route, ctx, {
          body: padded(2 * limit),
          framing: "chunked",
          chunkBytes: 256 * 1024,
        }),
        expect: tooLarge,
      },
      {
        name: "Content-Length claims 1 TB, small body",
        request: request(route, ctx, {
          body: small,
          framing: "as-is",
          extraHeaders: [["Content-Length", String(10 ** 12)]],
        }),
        expect: tooLarge,
      },
      {
        name: "Content-Length claims limit + 1, small body",
        request: request(route, ctx, {
          body: small,
          framing: "as-is",
          extraHeaders: [["Content-Length", String(limit + 1)]],
        }),
        expect: tooLarge,
      },
      {
        // The server reads 10 bytes as the body (truncated JSON); the rest is not a request.
        name: "Content-Length claims 10 bytes, longer body",
        request: request(route, ctx, {
          body: small,
          framing: "as-is",
          extraHeaders: [["Content-Length", "10"]],
        }),
        expect: { kind: "error", status: [400], code: ["malformed_json"] },
      },
      {
        name: "negative Content-Length",
        request: request(route, ctx, {
          body: small,
          framing: "as-is",
          extraHeaders: [["Content-Length", "-1"]],
        }),
        expect: { kind: "parser", status: [400] },
      },
      {
        name: "Content-Length and Transfer-Encoding both",
        request: request(route, ctx, {
          body: small,
          framing: "chunked",
          extraHeaders: [["Content-Length", String(small.length)]],
        }),
        expect: { kind: "parser", status: [400] },
      },
    ];
  },

  deep_nesting: (route, ctx) => {
    if (!route.body || route.body === "ignored") return [];
    const drafts: Draft[] = [
      ["100k nested arrays", deepArrays(DEPTH)],
      ["100k nested objects", deepObjects(DEPTH)],
      ["1M nested arrays (2 MB)", deepArrays(1_000_000)],
    ]
      .filter(([, value]) => Buffer.from((value as Raw).bytes).length <= route.bodyLimit)
      .map(([name, value]) => ({
        name: `whole body: ${name}`,
        request: request(route, ctx, { body: jsonBytes(value) }),
        expect: refused(route),
      }));
    return drafts.concat(
      fieldCases(route, ctx, "", (field) => [
        ["100k nested arrays", deepArrays(DEPTH)],
        ["100k nested objects", deepObjects(DEPTH)],
        ...(field.type.kind === "text" && field.type.jsonText
          ? ([["JSON text of 100k nested arrays", "[".repeat(DEPTH) + "]".repeat(DEPTH)]] as [
              string,
              unknown,
            ][])
          : []),
      ]),
    );
  },

  invalid_hex: (route, ctx) =>
    fieldCases(route, ctx, "", (field) =>
      field.type.kind === "hex" ? badHex(field.type.bytes) : [],
    ).concat(
      // Without 0x a path public key is still valid (docs/signing.md): not a hostile case there.
      (route.params?.identifier ? badHex(48).filter(([name]) => name !== "missing 0x") : []).map(
        ([name, value]) => ({
          name: `path public key: ${name}`,
          request: request(route, ctx, {
            target: target(route, { ...route.params, identifier: encodeURIComponent(value) }),
            body: jsonBytes(baseBody(route)),
          }),
          expect: refused(route),
        }),
      ),
    ),

  uint64_overflow: (route, ctx) =>
    fieldCases(route, ctx, "", (field) =>
      field.type.kind === "uint64" || field.type.kind === "integer" ? OVERFLOWS : [],
    ),

  negative_numbers: (route, ctx) =>
    fieldCases(route, ctx, "", (field) =>
      field.type.kind === "uint64" || field.type.kind === "integer" ? NEGATIVES : [],
    ),

  path_traversal: (route, ctx) => {
    const body = hasBody(route) ? jsonBytes(baseBody(route)) : undefined;
    const drafts: Draft[] = [];
    for (const name of Object.keys(route.params ?? {})) {
      for (const [label, value] of TRAVERSALS) {
        drafts.push({
          name: `{${name}} = ${label}`,
          request: request(route, ctx, {
            target: target(route, { ...route.params, [name]: value }),
            body,
          }),
          expect: { kind: "error", status: [400, 404] },
        });
      }
      drafts.push(
        {
          name: `{${name}} with a raw NUL byte`,
          request: request(route, ctx, {
            target: target(route, { ...route.params, [name]: "ab\u0000cd" }),
            body,
          }),
          // Bun's request-line parser stops at the NUL and answers 505 itself (see docs/limits.md).
          expect: { kind: "parser", status: [400, 505] },
        },
        {
          name: `{${name}} overlong 64 KiB (past Bun's header limit)`,
          request: request(route, ctx, {
            target: target(route, { ...route.params, [name]: "a".repeat(64 * 1024) }),
            body,
          }),
          expect: { kind: "parser", status: [431] },
        },
      );
    }
    const plain = target(route);
    const [path = "", search] = plain.split("?");
    for (const [label, suffix] of [
      ["/../../etc/passwd (encoded) appended", "/..%2F..%2Fetc%2Fpasswd"],
      ["encoded slash and dots appended", "%2F..%2F..%2Fetc%2Fpasswd"],
      ["/./ and a NUL appended", "/.%2F%00"],
    ]) {
      drafts.push({
        name: label as string,
        request: request(route, ctx, {
          target: `${path}${suffix}${search ? `?${search}` : ""}`,
          body,
        }),
        // No route (404); the suffix became a parameter, refused as a bad one (400); or it names
        // a route with a parameter that does not take this method (405, the Allow header says).
        expect: { kind: "error", status: [400, 404, 405] },
      });
    }
    return drafts;
  },

  invalid_utf8: (route, ctx) => {
    const drafts: Draft[] = [];
    const inString = (bytes: number[]) => new Raw(Buffer.from([0x22, ...bytes, 0x22]));
    if (hasBody(route)) {
      const base = baseBody(route) as Record<string, unknown>;
      for (const [name, bytes] of INVALID_UTF8) {
        drafts.push(
          {
            name: `body value: ${name}`,
            request: request(route, ctx, {
              body: jsonBytes({ ...base, hostile: inString(bytes) }),
            }),
            expect: { kind: "error", status: [400], code: ["invalid_utf8"] },
          },
          {
            name: `body key: ${name}`,
            request: request(route, ctx, {
              body: Buffer.concat([
                Buffer.from("{"),
                Buffer.from(inString(bytes).bytes),
                Buffer.from(":1}"),
              ]),
            }),
            expect: { kind: "error", status: [400], code: ["invalid_utf8"] },
          },
        );
      }
      drafts.push({
        name: "Content-Type header: application/json + 0xff",
        request: request(route, ctx, {
          body: jsonBytes(base),
          contentType: Buffer.from([...Buffer.from("application/json"), 0xff]),
        }),
        expect: { kind: "error", status: [415], code: ["unsupported_media_type"] },
      });
    }
    if (route.auth) {
      for (const [name, bytes] of INVALID_UTF8) {
        drafts.push({
          name: `Authorization header: Bearer + ${name}`,
          request: request(route, ctx, {
            authorization: Buffer.from([...Buffer.from("Bearer "), ...bytes]),
            body:
              hasBody(route) && route.body !== "ignored" ? jsonBytes(baseBody(route)) : undefined,
          }),
          // The Content-Type, size and JSON are fine: the token is what is refused (or, on a
          // route whose body is ignored, the empty JSON object).
          expect: { kind: "error", status: route.body === "ignored" ? [400, 401] : [401] },
        });
      }
    }
    const body = hasBody(route) ? jsonBytes(baseBody(route)) : undefined;
    for (const name of Object.keys(route.params ?? {})) {
      for (const [label, bytes] of INVALID_UTF8) {
        drafts.push(
          {
            name: `{${name}} raw bytes: ${label}`,
            request: request(route, ctx, {
              target: Buffer.from(
                target(route, { ...route.params, [name]: "\u0001" }).replace(
                  "\u0001",
                  Buffer.from(bytes).toString("latin1"),
                ),
                "latin1",
              ),
              body,
            }),
            expect: { kind: "error", status: [400, 404] },
          },
          {
            name: `{${name}} percent-encoded: ${label}`,
            request: request(route, ctx, {
              target: target(route, {
                ...route.params,
                [name]: bytes.map((b) => `%${b.toString(16)}`).join(""),
              }),
              body,
            }),
            expect: { kind: "error", status: [400, 404] },
          },
        );
      }
    }
    return drafts;
  },

  wrong_content_type: (route, ctx) => {
    if (!hasBody(route)) return [];
    const body = jsonBytes(baseBody(route));
    return [
      ["text/plain", "text/plain"],
      ["text/plain;charset=UTF-8 (what a browser form sends)", "text/plain;charset=UTF-8"],
      ["application/x-www-form-urlencoded", "application/x-www-form-urlencoded"],
      ["multipart/form-data", "multipart/form-data; boundary=x"],
      ["application/xml", "application/xml"],
      ["text/json", "text/json"],
      ["application/jsonp", "application/jsonp"],
      ["empty value", ""],
      ["no Content-Type at all", null],
    ].map(([name, contentType]) => ({
      name: name as string,
      request: request(route, ctx, { body, contentType }),
      expect: { kind: "error", status: [415], code: ["unsupported_media_type"] },
    }));
  },

  slow_loris: (route, ctx) => {
    if (!route.slowLoris || !route.body || route.body === "ignored") return [];
    const body = jsonBytes(route.body.base);
    // Twice the deadline, in pieces: the deadline must cut it, not the end of the body.
    const pieces = 20;
    const pauseMs = Math.ceil((2 * ctx.requestTimeoutMs) / pieces);
    return [
      {
        name: "body trickled over twice the request timeout",
        request: request(route, ctx, { body }),
        send: { trickle: { pieces, pauseMs }, timeoutMs: 60_000 },
        expect: { kind: "cut" },
      },
      {
        name: "chunked body trickled over twice the request timeout",
        request: request(route, ctx, { body, framing: "chunked", chunkBytes: 16 }),
        send: { trickle: { pieces, pauseMs }, timeoutMs: 60_000 },
        expect: { kind: "cut" },
      },
      {
        name: "Content-Length promises more than is ever sent",
        request: request(route, ctx, {
          body,
          framing: "as-is",
          extraHeaders: [["Content-Length", String(body.length + 100)]],
        }),
        send: { timeoutMs: 60_000 },
        expect: { kind: "cut" },
      },
      {
        name: "headers trickled over several times the request timeout",
        request: request(route, ctx, { body }),
        send: { trickleHead: { pieces: 40, pauseMs: pauseMs * 2 }, timeoutMs: 120_000 },
        expect: { kind: "cut" },
      },
    ];
  },
};

/** Every case: routes × classes. */
export function buildCases(routes: readonly RouteSpec[], ctx: HostileContext): HostileCase[] {
  const cases: HostileCase[] = [];
  for (const hostileClass of HOSTILE_CLASSES) {
    for (const route of routes) {
      for (const draft of CLASS_BUILDERS[hostileClass](route, ctx)) {
        cases.push({ ...draft, route: route.name, hostileClass });
      }
    }
  }
  return cases;
}
