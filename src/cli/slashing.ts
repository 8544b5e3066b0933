import { accessSync, constants, renameSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { bytesToHex } from "../antislashing/encoding";
import { type FutureBound, FutureRecordError, withinBound } from "../antislashing/future";
import { readInterchange, writeInterchange } from "../antislashing/interchange";
import type { OpenedDatabase } from "../antislashing/registry";
import {
  type InterchangeSource,
  NothingToExportError,
  SlashingDatabaseError,
  SlashingImportError,
  type SlashingStore,
} from "../antislashing/store";
import { DatabaseFileError } from "../app/database-file";
import { configuredNetwork, futureBound, openSlashingStore } from "../app/slashing";
import type { Config } from "../config/schema";
import { createLogger, parseLogFilter, resolveColor } from "../observability/log";
import { describeFsError } from "../os/fs-error";
import { counted } from "../wire/count";
import { isPubkeyHex, normalizePubkey } from "../wire/pubkey";
import { defineCommand } from "./command";
import { configArgs, loadConfigOrExit, SLASHING_SCOPE, slashingInitCommand } from "./config-args";
import { EXIT_FAILURE, EXIT_USAGE, fail } from "./exit";
import { watermarkRepairCommand } from "./watermark-repair";

const fileArg = (direction: "read" | "written") =>
  ({
    file: {
      type: "string",
      valueHint: "path",
      required: true,
      description: `Interchange file (EIP-3076 v5) ${direction}; - for standard ${direction === "read" ? "input" : "output"}`,
    },
  }) as const;

export interface StoreAccess {
  /** "write" (import, migrate; sqlite: the writer lock) or "read" (export, dry runs). */
  readonly access: "write" | "read";
  /** `sigil slashing init`: create a missing database, bind an unbound one. */
  readonly initialize?: boolean;
  /** The command line: its `-c` and database flags make the `sigil slashing init` an error suggests. */
  readonly argv: readonly string[];
}

/**
 * Exits for a database that cannot be opened: 2 for one that is missing, not initialized, not
 * the one last written or of another chain (fix the files or the configuration; nothing was
 * started), 1 for one another process writes or that cannot be reached. Where `sigil slashing
 * init` is the way on, the message ends with it (and `orFlag`: how the command at hand can do the
 * same, serve's --init-slashing-protection).
 */
export function failToOpen(error: unknown, argv: readonly string[], orFlag = ""): never {
  if (error instanceof SlashingDatabaseError) {
    const init = `\`${slashingInitCommand(argv)}\`${orFlag}`;
    const hint =
      error.problem === "missing"
        ? ` To create a new, empty one: ${init}.`
        : error.problem === "not_initialized"
          ? ` To bind it to the configured network: ${init}.`
          : "";
    fail(`${error.message}${hint}`, error.problem === "in_use" ? EXIT_FAILURE : EXIT_USAGE);
  }
  // Names the file, antislashing.path and the reason already.
  if (error instanceof DatabaseFileError) fail(error.message);
  fail(
    `cannot open the slashing protection database: ${error instanceof Error ? error.message : String(error)}`,
  );
}

/** A logger that writes nothing: serve's start-up lines about the future bound are not for a command. */
function silent() {
  const off = parseLogFilter("off");
  if (!off.ok) throw new Error(off.error);
  return createLogger({ filter: off.filter, format: "json", color: false });
}

/** `--allow-future` of the commands that import history (slashing import, migrate web3signer). */
export const ALLOW_FUTURE_ARG = {
  "allow-future": {
    type: "boolean",
    description: "Import records beyond antislashing.max_future_epochs too",
  },
} as const;

/** How a refusal by the future-epoch bound ends: how to import such records anyway. */
export const ALLOW_FUTURE_HINT = "; to import such records anyway, add --allow-future";

/**
 * The future-epoch bound an import of history applies: the signing one, so that no import
 * records what signing would refuse. None with --allow-future, nor without a known genesis time
 * (as for signing: docs/antislashing.md).
 */
export function importBound(config: Config, allowFuture: boolean): FutureBound | undefined {
  return allowFuture ? undefined : futureBound(config, configuredNetwork(config), silent());
}

/** Runs `run` on the configured slashing store (logging at warn); exits if it cannot be opened. */
export async function withStore<T>(
  config: Config,
  run: (store: SlashingStore, opened: OpenedDatabase) => Promise<T>,
  how: StoreAccess,
): Promise<T> {
  const filter = parseLogFilter("warn");
  if (!filter.ok) throw new Error(filter.error);
  const logger = createLogger({
    filter: filter.filter,
    format: config.logging.format,
    color: resolveColor(config.logging.log_color, process.stderr.isTTY === true, process.env),
  });
  let opened: OpenedDatabase;
  try {
    opened = await openSlashingStore(config, logger, {
      access: how.access,
      initialize: how.initialize === true,
    });
  } catch (error) {
    failToOpen(error, how.argv);
  }
  try {
    return await run(opened.store, opened);
  } finally {
    await opened.store.close();
  }
}

/** `2 validators (1 block, 3 attestations)`. */
function tally(counts: { validators: number; blocks: number; attestations: number }): string {
  return `${counted(counts.validators, "validator")} (${counted(counts.blocks, "block")}, ${counted(counts.attestations, "attestation")})`;
}

/** Exits 2 naming the file and why, when `--file` cannot be read. */
function checkReadableFile(file: string): void {
  try {
    if (statSync(file).isDirectory())
      fail(`--file: cannot read ${file}: is a directory`, EXIT_USAGE);
    accessSync(file, constants.R_OK);
  } catch (error) {
    fail(`--file: cannot read ${file}: ${describeFsError(error)}`, EXIT_USAGE);
  }
}

/**
 * `slashing init` without `-c`: which database, for which chain, the defaults chose, said before it
 * is created (a signer's configuration usually names another).
 */
function defaultsNote(config: Config, network: string): string {
  const { antislashing } = config;
  const where =
    antislashing.backend === "sqlite"
      ? `, antislashing.path ${antislashing.path}`
      : antislashing.backend === "dynamodb"
        ? `, antislashing.table ${antislashing.table}`
        : "";
  return (
    `sigil: no -c file given: network ${network}, antislashing.backend ${antislashing.backend}${where} ` +
    "(the defaults, and any SIGNER_… variables and flags); for the signer's configuration run " +
    "sigil slashing init -c <config file>"
  );
}

const initCommand = defineCommand({
  meta: {
    name: "init",
    description:
      "Create the configured slashing protection database for the configured network (the only way besides serve --init-slashing-protection)",
    examples: [
      "sigil slashing init -c /etc/sigil/config.yaml",
      "sigil slashing init -c examples/dev.yaml",
    ],
    notes: [
      "Run it once, before the first start, for keys that never signed: a signer whose keys signed before needs their history (restore the database, or sigil slashing import). Run it as the user the signer runs as (docs/deploy.md).",
    ],
  },
  args: configArgs(SLASHING_SCOPE),
  async run({ rawArgs }) {
    const { config, configPath } = loadConfigOrExit(rawArgs, { scope: SLASHING_SCOPE });
    if (config.antislashing.backend === "noop") {
      process.stdout.write("antislashing.backend is noop: there is no database to initialize\n");
      return;
    }
    const network = configuredNetwork(config).name;
    if (configPath === undefined) process.stderr.write(`${defaultsNote(config, network)}\n`);
    const line = await withStore(
      config,
      async (store, opened) => {
        const root = bytesToHex(opened.genesisValidatorsRoot ?? new Uint8Array());
        return opened.initialized
          ? `slashing protection database ${store.location} initialized for ${network} (genesis validators root ${root}): it holds no history`
          : `slashing protection database ${store.location} was already initialized for ${network} (genesis validators root ${root}); nothing changed`;
      },
      { access: "write", initialize: true, argv: rawArgs },
    );
    process.stdout.write(`${line}\n`);
  },
});

const importCommand = defineCommand({
  meta: {
    name: "import",
    description: "Import an EIP-3076 interchange into the configured database",
    examples: [
      "sigil slashing import -c /etc/sigil/config.yaml --file slashing-protection.json",
      "sigil slashing import -c examples/dev.yaml --file - < slashing-protection.json",
    ],
    notes: [
      "Stop the signer first when the database is sqlite (one process writes the file). The whole file is refused, and nothing changed, if it is for another chain or malformed.",
      "A record more than antislashing.max_future_epochs epochs after the network's current epoch refuses the whole file, as signing such a message would be refused (recorded, it would end the validator's duties): --allow-future imports it anyway.",
    ],
  },
  args: {
    ...configArgs(SLASHING_SCOPE),
    ...fileArg("read"),
    ...ALLOW_FUTURE_ARG,
  },
  async run({ rawArgs }) {
    const { config, extras } = loadConfigOrExit(rawArgs, {
      extraFlags: { file: { type: "string" }, "allow-future": { type: "boolean" } },
      scope: SLASHING_SCOPE,
    });
    const file = extras.file as string | undefined;
    if (!file) fail("--file is required (use - for standard input)", EXIT_USAGE);
    // Before the database is opened: a wrong path is the command line's mistake.
    if (file !== "-") checkReadableFile(file);
    const input = file === "-" ? Bun.stdin.stream() : Bun.file(file).stream();
    const { report, location } = await withStore(
      config,
      async (store) => {
        const bound = importBound(config, extras["allow-future"] === true);
        try {
          const read = await readInterchange(input);
          const report = await store.importInterchange(bound ? withinBound(read, bound) : read);
          return { report, location: store.location };
        } catch (error) {
          if (error instanceof FutureRecordError)
            fail(`import refused, nothing was changed: ${error.message}${ALLOW_FUTURE_HINT}`);
          if (error instanceof SlashingImportError) {
            fail(`import refused, nothing was changed: ${error.message}`);
          }
          if ((error as NodeJS.ErrnoException).code !== undefined) {
            fail(
              `import refused, nothing was changed: cannot read ${file}: ${describeFsError(error)}`,
            );
          }
          throw error;
        }
      },
      { access: "write", argv: rawArgs },
    );
    const from = file === "-" ? "standard input" : resolve(file);
    process.stderr.write(`imported ${tally(report)} from ${from} into ${location}\n`);
  },
});

const exportCommand = defineCommand({
  meta: {
    name: "export",
    description: "Export the configured database as an EIP-3076 interchange",
    examples: [
      "sigil slashing export -c /etc/sigil/config.yaml --file slashing-protection.json",
      "sigil slashing export -c examples/dev.yaml --file - --pubkeys 0xa99a76ed7796f7be22d5b7e85deeb7c5677e88e511e0b337618f8c4eb61349b4bf2d153f649f7b53359fe8b94a38e44c",
    ],
    notes: [
      "Reads beside a running signer (sqlite included). The file is written whole or not at all; what was written is reported on standard error.",
    ],
  },
  args: {
    ...configArgs(SLASHING_SCOPE),
    ...fileArg("written"),
    pubkeys: {
      type: "string",
      valueHint: "0x…,0x…",
      description: "Only these validators (comma-separated, repeatable)",
    },
  },
  async run({ rawArgs }) {
    const { config, extras } = loadConfigOrExit(rawArgs, {
      extraFlags: { file: { type: "string" }, pubkeys: { type: "string", multiple: true } },
      scope: SLASHING_SCOPE,
    });
    const file = extras.file as string | undefined;
    if (!file) fail("--file is required (use - for standard output)", EXIT_USAGE);
    const pubkeys = parsePubkeys(extras.pubkeys as string[] | undefined);
    const written = await withStore(
      config,
      async (store) => {
        let source: InterchangeSource;
        try {
          source = await store.exportInterchange(pubkeys);
        } catch (error) {
          if (error instanceof NothingToExportError) fail(`export: ${error.message}`);
          throw error;
        }
        if (file === "-") {
          const counts = await writeInterchange(source, (c) => void process.stdout.write(c));
          return { counts, location: store.location };
        }
        // A device or a pipe (/dev/stdout, a FIFO) is written as it is: renaming a file over it
        // would replace it (as root, /dev/null with a regular file).
        const existing = statSync(file, { throwIfNoEntry: false });
        if (existing && !existing.isFile() && !existing.isDirectory()) {
          const writer = Bun.file(file).writer();
          const counts = await writeInterchange(source, (chunk) => void writer.write(chunk));
          await writer.end();
          return { counts, location: store.location };
        }
        // Written beside the target and renamed, so a failed export never leaves a truncated file.
        const temporary = `${file}.partial-${process.pid}`;
        const writer = Bun.file(temporary).writer();
        try {
          const counts = await writeInterchange(source, (chunk) => void writer.write(chunk));
          await writer.end();
          renameSync(temporary, file);
          return { counts, location: store.location };
        } catch (error) {
          rmSync(temporary, { force: true });
          throw error;
        }
      },
      { access: "read", argv: rawArgs },
    );
    // On standard error: with --file -, standard output is the interchange itself.
    const to = file === "-" ? "standard output" : resolve(file);
    const { counts, location } = written;
    process.stderr.write(`exported ${tally(counts)} from ${location} to ${to}\n`);
  },
});

function parsePubkeys(values: string[] | undefined): string[] | undefined {
  if (!values) return undefined;
  const keys = values
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
  for (const key of keys)
    if (!isPubkeyHex(key)) fail(`--pubkeys: "${key}" is not 0x + 96 hex characters`, EXIT_USAGE);
  return keys.map(normalizePubkey);
}

export const slashingCommand = defineCommand({
  meta: {
    name: "slashing",
    description:
      "Create the slashing protection database, import or export its data (EIP-3076 interchange), or repair its watermarks",
    examples: [
      "sigil slashing init -c /etc/sigil/config.yaml",
      "sigil slashing export -c /etc/sigil/config.yaml --file slashing-protection.json",
    ],
  },
  subCommands: {
    init: initCommand,
    import: importCommand,
    export: exportCommand,
    "watermark-repair": watermarkRepairCommand,
  },
});
