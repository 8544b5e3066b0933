import { renameSync, rmSync } from "node:fs";
import { defineCommand } from "citty";
import { readInterchange, writeInterchange } from "../antislashing/interchange";
import { openSlashingBackend } from "../antislashing/registry";
import {
  type InterchangeSource,
  NothingToExportError,
  SlashingImportError,
  type SlashingStore,
} from "../antislashing/store";
import type { Config } from "../config/schema";
import { createLogger, parseLogFilter, resolveColor } from "../observability/log";
import { isPubkeyHex, normalizePubkey } from "../wire/pubkey";
import { configArgs, loadConfigOrExit } from "./config-args";
import { EXIT_USAGE, fail } from "./exit";

const fileArg = {
  file: {
    type: "string",
    description: "Interchange file (EIP-3076 v5); - for standard input/output",
    required: false,
  },
} as const;

/** Runs `run` on the configured slashing store (logging at warn); exits 1 if it cannot be opened. */
export async function withStore<T>(
  config: Config,
  run: (store: SlashingStore) => Promise<T>,
): Promise<T> {
  const filter = parseLogFilter("warn");
  if (!filter.ok) throw new Error(filter.error);
  const logger = createLogger({
    filter: filter.filter,
    format: config.logging.format,
    color: resolveColor(config.logging.log_color, process.stderr.isTTY === true, process.env),
  });
  let store: SlashingStore;
  try {
    store = await openSlashingBackend(config.antislashing, logger);
  } catch (error) {
    fail(
      `cannot open the slashing protection database: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

const importCommand = defineCommand({
  meta: {
    name: "import",
    description: "Import an EIP-3076 interchange into the configured database",
  },
  args: { ...configArgs(), ...fileArg },
  async run({ rawArgs }) {
    const { config, extras } = loadConfigOrExit(rawArgs, { file: { type: "string" } });
    const file = extras.file as string | undefined;
    if (!file) fail("--file is required (use - for standard input)", EXIT_USAGE);
    const input = file === "-" ? Bun.stdin.stream() : Bun.file(file).stream();
    const report = await withStore(config, async (store) => {
      try {
        return await store.importInterchange(await readInterchange(input));
      } catch (error) {
        if (
          error instanceof SlashingImportError ||
          (error as NodeJS.ErrnoException).code === "ENOENT"
        ) {
          fail(`import refused, nothing was changed: ${(error as Error).message}`);
        }
        throw error;
      }
    });
    process.stderr.write(
      `imported ${report.validators} validators (${report.blocks} blocks, ${report.attestations} attestations)\n`,
    );
  },
});

const exportCommand = defineCommand({
  meta: {
    name: "export",
    description: "Export the configured database as an EIP-3076 interchange",
  },
  args: {
    ...configArgs(),
    ...fileArg,
    pubkeys: { type: "string", description: "Only these validators (comma-separated, repeatable)" },
  },
  async run({ rawArgs }) {
    const { config, extras } = loadConfigOrExit(rawArgs, {
      file: { type: "string" },
      pubkeys: { type: "string", multiple: true },
    });
    const file = extras.file as string | undefined;
    if (!file) fail("--file is required (use - for standard output)", EXIT_USAGE);
    const pubkeys = parsePubkeys(extras.pubkeys as string[] | undefined);
    await withStore(config, async (store) => {
      let source: InterchangeSource;
      try {
        source = await store.exportInterchange(pubkeys);
      } catch (error) {
        if (error instanceof NothingToExportError) fail(`export: ${error.message}`);
        throw error;
      }
      if (file === "-") {
        await writeInterchange(source, (chunk) => void process.stdout.write(chunk));
        return;
      }
      // Written beside the target and renamed, so a failed export never leaves a truncated file.
      const temporary = `${file}.partial-${process.pid}`;
      const writer = Bun.file(temporary).writer();
      try {
        await writeInterchange(source, (chunk) => void writer.write(chunk));
        await writer.end();
        renameSync(temporary, file);
      } catch (error) {
        rmSync(temporary, { force: true });
        throw error;
      }
    });
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
    description: "Import or export slashing protection data (EIP-3076 interchange)",
  },
  subCommands: { import: importCommand, export: exportCommand },
});
