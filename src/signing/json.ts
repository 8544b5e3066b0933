/**
 * JSON as validator clients send it (beacon-API / Web3Signer encoding) → SSZ values.
 *
 * The TypeBox schema of a payload is derived from its SSZ type (`jsonSchemaOf`), so the two cannot
 * drift: uint64 (and uint256) as a decimal string or a safe JSON integer, booleans as JSON
 * booleans, byte vectors as 0x-hex of the exact length, byte lists as 0x-hex within their limit,
 * bitlists/bitvectors as their SSZ serialization in 0x-hex, lists within their limits. Gloas'
 * progressive containers and lists (EIP-7495, EIP-7916) read like their plain counterparts.
 * Unknown extra fields are allowed everywhere. `decodeJson` checks a value against the schema,
 * then converts it; every failure is an `invalid_request` whose message starts with the field path.
 */
import {
  BitListType,
  BitVectorType,
  BooleanType,
  ByteListType,
  ByteVectorType,
  ContainerType,
  ListBasicType,
  ListCompositeType,
  ProgressiveBitListType,
  ProgressiveByteListType,
  ProgressiveContainerType,
  ProgressiveListBasicType,
  ProgressiveListCompositeType,
  type Type as SszType,
  UintBigintType,
  type ValueOf,
  VectorCompositeType,
} from "@chainsafe/ssz";
import { type TSchema, Type } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { SigilError } from "../errors";
import { counted } from "../wire/count";
import { fromHex } from "../wire/hex";

export const MAX_UINT64 = 2n ** 64n - 1n;

/** What a JSON leaf must look like, kept on its schema so an error can say it precisely. */
type Expectation =
  | { readonly kind: "uint64" }
  | { readonly kind: "uint256" }
  | { readonly kind: "boolean" }
  | { readonly kind: "hex"; readonly bytes: number }
  | { readonly kind: "bytelist"; readonly limit: number }
  | { readonly kind: "bitlist"; readonly limit: number }
  | { readonly kind: "bitvector"; readonly length: number };

const EXPECT = "x-sigil-expect";

export function invalidRequest(message: string): SigilError {
  return new SigilError("invalid_request", message);
}

// ---- Schemas ----

const schemaCache = new Map<SszType<unknown>, TSchema>();

/** The TypeBox schema of the JSON form of an SSZ type (as in the beacon API). */
export function jsonSchemaOf(type: SszType<unknown>): TSchema {
  let schema = schemaCache.get(type);
  if (!schema) {
    schema = buildSchema(type);
    schemaCache.set(type, schema);
  }
  return schema;
}

function hexSchema(bytes: number): TSchema {
  const expect: Expectation = { kind: "hex", bytes };
  return Type.String({ pattern: `^0x[0-9a-fA-F]{${2 * bytes}}$`, [EXPECT]: expect });
}

/** A progressive list without a runtime limit reports the largest safe integer as its limit. */
const UNLIMITED = Number.MAX_SAFE_INTEGER;

function buildSchema(type: SszType<unknown>): TSchema {
  if (type instanceof UintBigintType) {
    const wide = type.byteLength === 32;
    const expect: Expectation = { kind: wide ? "uint256" : "uint64" };
    return Type.Union(
      [
        Type.String({ pattern: wide ? "^[0-9]{1,78}$" : "^[0-9]{1,20}$" }),
        Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
      ],
      { [EXPECT]: expect },
    );
  }
  if (type instanceof BooleanType) {
    const expect: Expectation = { kind: "boolean" };
    return Type.Boolean({ [EXPECT]: expect });
  }
  if (type instanceof ByteVectorType) return hexSchema(type.lengthBytes);
  if (type instanceof ByteListType || type instanceof ProgressiveByteListType) {
    // No length in the pattern: a transaction may be megabytes; `convert` checks the limit.
    const expect: Expectation = { kind: "bytelist", limit: type.limitBytes };
    return Type.String({ pattern: "^0x(?:[0-9a-fA-F]{2})*$", [EXPECT]: expect });
  }
  if (type instanceof BitListType || type instanceof ProgressiveBitListType) {
    const expect: Expectation = { kind: "bitlist", limit: type.limitBits };
    const maxBytes = Math.floor(type.limitBits / 8) + 1;
    return Type.String({ pattern: `^0x(?:[0-9a-fA-F]{2}){1,${maxBytes}}$`, [EXPECT]: expect });
  }
  if (type instanceof BitVectorType) {
    const expect: Expectation = { kind: "bitvector", length: type.lengthBits };
    const bytes = Math.ceil(type.lengthBits / 8);
    return Type.String({ pattern: `^0x[0-9a-fA-F]{${2 * bytes}}$`, [EXPECT]: expect });
  }
  if (type instanceof ContainerType || type instanceof ProgressiveContainerType) {
    const fields = type.fields as Record<string, SszType<unknown>>;
    const properties: Record<string, TSchema> = {};
    for (const [name, fieldType] of Object.entries(fields)) {
      properties[name] = jsonSchemaOf(fieldType);
    }
    return Type.Object(properties);
  }
  if (isList(type)) {
    const element = jsonSchemaOf(type.elementType);
    return type.limit === UNLIMITED
      ? Type.Array(element)
      : Type.Array(element, { maxItems: type.limit });
  }
  if (type instanceof VectorCompositeType) {
    return Type.Array(jsonSchemaOf(type.elementType), {
      minItems: type.length,
      maxItems: type.length,
    });
  }
  throw new Error(`no JSON schema for SSZ type ${type.typeName}`);
}

type AnyList =
  | ListCompositeType<never>
  | ListBasicType<never>
  | ProgressiveListCompositeType<never>
  | ProgressiveListBasicType<never>;

function isList(type: SszType<unknown>): type is AnyList {
  return (
    type instanceof ListCompositeType ||
    type instanceof ListBasicType ||
    type instanceof ProgressiveListCompositeType ||
    type instanceof ProgressiveListBasicType
  );
}

// ---- Decoding ----

const checkCache = new Map<SszType<unknown>, TypeCheck<TSchema>>();

function checkerOf(type: SszType<unknown>): TypeCheck<TSchema> {
  let check = checkCache.get(type);
  if (!check) {
    check = TypeCompiler.Compile(jsonSchemaOf(type));
    checkCache.set(type, check);
  }
  return check;
}

/**
 * Check `json` against the JSON form of `type` and convert it to an SSZ value.
 * `path` names the value in error messages (e.g. `attestation`).
 */
export function decodeJson<T extends SszType<unknown>>(
  type: T,
  json: unknown,
  path: string,
): ValueOf<T> {
  const check = checkerOf(type);
  if (!check.Check(json)) {
    const first = check.Errors(json).First();
    throw invalidRequest(first ? describeError(first, path) : `${path}: invalid value`);
  }
  return convert(type, json, path) as ValueOf<T>;
}

/** Convert a value already known to match the schema; checks what a schema cannot say. */
function convert(type: SszType<unknown>, json: unknown, path: string): unknown {
  if (type instanceof UintBigintType) return toUint(type, json as string | number, path);
  if (type instanceof BooleanType) return json;
  if (type instanceof ByteVectorType) return fromHex(json as string);
  if (type instanceof ByteListType || type instanceof ProgressiveByteListType) {
    return toByteList(type.limitBytes, json as string, path);
  }
  if (type instanceof BitListType || type instanceof ProgressiveBitListType) {
    return toBitList(type, json as string, path);
  }
  if (type instanceof BitVectorType) return toBitVector(type, json as string, path);
  if (type instanceof ContainerType || type instanceof ProgressiveContainerType) {
    const object = json as Record<string, unknown>;
    const value: Record<string, unknown> = {};
    for (const [name, fieldType] of fieldsOf(type)) {
      value[name] = convert(fieldType, object[name], `${path}.${name}`);
    }
    return value;
  }
  if (isList(type) || type instanceof VectorCompositeType) {
    const elementType = type.elementType as SszType<unknown>;
    return (json as unknown[]).map((item, i) => convert(elementType, item, `${path}[${i}]`));
  }
  throw new Error(`no JSON decoder for SSZ type ${type.typeName}`);
}

/** Each container's fields, listed once (Object.entries per request showed in profiles). */
const containerFields = new WeakMap<object, [string, SszType<unknown>][]>();

function fieldsOf(type: { fields: object }): [string, SszType<unknown>][] {
  let fields = containerFields.get(type);
  if (!fields) {
    fields = Object.entries(type.fields as Record<string, SszType<unknown>>);
    containerFields.set(type, fields);
  }
  return fields;
}

function toUint(type: UintBigintType, json: string | number, path: string): bigint {
  const value = BigInt(json);
  if (type.byteLength === 32) {
    if (value >= 2n ** 256n) {
      throw invalidRequest(`${path}: expected a uint256, got a number above 2^256-1`);
    }
    return value;
  }
  if (value > MAX_UINT64) {
    throw invalidRequest(`${path}: expected a uint64, got ${json}, which is above 2^64-1`);
  }
  return value;
}

function toByteList(limit: number, hex: string, path: string): Uint8Array {
  const length = (hex.length - 2) / 2;
  if (length > limit) {
    throw invalidRequest(`${path}: ${length} bytes exceed the limit of ${limit} bytes`);
  }
  return fromHex(hex);
}

function toBitList(type: BitListType | ProgressiveBitListType, hex: string, path: string): unknown {
  const bytes = fromHex(hex);
  const last = bytes[bytes.length - 1] ?? 0;
  if (last === 0) {
    throw invalidRequest(
      `${path}: expected an SSZ bitlist, but its last byte is 0x00 and so carries no length delimiter bit`,
    );
  }
  const bitLength = 8 * (bytes.length - 1) + Math.floor(Math.log2(last));
  if (bitLength > type.limitBits) {
    throw invalidRequest(
      `${path}: bitlist of ${bitLength} bits exceeds the limit of ${type.limitBits} bits`,
    );
  }
  return type.deserialize(bytes);
}

function toBitVector(type: BitVectorType, hex: string, path: string): unknown {
  try {
    return type.deserialize(fromHex(hex));
  } catch {
    throw invalidRequest(
      `${path}: expected a bitvector of ${type.lengthBits} bits, but bits past the length are set`,
    );
  }
}

// ---- Error messages ----

/** `/body/attestations/3/data` under `beacon_block.block` → `beacon_block.block.body.attestations[3].data`. */
export function joinPath(root: string, pointer: string): string {
  let path = root;
  for (const raw of pointer.split("/").slice(1)) {
    const segment = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    path += /^[0-9]+$/.test(segment) ? `[${segment}]` : path === "" ? segment : `.${segment}`;
  }
  return path;
}

function describeError(error: ValueError, root: string): string {
  const path = joinPath(root, error.path);
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${path}: required`;
  const expect = (error.schema as Record<string, unknown>)[EXPECT] as Expectation | undefined;
  if (expect) return `${path}: ${explain(expect, error.value)}`;
  if (error.type === ValueErrorType.Object)
    return `${path}: expected an object, got ${kindOf(error.value)}`;
  if (error.type === ValueErrorType.Array)
    return `${path}: expected an array, got ${kindOf(error.value)}`;
  if (error.type === ValueErrorType.ArrayMaxItems || error.type === ValueErrorType.ArrayMinItems) {
    const schema = error.schema as { minItems?: number; maxItems?: number };
    const count = Array.isArray(error.value) ? error.value.length : 0;
    const wanted =
      schema.minItems === schema.maxItems
        ? `exactly ${schema.maxItems}`
        : `at most ${schema.maxItems}`;
    return `${path}: expected ${wanted} items, got ${count}`;
  }
  return `${path}: ${error.message}`;
}

/** A client's value in words, never all of it: it may be a megabyte long or 100k levels deep. */
export function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${quote(value)}`;
  if (typeof value === "number") return `the number ${value}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
}

function explain(expect: Expectation, value: unknown): string {
  switch (expect.kind) {
    case "uint64":
      return explainUint64(value);
    case "uint256":
      return typeof value === "string"
        ? `expected a uint256 as a decimal string, got ${quote(value)}`
        : explainUint64(value).replace("uint64", "uint256");
    case "boolean":
      return `expected true or false, got ${kindOf(value)}`;
    case "bytelist":
      return `expected 0x-prefixed hex of at most ${expect.limit} bytes, got ${explainHex(value)}`;
    case "hex":
      return `expected 0x-prefixed hex of ${counted(expect.bytes, "byte")}, got ${explainHex(value)}`;
    case "bitlist":
      return `expected an SSZ bitlist of at most ${expect.limit} bits as 0x-prefixed hex, got ${explainHex(value)}`;
    case "bitvector":
      return `expected an SSZ bitvector of ${counted(expect.length, "bit")} (${counted(Math.ceil(expect.length / 8), "byte")}) as 0x-prefixed hex, got ${explainHex(value)}`;
  }
}

function explainHex(value: unknown): string {
  if (typeof value !== "string") return kindOf(value);
  if (/^0x(?:[0-9a-fA-F]{2})*$/.test(value)) return counted((value.length - 2) / 2, "byte");
  return `${quote(value)}, which is not 0x-prefixed hex of whole bytes`;
}

function explainUint64(value: unknown): string {
  if (typeof value === "string") {
    if (/^[0-9]+$/.test(value)) {
      const shown = value.length > 40 ? `a number of ${value.length} digits` : value;
      return `expected a uint64, got ${shown}, which is above 2^64-1`;
    }
    return `expected a uint64 as a decimal string, got ${quote(value)}`;
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value) || !Number.isInteger(value)) {
      return `expected a uint64, got the non-integer number ${value}`;
    }
    if (value < 0) return `expected a uint64, got the negative number ${value}`;
    return `expected a uint64, got the JSON number ${value}, which is above 2^53-1 and may have lost precision: send uint64 as a decimal string`;
  }
  return `expected a uint64 as a decimal string, got ${kindOf(value)}`;
}
