import type { TSchema } from "@sinclair/typebox";
import { envName } from "./env";
import { expectation } from "./load";
import { ConfigSchema } from "./schema";
import { isOptional, kindOf, pathText, settableNodes } from "./walk";

export const DOCS_BEGIN =
  "<!-- BEGIN GENERATED OPTIONS: `npm run docs:config` rewrites this table -->";
export const DOCS_END = "<!-- END GENERATED OPTIONS -->";

/** The option table of docs/configuration.md, generated from the schema so the two cannot drift. */
export function optionTable(schema: TSchema = ConfigSchema): string {
  const rows = [
    "| Option | Type | Default | Environment variable | CLI flag | Description |",
    "|---|---|---|---|---|---|",
  ];
  for (const { path, schema: node } of settableNodes(schema)) {
    const flag = node.flag
      ? `\`--${node.flag}\`${node.flagList === "repeat" ? " (repeatable)" : ""}`
      : "";
    const cells = [
      `\`${pathText(path)}\``,
      typeText(node),
      defaultText(node),
      `\`${envName(path)}\``,
      flag,
      String(node.description ?? "").replaceAll("|", "\\|"),
    ];
    rows.push(`| ${cells.join(" | ")} |`);
  }
  return rows.join("\n");
}

function typeText(node: TSchema): string {
  const kind = kindOf(node);
  if (kind === "record" || (kind === "array" && kindOf(node.items as TSchema) === "object")) {
    return "structured (see below)";
  }
  return expectation(node).replaceAll("|", "\\|");
}

function defaultText(node: TSchema): string {
  // `int(…, undefined, …)` leaves a `default: undefined` key: that is no default at all.
  if ("default" in node && node.default !== undefined) return `\`${JSON.stringify(node.default)}\``;
  return isOptional(node) ? "(none)" : "";
}

/** Replaces the generated block inside an existing document. */
export function withOptionTable(document: string, table: string = optionTable()): string {
  const start = document.indexOf(DOCS_BEGIN);
  const end = document.indexOf(DOCS_END);
  if (start < 0 || end < start)
    throw new Error("docs/configuration.md lacks the generated-table markers");
  return `${document.slice(0, start + DOCS_BEGIN.length)}\n${table}\n${document.slice(end)}`;
}
