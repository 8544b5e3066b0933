import { parseArgs } from "node:util";
import type { TSchema } from "@sinclair/typebox";
import { setIn } from "./env";
import { type ConfigProblem, problem } from "./problems";
import { parseTextValue } from "./text-value";
import { kindOf, type Path, type Plain, settableNodes } from "./walk";

export interface FlagSpec {
  name: string;
  path: Path;
  schema: TSchema;
  list?: "repeat" | "comma";
}

/**
 * Every option that has a CLI flag, in schema order; with `scope`, only the options under those
 * top-level sections (`["antislashing", "network"]`: the flags that matter to a command that
 * opens the slashing protection database, and no server flag).
 */
export function flagSpecs(schema: TSchema, scope?: FlagScope): FlagSpec[] {
  const specs: FlagSpec[] = [];
  for (const node of settableNodes(schema)) {
    const name = node.schema.flag as string | undefined;
    if (!name || (scope && !scope.includes(String(node.path[0])))) continue;
    specs.push({ name, path: node.path, schema: node.schema, list: node.schema.flagList });
  }
  return specs;
}

/** Top-level configuration sections whose flags a command takes; undefined: all of them. */
export type FlagScope = readonly string[];

/** Flags of a command beyond the configuration flags (e.g. `--file` of `slashing import`). */
export type ExtraFlags = Record<string, { type: "string" | "boolean"; multiple?: boolean }>;

export interface FlagLayer {
  configPath?: string;
  extras: Record<string, unknown>;
  value: Plain;
  problems: ConfigProblem[];
  origins: Map<string, string>;
}

/**
 * Parses the configuration flags of a command (`scope`: its sections) and its own (`extraFlags`).
 * Unknown flags and stray arguments are errors: a mistyped flag must not be silently ignored.
 */
export function readFlagLayer(
  schema: TSchema,
  argv: readonly string[],
  extraFlags: ExtraFlags = {},
  scope?: FlagScope,
): FlagLayer {
  const specs = flagSpecs(schema, scope);
  const options: Record<
    string,
    { type: "string" | "boolean"; multiple?: boolean; short?: string }
  > = {
    ...extraFlags,
    config: { type: "string", short: "c" },
  };
  for (const spec of specs) {
    if (kindOf(spec.schema) === "boolean") {
      options[spec.name] = { type: "boolean" };
      options[`no-${spec.name}`] = { type: "boolean" };
    } else options[spec.name] = { type: "string", multiple: true };
  }
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (error) {
    // Still read the config file, so that its problems are reported in the same run.
    return {
      configPath: configPathFallback(argv),
      extras: {},
      value: {},
      origins: new Map(),
      problems: [problem("command line", (error as Error).message)],
    };
  }
  const value: Plain = {};
  const problems: ConfigProblem[] = [];
  const origins = new Map<string, string>();
  for (const spec of specs) {
    const flag = `--${spec.name}`;
    const parsed = flagValue(spec, values[spec.name], values[`no-${spec.name}`]);
    if (parsed === undefined) continue;
    if (!parsed.ok) {
      problems.push(problem(flag, parsed.message));
      continue;
    }
    setIn(value, spec.path, parsed.value);
    origins.set(spec.path.join("."), flag);
  }
  const configPath = values.config as string | undefined;
  const extras = Object.fromEntries(Object.keys(extraFlags).map((name) => [name, values[name]]));
  return { configPath, extras, value, problems, origins };
}

function flagValue(spec: FlagSpec, raw: unknown, negated: unknown) {
  if (kindOf(spec.schema) === "boolean") {
    if (raw === true && negated === true) {
      return { ok: false as const, message: `given together with --no-${spec.name}` };
    }
    if (raw === true) return { ok: true as const, value: true };
    if (negated === true) return { ok: true as const, value: false };
    return undefined;
  }
  const texts = raw as string[] | undefined;
  if (!texts || texts.length === 0) return undefined;
  if (spec.list === "repeat") return { ok: true as const, value: texts };
  if (spec.list === "comma") return parseTextValue(spec.schema, texts.join(","));
  if (texts.length > 1) return { ok: false as const, message: "given more than once" };
  return parseTextValue(spec.schema, texts[0] as string);
}

function configPathFallback(argv: readonly string[]): string | undefined {
  for (const [i, arg] of argv.entries()) {
    if (arg === "-c" || arg === "--config") return argv[i + 1];
    if (arg.startsWith("--config=")) return arg.slice("--config=".length);
    if (arg.startsWith("-c") && arg.length > 2) return arg.slice(2);
  }
  return undefined;
}
