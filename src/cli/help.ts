/**
 * A command's help page: what it does, its usage line (the full command, from `sigil`), its
 * flags and nothing else, its subcommands, and examples an operator can run as printed. Plain
 * text unless standard output is a terminal (and NO_COLOR is unset): then headings are bold.
 */
import { resolveColor } from "../observability/log";
import type { Command, FlagDef } from "./command";

const INDENT = "  ";
/** Flags longer than this get their description on the next line. */
const MAX_FLAG_COLUMN = 34;

export interface HelpStyle {
  readonly color: boolean;
  readonly width: number;
}

/** Bold headings on a terminal only; lines wrapped to the terminal (100 columns otherwise). */
export function terminalStyle(): HelpStyle {
  const tty = process.stdout.isTTY === true;
  const color = resolveColor(undefined, tty, process.env) && process.env.TERM !== "dumb";
  const columns = tty ? (process.stdout.columns ?? 100) : 100;
  return { color, width: Math.max(60, Math.min(columns, 120)) };
}

/** The usage line: `sigil slashing import --file <path> [options]`. */
export function usageLine(command: Command, path: readonly string[]): string {
  const words = ["sigil", ...path];
  if (command.subCommands) words.push("<command>");
  const flags = Object.entries(command.args ?? {});
  for (const [name, def] of flags) if (def.required) words.push(flagSyntax(name, def));
  if (command.meta.positionals) words.push(command.meta.positionals);
  if (flags.some(([, def]) => !def.required)) words.push("[options]");
  return words.join(" ");
}

export function helpPage(
  command: Command,
  path: readonly string[],
  style: HelpStyle = terminalStyle(),
): string {
  const heading = (text: string) => (style.color ? `\x1b[1m${text}\x1b[22m` : text);
  const out: string[] = [];
  out.push(
    ...wrap(`${["sigil", ...path].join(" ")}: ${command.meta.description}`, style.width, ""),
    "",
  );
  out.push(heading("Usage:"), `${INDENT}${usageLine(command, path)}`, "");
  if (command.subCommands) {
    out.push(heading("Commands:"));
    const rows = Object.entries(command.subCommands).map(
      ([name, sub]) => [name, sub.meta.description] as const,
    );
    out.push(...columns(rows, style.width), "");
  }
  const flagRows = Object.entries(command.args ?? {}).map(
    ([name, def]) => [optionLabel(name, def), def.description] as const,
  );
  flagRows.push(["-h, --help", "Show this help"]);
  out.push(heading("Options:"), ...columns(flagRows, style.width), "");
  out.push(heading("Examples:"), ...command.meta.examples.map((e) => `${INDENT}${e}`), "");
  for (const note of command.meta.notes ?? []) out.push(...wrap(note, style.width, ""), "");
  if (command.subCommands) {
    out.push(`Run "${["sigil help", ...path].join(" ")} <command>" for a command's options.`, "");
  }
  return out.join("\n");
}

/** `--file <path>`, `--json`. */
function flagSyntax(name: string, def: FlagDef): string {
  return def.type === "string" ? `--${name} <${def.valueHint ?? "value"}>` : `--${name}`;
}

/** `-c, --config <path>`, `    --[no-]seccomp`. */
export function optionLabel(name: string, def: FlagDef): string {
  const syntax = def.negatable ? `--[no-]${name}` : flagSyntax(name, def);
  return def.alias ? `-${def.alias}, ${syntax}` : `    ${syntax}`;
}

/** Two columns: the left padded to the widest (up to MAX_FLAG_COLUMN), the right wrapped. */
function columns(rows: readonly (readonly [string, string])[], width: number): string[] {
  const left = Math.min(MAX_FLAG_COLUMN, Math.max(...rows.map(([l]) => l.length)));
  const pad = INDENT + " ".repeat(left + 2);
  const lines: string[] = [];
  for (const [label, text] of rows) {
    const wrapped = wrap(text, width, pad);
    if (label.length > left) {
      lines.push(`${INDENT}${label}`, ...wrapped);
    } else {
      const [first = "", ...others] = wrapped;
      lines.push(`${INDENT}${label.padEnd(left + 2)}${first.slice(pad.length)}`, ...others);
    }
  }
  return lines;
}

/** Words of `text` in lines of at most `width` columns, each starting with `indent`. */
function wrap(text: string, width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter((w) => w.length > 0)) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  lines.push(indent + line);
  return lines;
}
