import { stringify } from "yaml";
import { unsupportedFeatures } from "../app/features";
import { missingSlashingDatabase } from "../app/slashing";
import { loadCommitBoostTls } from "../commit-boost/tls";
import { redactConfig } from "../config/redact";
import { ConfigSchema } from "../config/schema";
import { loadServerTls } from "../http/tls";
import { defineCommand } from "./command";
import { configArgs, loadConfigOrExit } from "./config-args";
import { failWithProblems, printWarnings } from "./exit";
import { SERVE_INIT_HINT } from "./serve";
import { failToOpen } from "./slashing";

const check = defineCommand({
  meta: {
    name: "check",
    description: "Validate the configuration without starting; exit 2 on problems",
    examples: [
      "sigil config check -c /etc/sigil/config.yaml",
      "sigil config check -c examples/dev.yaml --server-listen-port 9100",
    ],
    notes: [
      "Checks the effective configuration: the file, the environment (SIGNER_…) and these flags, as serve would start with it. Problems are listed at once, each with its option (exit 2); warnings name what the signer would do that you may not expect.",
      "A sqlite slashing protection database that does not exist is refused as serve refuses it (exit 2); PostgreSQL and DynamoDB are not contacted.",
    ],
  },
  args: configArgs(),
  run({ rawArgs }) {
    const { config, configPath } = loadConfigOrExit(rawArgs, { serving: true });
    const unsupported = unsupportedFeatures(config);
    if (unsupported.length > 0) failWithProblems(unsupported);
    // The TLS files are read as serve reads them: a wrong path or a mismatched key fails here too.
    if (config.server.tls) {
      const tls = loadServerTls(config.server.tls);
      if (!tls.ok) failWithProblems(tls.problems);
      printWarnings(tls.tls.warnings);
    }
    if (config.commit_boost.enabled && config.commit_boost.tls) {
      const tls = loadCommitBoostTls(config.commit_boost.tls);
      if (!tls.ok) failWithProblems(tls.problems);
    }
    // What serve would refuse next, in its words and with its exit status.
    const missing = missingSlashingDatabase(config);
    if (missing) failToOpen(missing, rawArgs, SERVE_INIT_HINT);
    process.stdout.write(`configuration is valid${configPath ? ` (${configPath})` : ""}\n`);
  },
});

const print = defineCommand({
  meta: {
    name: "print",
    description: "Print the effective configuration as YAML, secrets redacted",
    examples: [
      "sigil config print -c /etc/sigil/config.yaml",
      "sigil config print -c examples/dev.yaml --network hoodi",
    ],
  },
  args: configArgs(),
  run({ rawArgs }) {
    const { config } = loadConfigOrExit(rawArgs);
    process.stdout.write(stringify(redactConfig(ConfigSchema, config)));
  },
});

export const configCommand = defineCommand({
  meta: {
    name: "config",
    description: "Check or print the configuration",
    examples: ["sigil config check -c /etc/sigil/config.yaml"],
  },
  subCommands: { check, print },
});
