import { Kind, OptionalKind, type TSchema } from "@sinclair/typebox";
import { isJsonObject } from "../wire/json";

/** Schema-driven helpers shared by defaults, merging, env, flags, redaction and docs. */

export type Path = readonly string[];

export type NodeKind =
  | "object"
  | "record"
  | "array"
  | "union"
  | "integer"
  | "number"
  | "boolean"
  | "string"
  | "literal"
  | "null"
  | "unknown";

export function kindOf(schema: TSchema): NodeKind {
  switch (schema[Kind]) {
    case "Object":
      return "object";
    case "Record":
      return "record";
    case "Array":
      return "array";
    case "Union":
      return "union";
    case "Integer":
      return "integer";
    case "Number":
      return "number";
    case "Boolean":
      return "boolean";
    case "String":
      return "string";
    case "Literal":
      return "literal";
    case "Null":
      return "null";
    default:
      return "unknown";
  }
}

export function isOptional(schema: TSchema): boolean {
  return schema[OptionalKind] === "Optional";
}

export function properties(schema: TSchema): Record<string, TSchema> {
  return kindOf(schema) === "object" ? (schema.properties as Record<string, TSchema>) : {};
}

/** The schema that describes `value[key]` under `schema`, if any. */
export function childSchema(schema: TSchema, key: string): TSchema | undefined {
  switch (kindOf(schema)) {
    case "object":
      return properties(schema)[key];
    case "record":
      return Object.values(schema.patternProperties as Record<string, TSchema>)[0];
    case "array":
      return /^\d+$/.test(key) ? (schema.items as TSchema) : undefined;
    default:
      return undefined;
  }
}

export function schemaAt(schema: TSchema, path: Path): TSchema | undefined {
  let node: TSchema | undefined = schema;
  for (const key of path) {
    if (!node) return undefined;
    node = childSchema(node, key);
  }
  return node;
}

/** Literal values of an enumeration (a union of string literals), else undefined. */
export function enumValues(schema: TSchema): string[] | undefined {
  if (kindOf(schema) !== "union") return undefined;
  const members = schema.anyOf as TSchema[];
  if (!members.every((m) => kindOf(m) === "literal")) return undefined;
  return members.map((m) => String(m.const));
}

/** A list of scalars, optionally nullable: settable from one env var or flag as a list. */
export function isScalarList(schema: TSchema): boolean {
  const list = kindOf(schema) === "union" ? (schema.anyOf as TSchema[]).find(isArray) : schema;
  return list !== undefined && isArray(list) && isScalar(list.items as TSchema);
}

function isArray(schema: TSchema): boolean {
  return kindOf(schema) === "array";
}

export function isScalar(schema: TSchema): boolean {
  return (
    ["integer", "number", "boolean", "string", "literal"].includes(kindOf(schema)) ||
    enumValues(schema) !== undefined
  );
}

export interface SchemaNode {
  path: Path;
  schema: TSchema;
}

/**
 * Every node reachable through fixed object properties that holds a value on its own:
 * scalars, lists and anything that is not a fixed object (records, lists of objects).
 */
export function* settableNodes(schema: TSchema, path: Path = []): Generator<SchemaNode> {
  for (const [key, child] of Object.entries(properties(schema))) {
    const childPath = [...path, key];
    if (kindOf(child) === "object") yield* settableNodes(child, childPath);
    else yield { path: childPath, schema: child };
  }
}

export function pathText(path: Path): string {
  return path.reduce<string>(
    (text, key) => (/^\d+$/.test(key) ? `${text}[${key}]` : text ? `${text}.${key}` : key),
    "",
  );
}

export type Plain = Record<string, unknown>;

/** A mapping (not a list, not null): the one test of wire/json, under the name config uses. */
export const isPlainObject: (value: unknown) => value is Plain = isJsonObject;

/**
 * Fills defaults: a missing property takes its `default`; a missing required object is created
 * so its own defaults apply; present objects (also optional ones, list items and record
 * values) get their inner defaults.
 */
export function withDefaults(schema: TSchema, value: unknown): unknown {
  const kind = kindOf(schema);
  if (kind === "object") {
    if (value !== undefined && !isPlainObject(value)) return value;
    const out: Plain = { ...(value ?? {}) };
    for (const [key, child] of Object.entries(properties(schema))) {
      if (out[key] === undefined && "default" in child) out[key] = structuredClone(child.default);
      else if (out[key] !== undefined || (kindOf(child) === "object" && !isOptional(child))) {
        const filled = withDefaults(child, out[key]);
        if (filled !== undefined) out[key] = filled;
      }
    }
    return out;
  }
  if (kind === "array" && Array.isArray(value)) {
    return value.map((item) => withDefaults(schema.items as TSchema, item));
  }
  if (kind === "record" && isPlainObject(value)) {
    const item = childSchema(schema, "") as TSchema;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withDefaults(item, v)]));
  }
  return value;
}

/** Layers merge per key through fixed objects; any other value (list, record, scalar) replaces. */
export function mergeLayer(schema: TSchema, base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (kindOf(schema) !== "object" || !isPlainObject(base) || !isPlainObject(override)) {
    return override;
  }
  const out: Plain = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const child = childSchema(schema, key);
    out[key] = child ? mergeLayer(child, base[key], value) : value;
  }
  return out;
}

/** Paths of every value set in `value`, descending through fixed objects only. */
export function* setPaths(schema: TSchema, value: unknown, path: Path = []): Generator<Path> {
  if (kindOf(schema) !== "object" || !isPlainObject(value)) {
    yield path;
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    const childSchemaNode = childSchema(schema, key);
    if (childSchemaNode) yield* setPaths(childSchemaNode, child, [...path, key]);
    else yield [...path, key];
  }
}

/** Keys in `value` that the schema does not know, with their paths. */
export function* unknownKeys(schema: TSchema, value: unknown, path: Path = []): Generator<Path> {
  const kind = kindOf(schema);
  if (kind === "object" && isPlainObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      const childNode = childSchema(schema, key);
      if (childNode) yield* unknownKeys(childNode, child, [...path, key]);
      else yield [...path, key];
    }
  } else if (kind === "record" && isPlainObject(value)) {
    const item = childSchema(schema, "") as TSchema;
    for (const [key, child] of Object.entries(value))
      yield* unknownKeys(item, child, [...path, key]);
  } else if (kind === "array" && Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      yield* unknownKeys(schema.items as TSchema, item, [...path, String(i)]);
    }
  } else if (kind === "union") {
    const objectMember = (schema.anyOf as TSchema[]).find((m) => kindOf(m) !== "null");
    if (objectMember && value !== null) yield* unknownKeys(objectMember, value, path);
  }
}
