import { type ConfigProblem, formatProblems } from "../config/problems";

/** Exit codes: 0 done, 1 runtime failure, 2 bad configuration or usage (nothing was started). */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export function printWarnings(warnings: readonly string[]): void {
  for (const warning of warnings) process.stderr.write(`sigil: warning: ${warning}\n`);
}

export function failWithProblems(problems: readonly ConfigProblem[]): never {
  process.stderr.write(`${formatProblems(problems)}\n`);
  process.exit(EXIT_USAGE);
}

export function fail(reason: string, code = EXIT_FAILURE): never {
  process.stderr.write(`sigil: ${reason}\n`);
  process.exit(code);
}
