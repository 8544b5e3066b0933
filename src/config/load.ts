import { statSync } from "node:fs";
import { resolve } from "node:path";
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { checkShape, joinPath } from "../wire/check";
import { commitBoostWarnings } from "./commit-boost";
import { readEnvLayer } from "./env";
import { exposureWarnings } from "./exposure";
import { readConfigFile } from "./file";
import { type ExtraFlags, type FlagScope, readFlagLayer } from "./flags";
import { type ConfigProblem, problem } from "./problems";
import { type Config, ConfigSchema } from "./schema";
import { closestName } from "./suggest";
import { validateConfig } from "./validate";
import {
  enumValues,
  isOptional,
  isPlainObject,
  kindOf,
  mergeLayer,
  type Path,
  pathText,
  properties,
  schemaAt,
  setPaths,
  unknownKeys,
  withDefaults,
} from "./walk";

export interface LoadInput {
  /** Arguments after the command name: `-c FILE` and configuration flags. */
  argv: readonly string[];
  env: Record<string, string | undefined>;
  /** Command-specific flags accepted besides the configuration flags. */
  extraFlags?: ExtraFlags;
  /** The configuration sections whose flags the command takes (default: every flag). */
  flagScope?: FlagScope;
}

export type LoadResult =
  | {
      ok: true;
      config: Config;
      configPath?: string;
      extras: Record<string, unknown>;
      warnings: string[];
      /**
       * About what a signer started with this configuration would do (its listeners, its key
       * directories, settings its backend ignores): shown by the commands that run or check a
       * signer (serve, config check), not by those that only open its database.
       */
      servingWarnings: string[];
    }
  | { ok: false; problems: ConfigProblem[]; warnings: string[] };

/** Builds the effective configuration: flags > env > file > defaults, then validates all of it. */
export function loadConfig(input: LoadInput): LoadResult {
  const schema = ConfigSchema;
  const flags = readFlagLayer(schema, input.argv, input.extraFlags, input.flagScope);
  const file = flags.configPath ? readConfigFile(flags.configPath) : { value: {}, problems: [] };
  const env = readEnvLayer(schema, input.env);
  const warnings = env.unknown.map((name) => `${name} is set but names no option; ignored`);
  const problems = [...flags.problems, ...file.problems, ...env.problems];

  const origins = new Map([...env.origins, ...flags.origins]);
  const explicit = new Set([...setPaths(schema, file.value)].map((p) => p.join(".")));
  for (const key of origins.keys()) explicit.add(key);

  const merged = [file.value, env.value, flags.value].reduce<unknown>(
    (acc, layer) => mergeLayer(schema, acc, layer),
    {},
  );
  const candidate = withDefaults(schema, merged);
  const structural = structuralProblems(schema, candidate, origins);
  problems.push(...structural);
  // Semantic rules still run on a repaired copy, so that one run reports every problem.
  const config = (structural.length > 0 ? repaired(schema, candidate) : candidate) as
    | Config
    | undefined;
  if (config) {
    problems.push(...normalizeLegacyKeyManager(config, explicit, warnings));
    problems.push(...validateConfig(config, input.env));
  }
  if (problems.length > 0 || !config) return { ok: false, problems, warnings };
  return {
    ok: true,
    config,
    configPath: flags.configPath,
    extras: flags.extras,
    warnings,
    servingWarnings: [
      ...exposureWarnings(config, explicit, flags.configPath),
      ...keyDirectoryWarnings(config),
      ...ignoredSettingWarnings(config),
      ...commitBoostWarnings(config),
    ],
  };
}

/** A copy where each invalid value is replaced by its default or removed; undefined if that does not suffice. */
function repaired(schema: TSchema, value: unknown): unknown {
  const copy = structuredClone(value);
  for (let attempt = 0; attempt < 50; attempt++) {
    const paths = [...unknownKeys(schema, copy)];
    const first = Value.Errors(schema, copy).First();
    if (first) paths.push(first.path.split("/").slice(1));
    if (paths.length === 0) return copy;
    for (const path of paths) if (!dropOrReset(schema, copy, path)) return undefined;
  }
  return undefined;
}

function dropOrReset(schema: TSchema, root: unknown, path: Path): boolean {
  for (let n = path.length; n > 0; n--) {
    const at = path.slice(0, n);
    const node = schemaAt(schema, at);
    const parent = at
      .slice(0, -1)
      .reduce<unknown>((v, k) => (v as Record<string, unknown>)?.[k], root);
    const key = at[at.length - 1] as string;
    if (!parent || typeof parent !== "object") continue;
    const holder = parent as Record<string, unknown>;
    if (node && "default" in node) {
      holder[key] = structuredClone(node.default);
      return true;
    }
    const firstMember = node ? enumValues(node)?.[0] : undefined;
    if (firstMember !== undefined && !Array.isArray(parent)) {
      holder[key] = firstMember;
      return true;
    }
    if (
      !node ||
      isOptional(node) ||
      Array.isArray(parent) ||
      kindOf(schemaAt(schema, at.slice(0, -1)) ?? node) === "record"
    ) {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete holder[key];
      return true;
    }
  }
  return false;
}

function structuralProblems(
  schema: TSchema,
  value: unknown,
  origins: Map<string, string>,
): ConfigProblem[] {
  const found: ConfigProblem[] = [];
  const seen = new Set<string>();
  // A wire shape (a policy rule, a CIDR) is checked whole and worded as the API and CLI word it.
  const shapes = [...wireShapes(schema, value)];
  for (const shape of shapes) {
    const checked = checkShape(shape.schema, shape.value);
    if (checked.ok) continue;
    const where = joinPath(pathText(shape.path), checked.where);
    found.push(problem(where, checked.problem + origin(shape.path, origins)));
  }
  const inShape = (path: Path) =>
    shapes.some((shape) => shape.path.every((key, i) => path[i] === key));
  for (const path of unknownKeys(schema, value)) {
    if (inShape(path)) continue;
    seen.add(path.join("."));
    found.push(
      problem(pathText(path), `unknown option${suggestion(schema, path)}${origin(path, origins)}`),
    );
  }
  for (const error of Value.Errors(schema, value)) {
    const path = error.path.split("/").slice(1);
    if (inShape(path)) continue;
    const key = path.join(".");
    if (seen.has(key) || [...seen].some((s) => key.startsWith(`${s}.`))) continue;
    const node = schemaAt(schema, path);
    if (!node) continue;
    seen.add(key);
    // A mistyped secret (an all-digit token read as a number) must not be echoed back.
    const shown = mayHoldSecret(node) ? "" : `, got ${shortValue(error.value)}`;
    const message =
      error.value === undefined ? "is required" : `must be ${expectation(node)}${shown}`;
    found.push(problem(pathText(path), message + origin(path, origins)));
  }
  return found;
}

/** Every value under a node marked `wireShape`, with its path. */
function* wireShapes(
  schema: TSchema,
  value: unknown,
  path: Path = [],
): Generator<{ path: Path; schema: TSchema; value: unknown }> {
  if (schema.wireShape === true) {
    yield { path, schema, value };
    return;
  }
  const kind = kindOf(schema);
  if (kind === "object" && isPlainObject(value)) {
    for (const [key, child] of Object.entries(properties(schema)))
      if (value[key] !== undefined) yield* wireShapes(child, value[key], [...path, key]);
  } else if (kind === "array" && Array.isArray(value)) {
    for (const [i, item] of value.entries())
      yield* wireShapes(schema.items as TSchema, item, [...path, String(i)]);
  }
}

function origin(path: Path, origins: Map<string, string>): string {
  for (let n = path.length; n > 0; n--) {
    const name = origins.get(path.slice(0, n).join("."));
    if (name) return ` (from ${name})`;
  }
  return "";
}

/** Words for what a value must be, for error messages. */
export function expectation(schema: TSchema): string {
  if (typeof schema.expected === "string") return schema.expected;
  switch (kindOf(schema)) {
    case "integer":
      return `an integer from ${schema.minimum} to ${schema.maximum}`;
    case "boolean":
      return "true or false";
    case "string":
      return schema.minLength ? `a string of at least ${schema.minLength} characters` : "a string";
    case "array":
      return schema.minItems ? "a non-empty list" : "a list";
    case "object":
    case "record":
      return "a mapping";
    case "literal":
      return JSON.stringify(schema.const);
    default:
      return "a valid value";
  }
}

/** True when the node or anything inside it is marked secret in the schema. */
export function mayHoldSecret(schema: TSchema): boolean {
  if (schema.secret) return true;
  const children: TSchema[] = [
    ...Object.values((schema.properties ?? {}) as Record<string, TSchema>),
    ...Object.values((schema.patternProperties ?? {}) as Record<string, TSchema>),
    ...((schema.anyOf ?? []) as TSchema[]),
    ...(schema.items ? [schema.items as TSchema] : []),
  ];
  return children.some(mayHoldSecret);
}

function shortValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

function suggestion(schema: TSchema, path: Path): string {
  const parent = schemaAt(schema, path.slice(0, -1));
  const key = path[path.length - 1] ?? "";
  if (!parent || kindOf(parent) !== "object") return "";
  const close = closestName(key, Object.keys(properties(parent)));
  return close ? ` (did you mean "${close}"?)` : "";
}

/**
 * The spec's notes show an older top-level `key_manager_api: {enabled, max_concurrent}`.
 * It is folded into `key_sources.key_manager_api` (max_concurrent bounds writes, whose default
 * it shares); setting both forms to different values is an error rather than a silent choice.
 */
function normalizeLegacyKeyManager(
  config: Config,
  explicit: Set<string>,
  warnings: string[],
): ConfigProblem[] {
  const legacy = config.key_manager_api;
  if (!legacy) return [];
  delete config.key_manager_api;
  warnings.push("key_manager_api is the older form; use key_sources.key_manager_api");
  const target = config.key_sources.key_manager_api;
  const problems: ConfigProblem[] = [];
  const fold = <K extends "enabled" | "max_concurrent_writes">(
    from: string,
    to: K,
    value: (typeof target)[K] | undefined,
  ) => {
    if (value === undefined) return;
    const path = `key_sources.key_manager_api.${to}`;
    if (explicit.has(path) && target[to] !== value) {
      problems.push(
        problem(`key_manager_api.${from}`, `conflicts with ${path}; set only one of them`),
      );
    } else target[to] = value;
  };
  fold("enabled", "enabled", legacy.enabled);
  fold("max_concurrent", "max_concurrent_writes", legacy.max_concurrent);
  return problems;
}

/** A key directory that is not there: serve would start and load no key from it. */
function keyDirectoryWarnings(config: Config): string[] {
  return config.key_sources.filesystem.paths.flatMap((path, i) => {
    const where = `key_sources.filesystem.paths[${i}]`;
    const absolute = resolve(path);
    const shown = absolute === path ? path : `${path} (${absolute})`;
    let isDirectory: boolean;
    try {
      isDirectory = statSync(absolute).isDirectory();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? error})`;
      return [`${where}: the key directory ${shown} ${why}: serve would load no keys from it`];
    }
    return isDirectory
      ? []
      : [`${where}: ${shown} is a file, not a key directory: serve would load no keys from it`];
  });
}

/** Settings the configured backend does not use: say so rather than ignore them silently. */
function ignoredSettingWarnings(config: Config): string[] {
  const { backend, pruning_epochs_to_keep: epochs } = config.antislashing;
  if (epochs === 0) return [];
  const why =
    backend === "dynamodb"
      ? "keeps one watermark per validator, no history to prune (minimal strategy)"
      : backend === "noop"
        ? "keeps nothing"
        : undefined;
  if (why === undefined) return [];
  return [
    `antislashing.pruning_epochs_to_keep is ${epochs}, but the ${backend} backend ${why}: the setting is ignored (pruning applies to sqlite and postgres)`,
  ];
}
