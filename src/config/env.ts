import type { TSchema } from "@sinclair/typebox";
import { type ConfigProblem, problem } from "./problems";
import { parseTextValue } from "./text-value";
import { type Path, type Plain, settableNodes } from "./walk";

export const ENV_PREFIX = "SIGNER_";

/** `server.listen_port` → `SIGNER_SERVER__LISTEN_PORT`. */
export function envName(path: Path): string {
  return ENV_PREFIX + path.map((key) => key.toUpperCase()).join("__");
}

export interface EnvLayer {
  value: Plain;
  problems: ConfigProblem[];
  /** SIGNER_* variables that name no option: reported as warnings, since `env:` token references may use the prefix too. */
  unknown: string[];
  /** option path text → variable name, for error messages */
  origins: Map<string, string>;
}

export function readEnvLayer(schema: TSchema, env: Record<string, string | undefined>): EnvLayer {
  const value: Plain = {};
  const problems: ConfigProblem[] = [];
  const origins = new Map<string, string>();
  const known = new Set<string>();
  for (const node of settableNodes(schema)) {
    const name = envName(node.path);
    known.add(name);
    const text = env[name];
    if (text === undefined) continue;
    const parsed = parseTextValue(node.schema, text);
    if (!parsed.ok) {
      problems.push(problem(name, parsed.message));
      continue;
    }
    setIn(value, node.path, parsed.value);
    origins.set(node.path.join("."), name);
  }
  const unknown = Object.keys(env)
    .filter((name) => name.startsWith(ENV_PREFIX) && !known.has(name))
    .sort();
  return { value, problems, unknown, origins };
}

export function setIn(target: Plain, path: Path, value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next === "object" && next !== null && !Array.isArray(next)) node = next as Plain;
    else {
      const created: Plain = {};
      node[key] = created;
      node = created;
    }
  }
  const last = path[path.length - 1];
  if (last !== undefined) node[last] = value;
}
