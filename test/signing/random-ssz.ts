/**
 * Seeded random JSON payloads from Lodestar's own SSZ types, for the signing-root oracles: the
 * mainnet-preset oracle test (oracle.test.ts) and the minimal-preset child process
 * (lodestar-minimal.ts). Imports nothing from Lodestar, so the child process keeps the preset its
 * environment chose.
 */
import { toHex } from "./lodestar";

export type Json = Record<string, unknown>;
export const obj = (value: unknown): Json => value as Json;

/** mulberry32: the same sequence for the same seed, so a failing case can be replayed. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  }
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
  /** A uint of `bits` bits, biased towards the edges (0, 1, max) and small values. */
  uint(bits: number): bigint {
    const max = (1n << BigInt(bits)) - 1n;
    const r = this.next();
    if (r < 0.05) return 0n;
    if (r < 0.1) return max;
    if (r < 0.4) return BigInt(this.int(1000));
    let value = 0n;
    for (const byte of this.bytes(Math.ceil(bits / 8))) value = (value << 8n) | BigInt(byte);
    return value & max;
  }
}

/** The parts of a Lodestar SSZ type this generator looks at. */
interface Introspect {
  constructor: { name: string };
  byteLength?: number;
  lengthBytes?: number;
  limitBytes?: number;
  limitBits?: number;
  lengthBits?: number;
  limit?: number;
  length?: number;
  elementType?: Introspect;
  fieldsEntries?: { jsonKey: string; fieldType: Introspect }[];
}

/** A Lodestar SSZ type, seen through the methods the oracles call. */
export interface OracleType {
  hashTreeRoot(value: unknown): Uint8Array;
  fromJson(json: unknown): unknown;
  toJson(value: unknown): unknown;
}

export const oracle = (type: unknown): OracleType => type as OracleType;

/** What each oracle chooses differently: how large its random values get. */
export interface RandomRules {
  /** A uint's decimal string; `kind` is Lodestar's UintNumberType or UintBigintType. */
  uint(rng: Rng, kind: string, byteLength: number): string;
  /** A bitlist's length, given its limit. */
  bitlistLength(rng: Rng, limitBits: number): number;
  /** The most elements a random list gets (below its limit). */
  readonly maxListElements: number;
}

function bitsHex(rng: Rng, bitLength: number, delimiter: boolean): string {
  const total = delimiter ? bitLength + 1 : bitLength;
  const bytes = new Uint8Array(Math.max(1, Math.ceil(total / 8)));
  for (let i = 0; i < bitLength; i++) {
    if (rng.chance(0.5)) bytes[i >> 3] = (bytes[i >> 3] ?? 0) | (1 << (i & 7));
  }
  if (delimiter) bytes[bitLength >> 3] = (bytes[bitLength >> 3] ?? 0) | (1 << (bitLength & 7));
  return toHex(bytes);
}

function randomJson(type: Introspect, rng: Rng, rules: RandomRules): unknown {
  const kind = type.constructor.name;
  if (type.fieldsEntries) {
    const object: Json = {};
    for (const { jsonKey, fieldType } of type.fieldsEntries) {
      object[jsonKey] = randomJson(fieldType, rng, rules);
    }
    return object;
  }
  if (kind === "UintNumberType" || kind === "UintBigintType") {
    return rules.uint(rng, kind, type.byteLength ?? 8);
  }
  if (kind === "BooleanType") return rng.chance(0.5);
  if (type.limitBits !== undefined) {
    return bitsHex(rng, rules.bitlistLength(rng, type.limitBits), true);
  }
  if (type.lengthBits !== undefined) return bitsHex(rng, type.lengthBits, false);
  if (type.lengthBytes !== undefined) return toHex(rng.bytes(type.lengthBytes));
  if (type.limitBytes !== undefined) {
    return toHex(rng.bytes(rng.int(Math.min(type.limitBytes, 40) + 1)));
  }
  if (type.elementType && type.limit !== undefined) {
    const count = rng.int(Math.min(type.limit, rules.maxListElements) + 1);
    const element = type.elementType;
    return Array.from({ length: count }, () => randomJson(element, rng, rules));
  }
  if (type.elementType && type.length !== undefined) {
    const element = type.elementType;
    return Array.from({ length: type.length }, () => randomJson(element, rng, rules));
  }
  throw new Error(`randomJson: unsupported Lodestar type ${kind}`);
}

/** Lodestar's canonical JSON (decimal strings, 0x-hex) for a random value of `type`, after `adjust`. */
export function randomPayload(
  type: unknown,
  rng: Rng,
  rules: RandomRules,
  adjust?: (json: Json) => void,
): Json {
  const json = randomJson(type as Introspect, rng, rules) as Json;
  adjust?.(json);
  // Round-trip through Lodestar so the JSON is exactly what a Lodestar client would send.
  return oracle(type).toJson(oracle(type).fromJson(json)) as Json;
}
