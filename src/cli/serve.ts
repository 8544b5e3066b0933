import { defineCommand } from "citty";
import { SlashingDatabaseError } from "../antislashing/store";
import { unsupportedFeatures } from "../app/features";
import { listenForStopSignals, runUntilStopped } from "../app/lifecycle";
import { applySeccomp } from "../app/seccomp";
import { startSigner } from "../app/signer";
import { ConfigProblemsError } from "../config/problems";
import { createLogger, parseLogFilter, resolveColor } from "../observability/log";
import { configArgs, loadConfigOrExit } from "./config-args";
import { EXIT_USAGE, fail, failWithProblems } from "./exit";
import { failToOpen } from "./slashing";

const INIT_FLAG = "init-slashing-protection";

export const serveCommand = defineCommand({
  meta: { name: "serve", description: "Run the signer (the default when only options are given)" },
  args: {
    ...configArgs(),
    [INIT_FLAG]: {
      type: "boolean",
      description:
        "Create the slashing protection database if it does not exist (for the configured network); without it a missing database stops start-up",
    },
  },
  async run({ rawArgs }) {
    const { config, extras, configPath } = loadConfigOrExit(
      rawArgs,
      { [INIT_FLAG]: { type: "boolean" } },
      true,
    );
    const unsupported = unsupportedFeatures(config);
    if (unsupported.length > 0) failWithProblems(unsupported);
    const filter = parseLogFilter(config.logging.level);
    if (!filter.ok) fail(filter.error, EXIT_USAGE);
    const logger = createLogger({
      filter: filter.filter,
      format: config.logging.format,
      color: resolveColor(config.logging.log_color, process.stderr.isTTY === true, process.env),
    });
    const signals = listenForStopSignals(logger);
    let signer: Awaited<ReturnType<typeof startSigner>>;
    try {
      signer = await startSigner(config, logger, process.env, {
        initSlashingProtection: extras[INIT_FLAG] === true,
      });
      await applySeccomp(config, signer, logger);
    } catch (error) {
      if (error instanceof ConfigProblemsError) failWithProblems(error.problems);
      // Missing, not the one last written, another chain's (exit 2), or in use (exit 1).
      if (error instanceof SlashingDatabaseError) {
        failToOpen(error, configPath, ` (or start once with --${INIT_FLAG})`);
      }
      fail(
        `cannot start: ${startupReason(error, config.server.listen_address, config.server.listen_port)}`,
      );
    }
    process.exit(await runUntilStopped(signer, signals, logger));
  },
});

function startupReason(error: unknown, address: string, port: number): string {
  const code = (error as { code?: string }).code;
  if (code === "EADDRINUSE") return `${address}:${port} is already in use (server.listen_port)`;
  if (code === "EADDRNOTAVAIL")
    return `${address} is not an address of this machine (server.listen_address)`;
  if (code === "EACCES") return `no permission to listen on ${address}:${port}`;
  return error instanceof Error ? error.message : String(error);
}
