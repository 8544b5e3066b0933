import type { ConfigProblem } from "../config/problems";
import type { Config } from "../config/schema";
import { type Host, seccompProblems } from "./seccomp";

const NOT_YET = "not supported by this version of sigil yet; remove it (see docs/configuration.md)";

/**
 * Options this build accepts in a config file but cannot honour yet. Starting anyway would be
 * worse than refusing: an operator who configured auth must not get an open signer. Entries go
 * when their feature lands; none is waiting now, the mechanism stays for the next one.
 */
const NOT_YET_SUPPORTED: { where: string; configured: (c: Config) => boolean }[] = [];

/**
 * Options this build, or this host, cannot honour: refused by `serve` and `config check` alike
 * (exit 2) before anything starts. `host` defaults to the machine this runs on.
 */
export function unsupportedFeatures(config: Config, host?: Host): ConfigProblem[] {
  const notYet = NOT_YET_SUPPORTED.filter((f) => f.configured(config)).map((f) => ({
    where: f.where,
    message: NOT_YET,
  }));
  return [...notYet, ...seccompProblems(config, host)];
}
