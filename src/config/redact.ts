import type { TSchema } from "@sinclair/typebox";
import { childSchema, isPlainObject } from "./walk";

export const REDACTED = "<redacted>";

/**
 * A copy of the configuration that is safe to print: values marked `secret` in the schema are
 * replaced; `env:VAR` references stay, since they name a variable and reveal nothing.
 */
export function redactConfig(schema: TSchema, value: unknown): unknown {
  if (typeof value === "string") return redactString(schema.secret, value);
  if (Array.isArray(value)) {
    return value.map((item, i) => redactConfig(childSchema(schema, String(i)) ?? schema, item));
  }
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => {
        const child = childSchema(schema, key);
        return [key, child ? redactConfig(child, item) : item];
      }),
    );
  }
  return value;
}

function redactString(kind: unknown, value: string): string {
  if (!kind || value.startsWith("env:")) return value;
  if (kind === "url") return redactUrlPassword(value);
  return REDACTED;
}

export function redactUrlPassword(value: string): string {
  try {
    const url = new URL(value);
    if (!url.password) return value;
    url.password = "***";
    return url.toString();
  } catch {
    return REDACTED;
  }
}
