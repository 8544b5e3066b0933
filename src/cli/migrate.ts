import { configuredNetwork } from "../app/slashing";
import type { Config } from "../config/schema";
import { resolveSecret } from "../config/validate";
import {
  describeHigh,
  MigrationRefusedError,
  type MigrationReport,
  migrateWeb3Signer,
} from "../migrate/web3signer/migrate";
import { counted } from "../wire/count";
import { toHex } from "../wire/hex";
import { defineCommand } from "./command";
import { configArgs, loadConfigOrExit, SLASHING_SCOPE } from "./config-args";
import { EXIT_USAGE, fail, printWarnings } from "./exit";
import { ALLOW_FUTURE_ARG, ALLOW_FUTURE_HINT, importBound, withStore } from "./slashing";

const FLAGS = {
  "db-url": { type: "string" },
  "dry-run": { type: "boolean" },
  "ignore-high-watermark": { type: "boolean" },
  "allow-future": { type: "boolean" },
} as const;

const web3signerCommand = defineCommand({
  meta: {
    name: "web3signer",
    description:
      "Import a Web3Signer PostgreSQL slashing protection database (records and low watermarks) into the configured one",
    examples: [
      "sigil migrate web3signer -c /etc/sigil/config.yaml --db-url env:WEB3SIGNER_DB_URL --dry-run",
      "sigil migrate web3signer -c /etc/sigil/config.yaml --db-url env:WEB3SIGNER_DB_URL",
    ],
    notes: [
      "Stop Web3Signer first, and the signer too when sigil's database is sqlite. --dry-run reads both databases and reports what it would migrate; it writes nothing. docs/migrate-web3signer.md has the whole move.",
      "A record more than antislashing.max_future_epochs epochs after the network's current epoch refuses the whole migration, as `sigil slashing import` refuses such a file: --allow-future migrates it anyway.",
    ],
  },
  args: {
    ...configArgs(SLASHING_SCOPE),
    "db-url": {
      type: "string",
      required: true,
      description:
        "Web3Signer's database, postgres://user:password@host:port/db (TLS unless ?sslmode=disable), or env:VAR to read it from a variable",
      valueHint: "url|env:VAR",
    },
    "dry-run": { type: "boolean", description: "Read and check everything, write nothing" },
    "ignore-high-watermark": {
      type: "boolean",
      description: "Migrate although Web3Signer has a high watermark, which sigil does not keep",
    },
    ...ALLOW_FUTURE_ARG,
  },
  async run({ rawArgs }) {
    const { config, extras } = loadConfigOrExit(rawArgs, {
      extraFlags: FLAGS,
      scope: SLASHING_SCOPE,
    });
    const dryRun = extras["dry-run"] === true;
    // Loaded here, so that no other command (serve above all) loads the PostgreSQL client.
    const { checkDatabaseUrl, readWeb3Signer, redact, Web3SignerDatabaseError } = await import(
      "../migrate/web3signer/reader"
    );
    const url = databaseUrl(extras["db-url"], (value) => {
      try {
        checkDatabaseUrl(value, "--db-url");
      } catch (error) {
        if (error instanceof Web3SignerDatabaseError) fail(error.message, EXIT_USAGE);
        throw error;
      }
    });
    // A dry run writes nothing: it reads sigil's database as export does, beside a running signer.
    const report = await withStore(
      config,
      (store) =>
        readWeb3Signer(url, "--db-url", (snapshot) =>
          migrateWeb3Signer(snapshot, store, {
            network: knownNetwork(config),
            ignoreHighWatermark: extras["ignore-high-watermark"] === true,
            futureBound: importBound(config, extras["allow-future"] === true),
            dryRun,
          }),
        ).catch((error: unknown) => {
          const known =
            error instanceof MigrationRefusedError || error instanceof Web3SignerDatabaseError;
          const message = error instanceof Error ? error.message : String(error);
          const hint =
            error instanceof MigrationRefusedError && error.future ? ALLOW_FUTURE_HINT : "";
          fail(redact(known ? `${message}${hint}` : `migration failed: ${message}`, url));
        }),
      { access: dryRun ? "read" : "write", argv: rawArgs },
    );
    printWarnings(warnings(report));
    process.stdout.write(summary(report, config.antislashing.backend));
  },
});

/** `--db-url` as given or read from `env:VAR`; exits 2 (nothing touched) when it cannot be used. */
function databaseUrl(raw: unknown, check: (url: string) => void): string {
  if (typeof raw !== "string" || raw === "") {
    fail("--db-url is required (postgres://user:password@host:port/db, or env:VAR)", EXIT_USAGE);
  }
  const resolved = resolveSecret(raw, process.env);
  if (!resolved.ok)
    fail(`--db-url: environment variable ${resolved.variable} is not set`, EXIT_USAGE);
  check(resolved.value);
  if (!raw.startsWith("env:") && URL.canParse(raw) && new URL(raw).password !== "") {
    printWarnings([
      "--db-url carries a password on the command line, where other users of this host can see it; prefer --db-url env:VAR",
    ]);
  }
  return resolved.value;
}

/** The configured network's root; none for a custom network whose network_config gives none. */
function knownNetwork(config: Config): { name: string; genesisValidatorsRoot: string } | undefined {
  const network = configuredNetwork(config);
  const root = network.genesisValidatorsRoot;
  return root === undefined
    ? undefined
    : { name: network.name, genesisValidatorsRoot: toHex(root) };
}

/** Legacy validators named one by one before the rest are only counted. */
const UNVOUCHED_NAMED = 20;

function warnings(report: MigrationReport): string[] {
  const out = report.disabled.map(
    (pubkey) =>
      `validator ${pubkey} is disabled in Web3Signer: its history is migrated, and sigil signs for it once its key is loaded`,
  );
  const named = report.unvouched.slice(0, UNVOUCHED_NAMED);
  for (const pubkey of named) {
    out.push(
      `validator ${pubkey} has Web3Signer records but no low watermark (legacy data): sigil refuses messages older than its oldest record (EIP-3076), which Web3Signer would sign`,
    );
  }
  if (report.unvouched.length > named.length) {
    out.push(
      `${counted(report.unvouched.length - named.length, "more validator has", "more validators have")} legacy records without a low watermark (the same applies)`,
    );
  }
  if (report.droppedHighWatermark !== null) {
    out.push(
      `Web3Signer's high watermark (${describeHigh(report.droppedHighWatermark)}) is not migrated: sigil signs beyond it`,
    );
  }
  return out;
}

function summary(report: MigrationReport, backend: string): string {
  const verb = report.dryRun ? "would migrate (dry run, nothing written)" : "migrated";
  return [
    `${verb} from Web3Signer (database_version ${report.databaseVersion}) into ${backend}:`,
    `  genesis validators root  ${report.genesisValidatorsRoot}`,
    `  validators               ${report.validators}`,
    `  blocks                   ${report.blocks}`,
    `  attestations             ${report.attestations}`,
    `  low watermarks (floors)  ${report.watermarks}`,
    `  disabled validators      ${report.disabled.length}`,
    "",
  ].join("\n");
}

export const migrateCommand = defineCommand({
  meta: {
    name: "migrate",
    description: "Move another signer's slashing protection data into sigil",
    examples: [
      "sigil migrate web3signer -c /etc/sigil/config.yaml --db-url env:WEB3SIGNER_DB_URL --dry-run",
    ],
  },
  subCommands: { web3signer: web3signerCommand },
});
