import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { resolveSecret } from "../../config/validate";
import { describeFsError } from "../../os/fs-error";
import type { FlagDefs } from "../command";
import { EXIT_USAGE, fail } from "../exit";

export type FlagValues = Readonly<Record<string, string | boolean | undefined>>;

/**
 * Strict parsing of an operator command's flags (src/cli/run.ts checks the names first): a mistyped
 * `--ttl_seconds` or `--polices` must not become a silently different request. Exits 2 on an
 * unknown flag, a missing value or a positional argument.
 */
export function parseFlags(rawArgs: readonly string[], defs: FlagDefs): FlagValues {
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const [name, def] of Object.entries(defs)) {
    options[name] = { type: def.type === "boolean" ? "boolean" : "string" };
  }
  try {
    return parseArgs({ args: [...rawArgs], options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    fail(`${message.split(". ")[0] ?? message} (see --help)`, EXIT_USAGE);
  }
}

export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

export function requiredFlag(values: FlagValues, name: string, what: string): string {
  const value = stringFlag(values, name)?.trim();
  if (!value) fail(`--${name} is required (${what})`, EXIT_USAGE);
  return value;
}

export function booleanFlag(values: FlagValues, name: string): boolean {
  return values[name] === true;
}

/** `a, b,,c` → ["a", "b", "c"]. */
export function listFlag(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

/**
 * A secret flag: `env:VAR` reads the variable (preferred: a command line is visible to every user
 * of the host), anything else is the value itself. The value is never echoed in an error.
 */
export function secretFlag(values: FlagValues, name: string): string {
  const raw = stringFlag(values, name);
  if (raw === undefined || raw === "")
    fail(`--${name} is required (a value, or env:VAR to read it from a variable)`, EXIT_USAGE);
  const resolved = resolveSecret(raw, process.env);
  if (!resolved.ok)
    fail(`--${name}: environment variable ${resolved.variable} is not set`, EXIT_USAGE);
  // Header values cannot carry control characters; a trailing newline from `$(cat file)` is the usual cause.
  if (!/^[\x21-\x7e]+$/.test(resolved.value))
    fail(`--${name}: the token contains spaces or control characters`, EXIT_USAGE);
  return resolved.value;
}

/** `--flag value` as is, `--flag @file` reads the file, `--flag @-` reads standard input. */
export function inlineOrFile(name: string, value: string): string {
  if (!value.startsWith("@")) return value;
  const path = value.slice(1);
  try {
    return readFileSync(path === "-" ? 0 : path, "utf8");
  } catch (error) {
    fail(`--${name}: cannot read ${path}: ${describeFsError(error)}`, EXIT_USAGE);
  }
}

export function readFlagFile(name: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    fail(`--${name}: cannot read ${path}: ${describeFsError(error)}`, EXIT_USAGE);
  }
}
