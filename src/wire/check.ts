import type { Static, TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";

/**
 * Checks a value against its wire shape (a TypeBox schema) and words the first problem the way
 * every sigil error names one: the JSON path, then what is wrong (`rules[0].effect: must be
 * "allow" or "deny"`). Leaf module: config, state, auth, the routes and the CLI all check with
 * it, so one shape reads the same wherever it is refused.
 *
 * A schema node words its own problems with annotations:
 * - `expected`: what the value must be (the annotation config/schema.ts uses too): a wrong value
 *   reads `must be <expected>`, a missing one `is required (<expected>)`.
 * - `problem`: the whole wording of a wrong value; `{value}` in it stands for the value itself,
 *   quoted and cut short (never on a node that may hold a secret).
 * A missing property reads `is required`, an unknown one `unknown field (fields: …)`; a node with
 * neither annotation gets TypeBox's words.
 */
export type Checked<T> = { ok: true; value: T } | { ok: false; where: string; problem: string };

export function checkShape<S extends TSchema>(schema: S, value: unknown): Checked<Static<S>> {
  if (Value.Check(schema, value)) return { ok: true, value: value as Static<S> };
  const first = Value.Errors(schema, value).First();
  if (!first) return { ok: false, where: "", problem: "does not have the expected shape" };
  return { ok: false, where: jsonPath(first.path), problem: wordProblem(first) };
}

/**
 * `checkShape` compiled once, for a shape checked many times in a row (every validator of a large
 * interchange): the same verdicts and words, at the speed of generated code.
 */
export function compileShape<S extends TSchema>(schema: S): (value: unknown) => Checked<Static<S>> {
  const compiled = TypeCompiler.Compile(schema);
  return (value) => {
    if (compiled.Check(value)) return { ok: true, value: value as Static<S> };
    const first = compiled.Errors(value).First();
    if (!first) return { ok: false, where: "", problem: "does not have the expected shape" };
    return { ok: false, where: jsonPath(first.path), problem: wordProblem(first) };
  };
}

/** The words of one TypeBox error, from the annotations of the schema node it is about. */
export function wordProblem(error: ValueError): string {
  const node = error.schema as TSchema & { expected?: unknown; problem?: unknown };
  const expected = typeof node.expected === "string" ? node.expected : undefined;
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return `unknown field (fields: ${Object.keys(node.properties ?? {}).join(", ")})`;
    case ValueErrorType.ObjectRequiredProperty:
      return expected === undefined ? "is required" : `is required (${expected})`;
  }
  if (typeof node.problem === "string") {
    const problem = node.problem;
    return problem.includes("{value}")
      ? problem.replaceAll("{value}", quoted(error.value))
      : problem;
  }
  if (expected !== undefined) return `must be ${expected}`;
  return error.message.toLowerCase();
}

/**
 * A client's value in a message: a string quoted and cut short (it may be a megabyte long), a
 * number, boolean or null as it is, a list or an object only named (it may be nested a million
 * deep).
 */
export function quoted(value: unknown): string {
  if (typeof value === "string")
    return JSON.stringify(value.length > 64 ? `${value.slice(0, 61)}...` : value);
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object" && value !== null) return "an object";
  const text = String(value);
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

/** `/rules/0/effect` → `rules[0].effect`. */
export function jsonPath(pointer: string): string {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    out += /^\d+$/.test(part) ? `[${part}]` : out === "" ? part : `.${part}`;
  }
  return out;
}

/** "where: problem", or the problem alone for the value itself. */
export function describeProblem(checked: { where: string; problem: string }): string {
  return checked.where === "" ? checked.problem : `${checked.where}: ${checked.problem}`;
}

/** Joins a path inside a checked value to where that value sits (`rules[0]` + `effect`). */
export function joinPath(outer: string, inner: string): string {
  if (inner === "") return outer;
  if (outer === "" || inner.startsWith("[")) return `${outer}${inner}`;
  return `${outer}.${inner}`;
}
