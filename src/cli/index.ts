import { loadBlsBackend } from "../bls/select";
import { VERSION, versionLine } from "../version";
import { type Command, defineCommand } from "./command";
import { configCommand } from "./config";
import { EXIT_USAGE, fail } from "./exit";
import { helpPage } from "./help";
import { migrateCommand } from "./migrate";
import { operatorCommand } from "./operator/index";
import { resolveCommand } from "./run";
import { serveCommand } from "./serve";
import { slashingCommand } from "./slashing";

const versionCommand = defineCommand({
  meta: {
    name: "version",
    description: "Print the version, build commit, Bun version and the BLS backend `auto` picks",
    examples: ["sigil version"],
  },
  async run() {
    // What `bls.backend: auto` would use here: blst when it loads and passes its self-test.
    const { backend } = await loadBlsBackend("auto");
    process.stdout.write(`${versionLine()}, bls ${backend.name}\n`);
  },
});

const helpCommand: Command = defineCommand({
  meta: {
    name: "help",
    description: "Show the help of sigil or of one of its commands",
    positionals: "[command…]",
    examples: ["sigil help", "sigil help slashing import"],
  },
  run({ rawArgs }) {
    const resolved = resolveCommand(rootCommand, rawArgs);
    if (!resolved.ok) fail(resolved.problem, EXIT_USAGE);
    if (resolved.rest.length > 0) {
      fail(`sigil help takes command words only, not "${resolved.rest[0]}"`, EXIT_USAGE);
    }
    process.stdout.write(helpPage(resolved.command, resolved.path));
  },
});

export const rootCommand: Command = defineCommand({
  meta: {
    name: "sigil",
    description: "Ethereum validator remote signer",
    examples: [
      "sigil serve -c /etc/sigil/config.yaml",
      "sigil -c /etc/sigil/config.yaml",
      "sigil config check -c /etc/sigil/config.yaml",
      "sigil help serve",
    ],
    notes: [
      "sigil -c FILE [options] runs sigil serve -c FILE [options]. Exit status: 0 done, 1 a runtime failure, 2 an invalid configuration or command line (docs/troubleshooting.md).",
    ],
  },
  args: { version: { type: "boolean", alias: "v", description: `Print the version (${VERSION})` } },
  subCommands: {
    serve: serveCommand,
    config: configCommand,
    slashing: slashingCommand,
    migrate: migrateCommand,
    operator: operatorCommand,
    version: versionCommand,
    help: helpCommand,
  },
  run({ rawArgs }) {
    if (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v")) {
      process.stdout.write(`${VERSION}\n`);
      return;
    }
    fail(
      `a command is needed: ${Object.keys(rootCommand.subCommands ?? {}).join(", ")}; see sigil help`,
      EXIT_USAGE,
    );
  },
});

/** `sigil -c FILE [flags]` means `sigil serve -c FILE [flags]`, as operators write it in unit files. */
export function withDefaultCommand(argv: readonly string[]): string[] {
  const first = argv[0];
  const isOption = first?.startsWith("-") && !["-h", "--help", "--version", "-v"].includes(first);
  return isOption ? ["serve", ...argv] : [...argv];
}
