import type { YAMLError } from "yaml";

/**
 * A YAML parse error as `file:line:col` and its reason, once: the yaml library ends its first line
 * with the position again (" at line 3, column 1:") and shows the source below it.
 */
export function describeYamlError(
  error: YAMLError,
  source: string,
): { where: string; reason: string } {
  const at = error.linePos?.[0];
  const reason = (error.message.split("\n")[0] ?? "")
    .replace(/ at line \d+, column \d+:?\s*$/, "")
    .replace(/:\s*$/, "");
  return { where: at ? `${source}:${at.line}:${at.col}` : source, reason };
}
