import { defineCommand } from "citty";
import { loadBlsBackend } from "../bls/select";
import { VERSION, versionLine } from "../version";
import { configCommand } from "./config";
import { migrateCommand } from "./migrate";
import { operatorCommand } from "./operator/index";
import { serveCommand } from "./serve";
import { slashingCommand } from "./slashing";

const versionCommand = defineCommand({
  meta: {
    name: "version",
    description: "Print the version, build commit, Bun version and the BLS backend `auto` picks",
  },
  async run() {
    // What `bls.backend: auto` would use here: blst when it loads and passes its self-test.
    const { backend } = await loadBlsBackend("auto");
    process.stdout.write(`${versionLine()}, bls ${backend.name}\n`);
  },
});

export const rootCommand = defineCommand({
  meta: { name: "sigil", version: VERSION, description: "Ethereum validator remote signer" },
  subCommands: {
    serve: serveCommand,
    config: configCommand,
    slashing: slashingCommand,
    migrate: migrateCommand,
    version: versionCommand,
    operator: operatorCommand,
  },
});

/** `sigil -c FILE [flags]` means `sigil serve -c FILE [flags]`, as operators write it in unit files. */
export function withDefaultCommand(argv: readonly string[]): string[] {
  const first = argv[0];
  const isOption = first?.startsWith("-") && !["-h", "--help", "--version", "-v"].includes(first);
  return isOption ? ["serve", ...argv] : [...argv];
}
