import type { TSchema } from "@sinclair/typebox";
import { isScalarList, kindOf } from "./walk";

export type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

/**
 * Turns the text of an env var or flag into a value of the option's type. Lists take a JSON
 * array or comma-separated items; structured options (records, lists of objects) take JSON.
 * Range and enum checks happen later, once, on the merged configuration.
 */
export function parseTextValue(schema: TSchema, text: string): Parsed {
  const kind = kindOf(schema);
  if (kind === "integer") {
    const trimmed = text.trim();
    if (!/^-?\d+$/.test(trimmed))
      return { ok: false, message: `expected an integer, got ${quote(text)}` };
    return { ok: true, value: Number(trimmed) };
  }
  if (kind === "boolean") {
    const lowered = text.trim().toLowerCase();
    if (lowered === "true" || lowered === "1") return { ok: true, value: true };
    if (lowered === "false" || lowered === "0") return { ok: true, value: false };
    return { ok: false, message: `expected true or false, got ${quote(text)}` };
  }
  if (isScalarList(schema)) return parseList(schema, text);
  if (kind === "string" || kind === "union" || kind === "literal") return { ok: true, value: text };
  return parseJson(text);
}

function parseList(schema: TSchema, text: string): Parsed {
  const trimmed = text.trim();
  if (trimmed === "null" && kindOf(schema) === "union") return { ok: true, value: null };
  if (trimmed.startsWith("[")) return parseJson(trimmed);
  const items = trimmed
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
  return { ok: true, value: items };
}

function parseJson(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, message: "expected JSON" };
  }
}

function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
