/** One configuration problem: where it is and what is wrong. Collected, never thrown one by one. */
export interface ConfigProblem {
  /** Dotted option path (`server.listen_port`), or a source such as an env var or flag name. */
  where: string;
  message: string;
}

export function problem(where: string, message: string): ConfigProblem {
  return { where, message };
}

export function formatProblems(problems: readonly ConfigProblem[]): string {
  const noun = problems.length === 1 ? "problem" : "problems";
  const lines = problems.map((p) => `  ${p.where}: ${p.message}`);
  return [`sigil: invalid configuration (${problems.length} ${noun}):`, ...lines].join("\n");
}

/**
 * Problems only found when starting (the files a setting names): thrown by the composition root,
 * reported by the CLI like any other invalid configuration (exit 2, nothing started).
 */
export class ConfigProblemsError extends Error {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(formatProblems(problems));
    this.name = "ConfigProblemsError";
  }
}
