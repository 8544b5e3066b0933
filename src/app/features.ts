import type { ConfigProblem } from "../config/problems";
import type { Config } from "../config/schema";
import { type Host, seccompProblems } from "./seccomp";

/**
 * Options this build, or this host, cannot honour: refused by `serve` and `config check` alike
 * (exit 2) before anything starts, never silently ignored. `host` defaults to the machine this
 * runs on. Every option of the schema is implemented now; an option added to the schema before
 * its feature lands belongs here until it does.
 */
export function unsupportedFeatures(config: Config, host?: Host): ConfigProblem[] {
  return seccompProblems(config, host);
}
