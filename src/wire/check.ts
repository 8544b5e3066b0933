import type { Static, TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

/**
 * Checks a value against its wire shape (a TypeBox schema) and words the first problem the way
 * every sigil error names one: the JSON path, then what is wrong (`rules[0].effect: must be
 * "allow" or "deny"`). A schema node may carry its own wording in `problem`; otherwise TypeBox's
 * is used. Leaf module: config, state, auth, the routes and the CLI all check with it.
 */
export type Checked<T> = { ok: true; value: T } | { ok: false; where: string; problem: string };

export function checkShape<S extends TSchema>(schema: S, value: unknown): Checked<Static<S>> {
  if (Value.Check(schema, value)) return { ok: true, value: value as Static<S> };
  const first = Value.Errors(schema, value).First();
  if (!first) return { ok: false, where: "", problem: "does not have the expected shape" };
  const own = (first.schema as { problem?: unknown }).problem;
  return {
    ok: false,
    where: jsonPath(first.path),
    problem: typeof own === "string" ? own : first.message.toLowerCase(),
  };
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
