import type { ConfigProblem } from "../config/problems";
import type { Config } from "../config/schema";

const NOT_YET = "not supported by this version of sigil yet; remove it (see docs/configuration.md)";

/**
 * Options this build accepts in a config file but cannot honour yet. Starting anyway would be
 * worse than refusing: an operator who configured auth must not get an open signer. Entries go
 * when their feature lands.
 */
const NOT_YET_SUPPORTED: { where: string; configured: (c: Config) => boolean }[] = [
  { where: "server.seccomp", configured: (c) => c.server.seccomp },
];

export function unsupportedFeatures(config: Config): ConfigProblem[] {
  return NOT_YET_SUPPORTED.filter((f) => f.configured(config)).map((f) => ({
    where: f.where,
    message: NOT_YET,
  }));
}
