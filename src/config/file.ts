import { readFileSync } from "node:fs";
import { parseDocument } from "yaml";
import { describeYamlError } from "../wire/yaml-error";
import { type ConfigProblem, problem } from "./problems";
import { isPlainObject, type Plain } from "./walk";

export interface FileLayer {
  value: Plain;
  problems: ConfigProblem[];
}

/** Reads the YAML config file. Duplicate keys are an error: a repeated key usually hides a typo. */
export function readConfigFile(path: string): FileLayer {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? "unreadable";
    return { value: {}, problems: [problem(path, `cannot read config file (${reason})`)] };
  }
  return parseConfigText(text, path);
}

export function parseConfigText(text: string, source: string): FileLayer {
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => {
      const { where, reason } = describeYamlError(e, source);
      return problem(where, `YAML: ${reason}`);
    });
    return { value: {}, problems };
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return { value: {}, problems: [] };
  if (!isPlainObject(value)) {
    return { value: {}, problems: [problem(source, "the top level must be a mapping of options")] };
  }
  return { value, problems: [] };
}
