import { parseArgs } from "node:util";
import { type ExtraFlags, type FlagScope, flagSpecs } from "../config/flags";
import { type LoadResult, loadConfig } from "../config/load";
import { ConfigSchema } from "../config/schema";
import { kindOf } from "../config/walk";
import type { FlagDefs } from "./command";
import { failWithProblems, printWarnings } from "./exit";

/**
 * The configuration flags of a command that opens the slashing protection database without
 * serving (slashing init|import|export, migrate web3signer): its backend and the chain.
 */
export const SLASHING_SCOPE: FlagScope = ["network", "antislashing"];

/**
 * `-c` and the configuration flags (of `scope`'s sections only, when given) as the command's
 * flags, for its help and the check of its command line; parsing itself is done by src/config.
 */
export function configArgs(scope?: FlagScope): FlagDefs {
  const args: Record<string, FlagDefs[string]> = {
    config: { type: "string", alias: "c", description: "YAML config file", valueHint: "path" },
  };
  for (const spec of flagSpecs(ConfigSchema, scope)) {
    const boolean = kindOf(spec.schema) === "boolean";
    const repeat =
      spec.list === "repeat" ? " (repeatable)" : spec.list === "comma" ? " (comma-separated)" : "";
    args[spec.name] = {
      type: boolean ? "boolean" : "string",
      ...(boolean
        ? { negatable: true }
        : { valueHint: kindOf(spec.schema) === "integer" ? "n" : "value" }),
      description: `${spec.schema.description ?? ""}${repeat} [${spec.path.join(".")}]`,
    };
  }
  return args;
}

export interface LoadOptions {
  /** The command's own flags besides the configuration flags. */
  readonly extraFlags?: ExtraFlags;
  /** The sections whose flags the command takes (as in its configArgs); default all. */
  readonly scope?: FlagScope;
  /**
   * The command runs or checks a signer (serve, config check): the warnings about what a
   * running signer would do (its listeners, its key directories) are shown too.
   */
  readonly serving?: boolean;
}

/** Loads the configuration or exits 2 listing every problem. */
export function loadConfigOrExit(
  argv: readonly string[],
  options: LoadOptions = {},
): Extract<LoadResult, { ok: true }> {
  const result = loadConfig({
    argv,
    env: process.env,
    extraFlags: options.extraFlags,
    flagScope: options.scope,
  });
  printWarnings(result.warnings);
  if (!result.ok) failWithProblems(result.problems);
  if (options.serving) printWarnings(result.servingWarnings);
  return result;
}

/** `value` as one shell word: as it is when it is plain, else in single quotes. */
export function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * `sigil slashing init` for the database this command line configures: its `-c` and its
 * network and antislashing flags (as given), so that running it creates the file the command
 * would open, not the one of the `-c` file alone. The environment (SIGNER_…) applies to both.
 */
export function slashingInitCommand(argv: readonly string[]): string {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    config: { type: "string", short: "c" },
  };
  for (const spec of flagSpecs(ConfigSchema)) {
    const boolean = kindOf(spec.schema) === "boolean";
    options[spec.name] = { type: boolean ? "boolean" : "string" };
    if (boolean) options[`no-${spec.name}`] = { type: "boolean" };
  }
  const scoped = new Set(
    flagSpecs(ConfigSchema, SLASHING_SCOPE).flatMap((spec) => [spec.name, `no-${spec.name}`]),
  );
  const words = ["sigil", "slashing", "init"];
  // Not strict: the command's own flags (--file, --init-slashing-protection…) are left out.
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, tokens: true });
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    if (token.name === "config") words.push("-c");
    else if (scoped.has(token.name)) words.push(`--${token.name}`);
    else continue;
    if (token.value !== undefined) words.push(shellWord(token.value));
  }
  return words.join(" ");
}
