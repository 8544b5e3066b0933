import { SlashingDatabaseError } from "../antislashing/store";
import { unsupportedFeatures } from "../app/features";
import { listenForStopSignals, runUntilStopped } from "../app/lifecycle";
import { applySeccomp } from "../app/seccomp";
import { startSigner } from "../app/signer";
import { ConfigProblemsError } from "../config/problems";
import { createLogger, parseLogFilter, resolveColor } from "../observability/log";
import { defineCommand } from "./command";
import { configArgs, loadConfigOrExit } from "./config-args";
import { EXIT_USAGE, fail, failWithProblems } from "./exit";
import { failToOpen } from "./slashing";

const INIT_FLAG = "init-slashing-protection";
/** How serve itself can create a missing database, after `sigil slashing init` in its hint. */
export const SERVE_INIT_HINT = ` (or start once with --${INIT_FLAG})`;

export const serveCommand = defineCommand({
  meta: {
    name: "serve",
    description: "Run the signer (the default when only options are given)",
    examples: [
      "sigil serve -c /etc/sigil/config.yaml",
      "sigil serve -c examples/dev.yaml --init-slashing-protection",
      "sigil serve -c /etc/sigil/config.yaml --server-listen-port 9100 --metrics-listen-port 3100",
    ],
    notes: [
      "Every flag sets the configuration option in brackets, over the environment (SIGNER_…) and the file (docs/configuration.md). SIGTERM or SIGINT stops the signer gracefully; SIGHUP reloads the key directories.",
    ],
  },
  args: {
    ...configArgs(),
    [INIT_FLAG]: {
      type: "boolean",
      description:
        "Create the slashing protection database if it does not exist (for the configured network); without it a missing database stops start-up",
    },
  },
  async run({ rawArgs }) {
    const { config, extras } = loadConfigOrExit(rawArgs, {
      extraFlags: { [INIT_FLAG]: { type: "boolean" } },
      serving: true,
    });
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
        failToOpen(error, rawArgs, SERVE_INIT_HINT);
      }
      fail(`cannot start: ${error instanceof Error ? error.message : String(error)}`);
    }
    process.exit(await runUntilStopped(signer, signals, logger));
  },
});
