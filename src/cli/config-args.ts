import type { ArgsDef } from "citty";
import { type ExtraFlags, flagSpecs } from "../config/flags";
import { type LoadResult, loadConfig } from "../config/load";
import { ConfigSchema } from "../config/schema";
import { kindOf } from "../config/walk";
import { failWithProblems, printWarnings } from "./exit";

/** citty argument definitions for `--help`; parsing itself is strict and done by src/config. */
export function configArgs(): ArgsDef {
  const args: ArgsDef = {
    config: { type: "string", alias: "c", description: "YAML config file", valueHint: "path" },
  };
  for (const spec of flagSpecs(ConfigSchema)) {
    const boolean = kindOf(spec.schema) === "boolean";
    const repeat =
      spec.list === "repeat" ? " (repeatable)" : spec.list === "comma" ? " (comma-separated)" : "";
    args[spec.name] = {
      type: boolean ? "boolean" : "string",
      ...(boolean ? {} : { valueHint: kindOf(spec.schema) === "integer" ? "n" : "value" }),
      description: `${spec.schema.description ?? ""}${repeat} [${spec.path.join(".")}]`,
    };
  }
  return args;
}

/**
 * Loads the configuration or exits 2 listing every problem. `listeners`: the command starts or
 * checks the listeners (serve, config check), so warnings about them are shown too.
 */
export function loadConfigOrExit(
  argv: readonly string[],
  extraFlags?: ExtraFlags,
  listeners = false,
): Extract<LoadResult, { ok: true }> {
  const result = loadConfig({ argv, env: process.env, extraFlags });
  printWarnings(result.warnings);
  if (!result.ok) failWithProblems(result.problems);
  if (listeners) printWarnings(result.listenerWarnings);
  return result;
}
