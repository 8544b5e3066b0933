import { isJsonObject } from "../../wire/json";

/** Aligned columns, two spaces apart, no trailing blanks. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** `key  value` lines with the values aligned. */
export function formatFields(fields: readonly (readonly [string, string])[]): string {
  const width = Math.max(...fields.map(([key]) => key.length));
  return fields.map(([key, value]) => `${key.padEnd(width)}  ${value}`.trimEnd()).join("\n");
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printText(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** A note for the operator, on standard error so standard output stays the command's result. */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}

/** Defensive readers: the server's JSON is rendered, never trusted to have the documented shape. */
export function asRecord(value: unknown): Record<string, unknown> {
  return isJsonObject(value) ? value : {};
}

export function text(value: unknown, empty = "-"): string {
  if (value === undefined || value === null || value === "") return empty;
  if (typeof value === "string") return value.replace(/\s+/g, " ");
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

export function list(value: unknown, empty: string): string {
  if (!Array.isArray(value)) return value === undefined || value === null ? empty : text(value);
  return value.length === 0 ? empty : value.map((item) => text(item)).join(",");
}

export function dataArray(body: unknown): unknown[] {
  const data = asRecord(body).data;
  return Array.isArray(data) ? data : [];
}
