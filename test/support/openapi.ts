/**
 * OpenAPI 3.0 tooling for tests: load a multi-file spec (such as the vendored Key Manager API in
 * test/vectors/keymanager-api-spec/) into one self-contained object, pick an operation's
 * `application/json` schemas and validate request/response bodies against them with ajv.
 *
 * OpenAPI 3.0 Schema Objects are not JSON Schema: `nullable`, boolean `exclusiveMinimum` /
 * `exclusiveMaximum`, `example`, `discriminator`, `xml`, `externalDocs` and `x-*` extensions are
 * translated or dropped by `toAjvSchema` before ajv sees them. Formats are checked here rather than
 * by ajv, because ajv with `strict: false` only logs an unknown format and then accepts anything.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { ErrorObject, ValidateFunction } from "ajv";
import Ajv from "ajv";
import { parse as parseYaml } from "yaml";

/** A resolved OpenAPI 3.0 Schema Object (no `$ref` left; may be shared or, for recursive schemas, cyclic). */
export type JsonSchema = { [keyword: string]: unknown };

/** A fully resolved OpenAPI document: every `$ref` replaced by the object it points to. */
export interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, unknown>;
  [key: string]: unknown;
}

export type HttpMethod = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";

export interface OperationSchemas {
  /** The `application/json` request body schema, if the operation documents one. */
  requestBody?: JsonSchema;
  /** `requestBody.required` (OpenAPI default: false). */
  requestBodyRequired: boolean;
  /** Every documented status code (or "default" / "2XX"): its `application/json` schema, or undefined if it has no JSON body. */
  responses: Record<string, JsonSchema | undefined>;
}

export interface OperationExamples {
  /** Media-type level `example` / `examples[*].value` of the JSON request body. */
  request: unknown[];
  /** The same for each documented response. */
  responses: Record<string, unknown[]>;
}

// ---------------------------------------------------------------------------------------------
// Loading and $ref resolution

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function refOf(value: unknown): string | undefined {
  return isRecord(value) && typeof value.$ref === "string" ? value.$ref : undefined;
}

function decodePointer(fragment: string, where: string): string[] {
  if (fragment === "" || fragment === "/") return fragment === "" ? [] : [""];
  if (!fragment.startsWith("/")) {
    throw new Error(`${where}: only JSON-pointer fragments are supported, got "#${fragment}"`);
  }
  return fragment
    .slice(1)
    .split("/")
    .map((token) => decodeURIComponent(token).replaceAll("~1", "/").replaceAll("~0", "~"));
}

function encodePointer(tokens: readonly string[]): string {
  return tokens.map((t) => `/${t.replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
}

interface Location {
  file: string;
  tokens: string[];
}

class Resolver {
  private readonly files = new Map<string, unknown>();
  /** Output for each (file, pointer), registered before its children are resolved (cycle protection). */
  private readonly done = new Map<string, unknown>();
  /** Keys of `$ref` objects being followed, to reject a `$ref` chain that never reaches a value. */
  private readonly following = new Set<string>();

  document(file: string): unknown {
    const cached = this.files.get(file);
    if (cached !== undefined) return cached;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new Error(`cannot read OpenAPI file ${file}: ${String(err)}`);
    }
    const parsed: unknown = parseYaml(text);
    this.files.set(file, parsed);
    return parsed;
  }

  /** Where `ref`, written in `file`, points to. */
  target(ref: string, file: string): Location {
    const hash = ref.indexOf("#");
    const filePart = hash === -1 ? ref : ref.slice(0, hash);
    const fragment = hash === -1 ? "" : ref.slice(hash + 1);
    if (/^[a-z][a-z0-9+.-]*:/i.test(filePart)) {
      throw new Error(`${file}: remote $ref "${ref}" is not supported`);
    }
    const targetFile = filePart === "" ? file : resolve(dirname(file), decodeURI(filePart));
    return { file: targetFile, tokens: decodePointer(fragment, `${file}: $ref "${ref}"`) };
  }

  /** The raw node at `loc`, following `$ref`s met half-way down the pointer. */
  lookup(loc: Location, depth = 0): { raw: unknown; loc: Location } {
    if (depth > 100)
      throw new Error(`$ref chain too deep at ${loc.file}#${encodePointer(loc.tokens)}`);
    let node = this.document(loc.file);
    for (let i = 0; i < loc.tokens.length; i++) {
      const ref = refOf(node);
      if (ref !== undefined) {
        const via = this.target(ref, loc.file);
        return this.lookup(
          { file: via.file, tokens: [...via.tokens, ...loc.tokens.slice(i)] },
          depth + 1,
        );
      }
      const token = loc.tokens[i] ?? "";
      if (Array.isArray(node) && /^(0|[1-9][0-9]*)$/.test(token)) {
        node = node[Number(token)];
      } else if (isRecord(node) && Object.hasOwn(node, token)) {
        node = node[token];
      } else {
        node = undefined;
      }
      if (node === undefined) {
        throw new Error(
          `$ref target ${loc.file}#${encodePointer(loc.tokens)} does not exist (no "${token}")`,
        );
      }
    }
    return { raw: node, loc };
  }

  resolve(raw: unknown, loc: Location): unknown {
    const key = `${loc.file}#${encodePointer(loc.tokens)}`;
    if (this.done.has(key)) return this.done.get(key);

    const ref = refOf(raw);
    if (ref !== undefined) {
      // OpenAPI 3.0 Reference Object: any sibling of `$ref` SHALL be ignored.
      if (this.following.has(key)) throw new Error(`$ref cycle without any schema at ${key}`);
      this.following.add(key);
      const found = this.lookup(this.target(ref, loc.file));
      const value = this.resolve(found.raw, found.loc);
      this.following.delete(key);
      this.done.set(key, value);
      return value;
    }
    if (Array.isArray(raw)) {
      const out: unknown[] = [];
      this.done.set(key, out);
      raw.forEach((item, i) => {
        out.push(this.resolve(item, { file: loc.file, tokens: [...loc.tokens, String(i)] }));
      });
      return out;
    }
    if (isRecord(raw)) {
      const out: Record<string, unknown> = {};
      this.done.set(key, out);
      for (const [k, v] of Object.entries(raw)) {
        out[k] = this.resolve(v, { file: loc.file, tokens: [...loc.tokens, k] });
      }
      return out;
    }
    this.done.set(key, raw);
    return raw;
  }
}

/**
 * Parse the root YAML/JSON file and resolve every `$ref` (relative files, in-file `#/...`
 * pointers, `file.yaml#/Pointer`), each relative to the file it is written in. The same target
 * always resolves to the same object, so recursive schemas become cyclic object graphs rather
 * than infinite ones: walk the result with a visited set (as `toAjvSchema` does).
 */
export function loadOpenApi(rootPath: string): OpenApiDoc {
  const file = resolve(rootPath);
  const resolver = new Resolver();
  const doc = resolver.resolve(resolver.document(file), { file, tokens: [] });
  if (!isRecord(doc) || typeof doc.openapi !== "string" || !isRecord(doc.paths)) {
    throw new Error(`${file} is not an OpenAPI 3 document (no "openapi" version or "paths")`);
  }
  if (!doc.openapi.startsWith("3.0.")) {
    throw new Error(`${file}: openapi ${doc.openapi} is not 3.0.x; this tooling translates 3.0`);
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isRecord(item)) throw new Error(`${file}: path item ${path} is not an object`);
  }
  return doc as OpenApiDoc;
}

// ---------------------------------------------------------------------------------------------
// Operations

function templateMatches(template: string, path: string): boolean {
  const t = template.split("/");
  const p = path.split("/");
  return (
    t.length === p.length &&
    t.every((seg, i) => {
      const actual = p[i] ?? "";
      return /^\{[^/{}]+\}$/.test(seg) ? actual !== "" : seg === actual;
    })
  );
}

/** The path item for `path`: the exact template (`/eth/v1/validator/{pubkey}/graffiti`) or a concrete path matching one. */
function pathItem(doc: OpenApiDoc, pathAndQuery: string): Record<string, unknown> {
  const path = pathAndQuery.split("?")[0] ?? "";
  const exact = doc.paths[path];
  if (exact) return exact;
  const matches = Object.keys(doc.paths).filter((template) => templateMatches(template, path));
  // Prefer the template with the most literal segments (OpenAPI: concrete paths match first).
  const params = (template: string): number => template.match(/\{/g)?.length ?? 0;
  matches.sort((a, b) => params(a) - params(b));
  const best = matches[0];
  const item = best === undefined ? undefined : doc.paths[best];
  if (!item) {
    throw new Error(`no path ${path} in the spec (paths: ${Object.keys(doc.paths).join(", ")})`);
  }
  return item;
}

function operation(doc: OpenApiDoc, method: string, path: string): Record<string, unknown> {
  const m = method.toLowerCase();
  const op = pathItem(doc, path)[m];
  if (!isRecord(op)) throw new Error(`the spec documents no ${m.toUpperCase()} ${path}`);
  return op;
}

/** The JSON media type object of a `content` map: exact `application/json` first, then `application/json; …` or `application/*+json`. */
function jsonMedia(content: unknown): Record<string, unknown> | undefined {
  if (!isRecord(content)) return undefined;
  const exact = content["application/json"];
  if (isRecord(exact)) return exact;
  for (const [type, media] of Object.entries(content)) {
    const base = type.split(";")[0]?.trim().toLowerCase() ?? "";
    if (
      (base === "application/json" || /^application\/[^/]+\+json$/.test(base)) &&
      isRecord(media)
    ) {
      return media;
    }
  }
  return undefined;
}

function mediaSchema(content: unknown): JsonSchema | undefined {
  const schema = jsonMedia(content)?.schema;
  return isRecord(schema) ? schema : undefined;
}

/** The `application/json` request and response schemas of one operation; throws if it is not documented. */
export function operationSchemas(
  doc: OpenApiDoc,
  method: HttpMethod,
  path: string,
): OperationSchemas {
  const op = operation(doc, method, path);
  const result: OperationSchemas = { requestBodyRequired: false, responses: {} };
  if (isRecord(op.requestBody)) {
    const schema = mediaSchema(op.requestBody.content);
    if (schema) result.requestBody = schema;
    result.requestBodyRequired = op.requestBody.required === true;
  }
  if (!isRecord(op.responses)) throw new Error(`${method.toUpperCase()} ${path} has no responses`);
  for (const [status, response] of Object.entries(op.responses)) {
    result.responses[status] = isRecord(response) ? mediaSchema(response.content) : undefined;
  }
  return result;
}

function mediaExamples(content: unknown): unknown[] {
  const media = jsonMedia(content);
  if (!media) return [];
  const out: unknown[] = [];
  if (media.example !== undefined) out.push(media.example);
  if (isRecord(media.examples)) {
    for (const example of Object.values(media.examples)) {
      if (isRecord(example) && example.value !== undefined) out.push(example.value);
    }
  }
  return out;
}

/** Media-type level examples (`content["application/json"].example` / `.examples[*].value`) of one operation. */
export function operationExamples(
  doc: OpenApiDoc,
  method: HttpMethod,
  path: string,
): OperationExamples {
  const op = operation(doc, method, path);
  const result: OperationExamples = {
    request: isRecord(op.requestBody) ? mediaExamples(op.requestBody.content) : [],
    responses: {},
  };
  if (isRecord(op.responses)) {
    for (const [status, response] of Object.entries(op.responses)) {
      result.responses[status] = isRecord(response) ? mediaExamples(response.content) : [];
    }
  }
  return result;
}

/**
 * A value assembled from the schema's own `example` keywords: the schema's `example` if it has
 * one, else an object of its properties' examples (optional properties without one are left
 * out), an array of one item example, or the first `enum` value. Undefined when a required part
 * has no example.
 */
export function schemaExample(schema: JsonSchema): unknown {
  return exampleOf(schema, new Set());
}

function exampleOf(schema: unknown, stack: Set<unknown>): unknown {
  if (!isRecord(schema) || stack.has(schema)) return undefined;
  if (schema.example !== undefined) return structuredClone(schema.example);
  stack.add(schema);
  try {
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
    for (const key of ["allOf", "oneOf", "anyOf"] as const) {
      const parts = schema[key];
      if (!Array.isArray(parts)) continue;
      const examples = parts.map((part) => exampleOf(part, stack));
      if (key === "allOf" && examples.every((e) => e === undefined || isRecord(e))) {
        const merged = Object.assign({}, ...examples.filter(isRecord));
        if (Object.keys(merged).length > 0) return merged;
      }
      const first = examples.find((e) => e !== undefined);
      if (first !== undefined) return first;
    }
    if (schema.type === "array") {
      const item = exampleOf(schema.items, stack);
      return item === undefined ? undefined : [item];
    }
    if (schema.type === "object" || isRecord(schema.properties)) {
      const required = Array.isArray(schema.required) ? schema.required : [];
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(
        isRecord(schema.properties) ? schema.properties : {},
      )) {
        const value = exampleOf(property, stack);
        if (value !== undefined) out[name] = value;
        else if (required.includes(name)) return undefined;
      }
      return out;
    }
    return undefined;
  } finally {
    stack.delete(schema);
  }
}

// ---------------------------------------------------------------------------------------------
// OpenAPI 3.0 Schema Object -> JSON Schema (draft-07, as ajv's default class reads it)

/** Formats the tooling checks. A format not listed here makes validation throw instead of passing silently. */
const FORMATS: Record<string, { type: "string" | "number"; validate: (v: never) => boolean }> = {
  // Used by the Key Manager spec (types/signature.yaml): 0x-prefixed hex bytes.
  hex: { type: "string", validate: (v: string) => /^0x([0-9a-fA-F]{2})*$/.test(v) },
  // Used by the Web3Signer spec: a decimal uint64 in a string.
  uint64: {
    type: "string",
    validate: (v: string) => /^(0|[1-9][0-9]{0,19})$/.test(v) && BigInt(v) < 2n ** 64n,
  },
  // OpenAPI 3.0 data type formats.
  int32: { type: "number", validate: (v: number) => Number.isInteger(v) && v === (v | 0) },
  int64: { type: "number", validate: (v: number) => Number.isInteger(v) },
  float: { type: "number", validate: () => true },
  double: { type: "number", validate: () => true },
  byte: {
    type: "string",
    validate: (v: string) =>
      /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(v),
  },
  binary: { type: "string", validate: () => true },
  password: { type: "string", validate: () => true },
  date: { type: "string", validate: (v: string) => isDate(v) },
  "date-time": {
    type: "string",
    validate: (v: string) => {
      const m = /^(\d{4}-\d{2}-\d{2})[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(v);
      return m?.[1] !== undefined && isDate(m[1]) && !Number.isNaN(Date.parse(v));
    },
  },
  uri: {
    type: "string",
    validate: (v: string) => /^[a-z][a-z0-9+.-]*:/i.test(v) && URL.canParse(v),
  },
  uuid: {
    type: "string",
    validate: (v: string) =>
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v),
  },
};

function isDate(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().startsWith(v);
}

/** OpenAPI-only keywords with no validation meaning. */
const DROPPED = new Set(["example", "xml", "externalDocs", "discriminator", "nullable"]);
const SUBSCHEMA = new Set(["items", "not", "additionalProperties"]);
const SUBSCHEMA_LIST = new Set(["allOf", "anyOf", "oneOf"]);

/** Each subschema of `schema`, in OpenAPI 3.0 Schema Object positions only. */
function subschemas(schema: Record<string, unknown>): unknown[] {
  const out: unknown[] = [];
  for (const [k, v] of Object.entries(schema)) {
    if (SUBSCHEMA.has(k)) out.push(v);
    else if (SUBSCHEMA_LIST.has(k) && Array.isArray(v)) out.push(...v);
    else if (k === "properties" && isRecord(v)) out.push(...Object.values(v));
  }
  return out.filter(isRecord);
}

/** Schemas reached again while still being walked: they become `definitions` entries. */
function cycleTargets(root: JsonSchema): Set<unknown> {
  const targets = new Set<unknown>();
  const onStack = new Set<unknown>();
  const finished = new Set<unknown>();
  const walk = (node: Record<string, unknown>): void => {
    if (finished.has(node)) return;
    if (onStack.has(node)) {
      targets.add(node);
      return;
    }
    onStack.add(node);
    for (const child of subschemas(node)) if (isRecord(child)) walk(child);
    onStack.delete(node);
    finished.add(node);
  };
  walk(root);
  return targets;
}

/**
 * Translate a resolved OpenAPI 3.0 Schema Object into JSON Schema for ajv:
 * - `nullable: true` with a `type` adds "null" to the type (and to `enum` if there is one);
 *   without a `type` it has no effect (OpenAPI 3.0.3 §4.7.25);
 * - boolean `exclusiveMinimum`/`exclusiveMaximum` become the draft-06+ numeric form;
 * - `example`, `xml`, `externalDocs`, `discriminator` and `x-*` are dropped (the `oneOf` a
 *   discriminator annotates is still validated);
 * - a `format` outside FORMATS throws, so no format is skipped silently;
 * - a recursive schema (cyclic object graph) becomes `{"$ref": "#/definitions/cN"}`.
 * Property names (`properties.example`, …) and `enum`/`default` values are copied untouched.
 */
export function toAjvSchema(schema: JsonSchema): JsonSchema {
  const targets = cycleTargets(schema);
  const names = new Map<unknown, string>();
  const definitions: Record<string, JsonSchema> = {};

  const convert = (node: unknown): unknown => {
    if (typeof node === "boolean") return node;
    if (!isRecord(node)) throw new Error(`not a schema: ${preview(node)}`);
    if (!targets.has(node)) return body(node);
    let name = names.get(node);
    if (name === undefined) {
      name = `c${names.size}`;
      names.set(node, name);
      definitions[name] = body(node);
    }
    return { $ref: `#/definitions/${name}` };
  };

  const body = (node: Record<string, unknown>): JsonSchema => {
    const out: JsonSchema = {};
    const nullable = node.nullable === true && node.type !== undefined;
    for (const [k, v] of Object.entries(node)) {
      if (DROPPED.has(k) || k.startsWith("x-")) continue;
      if (k === "$ref")
        throw new Error(`unresolved $ref ${String(v)}: load the spec with loadOpenApi`);
      if (SUBSCHEMA.has(k)) out[k] = convert(v);
      else if (SUBSCHEMA_LIST.has(k)) {
        if (!Array.isArray(v)) throw new Error(`"${k}" must be an array of schemas`);
        out[k] = v.map(convert);
      } else if (k === "properties") {
        if (!isRecord(v)) throw new Error(`"properties" must be an object`);
        out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, convert(s)]));
      } else if (k === "format") {
        if (typeof v !== "string" || !Object.hasOwn(FORMATS, v)) {
          throw new Error(
            `format ${preview(v)} is unknown: add it to FORMATS in test/support/openapi.ts`,
          );
        }
        out[k] = v;
      } else if (k === "exclusiveMinimum" || k === "exclusiveMaximum") {
        if (typeof v === "number") out[k] = v;
        else if (v === true) {
          const bound = k === "exclusiveMinimum" ? "minimum" : "maximum";
          if (typeof node[bound] !== "number") throw new Error(`"${k}: true" without "${bound}"`);
          out[k] = node[bound];
        }
      } else out[k] = v;
    }
    if (node.exclusiveMinimum === true) delete out.minimum;
    if (node.exclusiveMaximum === true) delete out.maximum;
    if (nullable) {
      const types = Array.isArray(node.type) ? node.type : [node.type];
      out.type = types.includes("null") ? types : [...types, "null"];
      if (Array.isArray(node.enum) && !node.enum.includes(null)) out.enum = [...node.enum, null];
    }
    return out;
  };

  const root = convert(schema);
  if (!isRecord(root)) throw new Error("schema root must be an object");
  return names.size === 0 ? root : { ...root, definitions };
}

// ---------------------------------------------------------------------------------------------
// Validation

const ajv = new Ajv({ strict: false, allErrors: true, verbose: true, validateFormats: true });
for (const [name, format] of Object.entries(FORMATS)) {
  if (format.type === "number") {
    ajv.addFormat(name, { type: "number", validate: format.validate as (v: number) => boolean });
  } else {
    ajv.addFormat(name, { type: "string", validate: format.validate as (v: string) => boolean });
  }
}
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

function preview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function formatError(error: ErrorObject): string {
  const at = error.instancePath === "" ? "(body)" : error.instancePath;
  let text = `${at}: ${error.message ?? error.keyword}`;
  const params: Record<string, unknown> = error.params;
  if (error.keyword === "enum" && Array.isArray(params.allowedValues)) {
    text += ` ${params.allowedValues.map((v) => JSON.stringify(v)).join(" | ")}`;
  }
  if (error.keyword === "additionalProperties") text += ` (${String(params.additionalProperty)})`;
  if (error.keyword !== "required" && error.keyword !== "additionalProperties") {
    text += `, got ${preview(error.data)}`;
  }
  return text;
}

/** Validate `value` against a resolved OpenAPI 3.0 schema; human-readable errors, empty when valid. */
export function validateAgainst(schema: JsonSchema, value: unknown): string[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(toAjvSchema(schema));
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map(formatError);
}

/** The documented response for `status`: the exact code, then its range ("4XX"), then "default". */
function responseKey(
  responses: Record<string, unknown>,
  status: number | string,
): string | undefined {
  const code = String(status);
  const range = `${code.charAt(0)}XX`;
  return (
    Object.keys(responses).find((k) => k === code) ??
    Object.keys(responses).find((k) => k.toUpperCase() === range) ??
    (Object.hasOwn(responses, "default") ? "default" : undefined)
  );
}

function isEmptyBody(body: unknown): boolean {
  return body === undefined || body === "";
}

/** Errors of a response `body` sent with `status` by `method path` (empty = conforms). */
export function expectValidResponse(
  doc: OpenApiDoc,
  method: HttpMethod,
  path: string,
  status: number | string,
  body: unknown,
): string[] {
  const { responses } = operationSchemas(doc, method, path);
  const key = responseKey(responses, status);
  const where = `${method.toUpperCase()} ${path} ${status}`;
  if (key === undefined) {
    return [`${where}: status not documented (documented: ${Object.keys(responses).join(", ")})`];
  }
  const schema = responses[key];
  if (!schema) {
    return isEmptyBody(body)
      ? []
      : [`${where}: documented without a JSON body, got ${preview(body)}`];
  }
  if (isEmptyBody(body)) return [`${where}: a JSON body is documented but none was sent`];
  return validateAgainst(schema, body).map((e) => `${where} ${e}`);
}

/** Errors of a request `body` for `method path` (empty = conforms). `undefined` = no body. */
export function expectValidRequest(
  doc: OpenApiDoc,
  method: HttpMethod,
  path: string,
  body: unknown,
): string[] {
  const { requestBody, requestBodyRequired } = operationSchemas(doc, method, path);
  const where = `${method.toUpperCase()} ${path} request`;
  if (body === undefined) return requestBodyRequired ? [`${where}: body is required`] : [];
  if (!requestBody) return [`${where}: no JSON request body documented, got ${preview(body)}`];
  return validateAgainst(requestBody, body).map((e) => `${where} ${e}`);
}
