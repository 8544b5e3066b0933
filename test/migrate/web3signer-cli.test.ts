// `sigil migrate web3signer` refusing what it cannot do: one line on stderr, a non-zero exit, and
// sigil's database exactly as it was. Also: dry run, the high watermark, an older Web3Signer
// schema, and the database password never shown.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { hexToBytes } from "../../src/antislashing/encoding";
import { NothingToExportError, type SlashingStore } from "../../src/antislashing/store";
import { exported } from "../antislashing/support";
import { type CliResult, runSigilAsync, TempDir } from "../support/cli";
import { registerTestSecret } from "../support/log-capture";
import { freePort, type PostgresServer, startPostgres } from "../support/postgres";
import { cloneScenarios, MAINNET_GVR, populate } from "./web3signer-fixture";
import { readWeb3SignerTables, web3signerMaySignBlock } from "./web3signer-oracle";
import { createWeb3SignerSchema } from "./web3signer-schema";

const dir = new TempDir();
const READER = "w3s_cli_reader";
const PASSWORD = registerTestSecret(
  `w3s-${crypto.randomUUID().replaceAll("-", "")}`,
  "Web3Signer database password",
);
const GVR = hexToBytes(MAINNET_GVR);
const OTHER_GVR = new Uint8Array(32).fill(0x42);

let server: PostgresServer;
const admins: postgres.Sql[] = [];
/** One validator of each scenario. */
const few = (() => {
  const seen = new Set<string>();
  return cloneScenarios().filter((c) => !seen.has(c.scenario.name) && seen.add(c.scenario.name));
})();

beforeAll(async () => {
  server = await startPostgres();
  const root = postgres(server.url, { max: 1, onnotice: () => {} });
  admins.push(root);
  await root.unsafe(`CREATE ROLE ${READER} LOGIN PASSWORD '${PASSWORD}'`);
}, 120_000);

afterAll(async () => {
  await Promise.all(admins.map((a) => a.end({ timeout: 1 })));
  await server?.stop();
  dir.remove();
});

/** A Web3Signer database at `version`, filled by `fill` (default: one validator per scenario). */
async function web3signer(
  options: { version?: number; fill?: (admin: postgres.Sql) => Promise<unknown> } = {},
): Promise<{ admin: postgres.Sql; url: string }> {
  const adminUrl = await server.createDatabase();
  const admin = postgres(adminUrl, { max: 2, onnotice: () => {} });
  admins.push(admin);
  await createWeb3SignerSchema(admin, options.version ?? 12);
  await (options.fill ?? ((sql) => populate(sql, few)))(admin);
  await admin.unsafe(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${READER}`);
  const url = new URL(adminUrl);
  url.username = READER;
  url.password = PASSWORD;
  return { admin, url: url.toString() };
}

let configs = 0;
/** A sigil configuration and its database, created as operators do: `sigil slashing init`. */
async function sqliteConfig(extra = ""): Promise<{ config: string; path: string }> {
  configs += 1;
  const path = join(dir.path, `sigil-${configs}.sqlite`);
  const config = dir.file(
    `sigil-${configs}.yaml`,
    `antislashing: {backend: sqlite, path: "${path}"}\n${extra}`,
  );
  await init(config);
  return { config, path };
}

async function init(config: string): Promise<void> {
  const created = await runSigilAsync(["slashing", "init", "-c", config]);
  expect(created.code, created.stderr).toBe(0);
}

async function migrate(config: string, url: string, ...flags: string[]): Promise<CliResult> {
  const result = await runSigilAsync(
    ["migrate", "web3signer", "-c", config, "--db-url", "env:W3S_DB_URL", ...flags],
    { W3S_DB_URL: url },
  );
  expect(`${result.stdout}${result.stderr}`).not.toContain(PASSWORD);
  return result;
}

/** A refusal: exit 1, one line naming the reason (after the store's own log lines, if any). */
function expectRefused(result: CliResult, reason: RegExp): void {
  expect(result.code, result.stdout).toBe(1);
  const reasons = result.stderr.split("\n").filter((line) => line.startsWith("sigil: "));
  expect(reasons).toHaveLength(1);
  expect(reasons[0]).toMatch(reason);
  expect(result.stdout).toBe("");
}

/** sigil's records per validator, or "empty" when it holds none. */
async function contents(open: () => Promise<SlashingStore>): Promise<unknown> {
  const store = await open();
  try {
    const records = await exported(store);
    return records.size === 0 ? "empty" : records;
  } catch (error) {
    if (error instanceof NothingToExportError) return "empty";
    throw error;
  } finally {
    await store.close();
  }
}

describe("sigil migrate web3signer: refusals leave sigil's database as it was", () => {
  test("a Web3Signer database of another chain than sigil's", async () => {
    const { url } = await web3signer();
    // sigil's database belongs to a devnet; Web3Signer's to mainnet.
    const devnet = `network_config: {genesis_validators_root: "0x${"42".repeat(32)}"}\n`;
    const { config, path } = await sqliteConfig(devnet);
    const seeded = await openSqliteStore(path, { create: false });
    await seeded.checkAndInsertBlock(OTHER_GVR, {
      pubkey: few[0]?.pubkey ?? "",
      slot: 5n,
      signingRoot: new Uint8Array(32).fill(1),
    });
    await seeded.close();
    const before = await contents(() => openSqliteStore(path, { create: false }));
    expectRefused(
      await migrate(config, url),
      new RegExp(
        `genesis validators root ${MAINNET_GVR}, but sigil is configured for network mainnet \\(with network_config\\) \\(0x${"42".repeat(32)}\\)`,
      ),
    );
    expect(await contents(() => openSqliteStore(path, { create: false }))).toEqual(before);
  }, 60_000);

  test("sigil's database of another chain than its configuration: exit 2 before reading anything", async () => {
    const { url } = await web3signer();
    const { path } = await sqliteConfig(
      `network_config: {genesis_validators_root: "0x${"42".repeat(32)}"}\n`,
    );
    const mainnet = dir.file(
      "mainnet-on-devnet.yaml",
      `antislashing: {backend: sqlite, path: "${path}"}\n`,
    );
    const result = await migrate(mainnet, url);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `belongs to the chain with genesis validators root 0x${"42".repeat(32)}`,
    );
    expect(result.stderr).toContain(MAINNET_GVR);
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");
  }, 60_000);

  test("a Web3Signer database of another network than sigil's configuration", async () => {
    const { url } = await web3signer();
    const { config, path } = await sqliteConfig("network: hoodi\n");
    expectRefused(await migrate(config, url), /configured for network hoodi/);
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");
  }, 60_000);

  test("not a Web3Signer schema: a missing table, an unknown database_version, no root", async () => {
    const { config, path } = await sqliteConfig();
    const missing = await web3signer({
      fill: (sql) => sql`DROP TABLE low_watermarks`,
    });
    expectRefused(
      await migrate(config, missing.url),
      /not a Web3Signer slashing protection database .*low_watermarks missing/,
    );
    const newer = await web3signer({
      fill: (sql) => sql`UPDATE database_version SET version = 13 WHERE id = 1`,
    });
    expectRefused(await migrate(config, newer.url), /database_version 13 is newer than the 12/);
    const unused = await web3signer({ fill: async () => {} });
    expectRefused(
      await migrate(config, unused.url),
      /no genesis validators root.*nothing to migrate/,
    );
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");
  }, 60_000);

  test("bad, unreachable or wrongly authenticated URLs; the password is never shown", async () => {
    const { url } = await web3signer();
    const { config, path } = await sqliteConfig();
    const bad = await migrate(config, "mysql://root:secret@127.0.0.1/w3s");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--db-url must start with postgres:// or postgresql://");
    expect(bad.stderr).not.toContain("secret");

    const closed = new URL(url);
    closed.port = String(await freePort());
    expectRefused(await migrate(config, closed.toString()), /cannot read the Web3Signer database/);

    const wrong = new URL(url);
    wrong.password = registerTestSecret(`wrong-${crypto.randomUUID()}`, "wrong database password");
    const denied = await migrate(config, wrong.toString());
    expectRefused(denied, /password authentication failed/);
    expect(denied.stderr).not.toContain(wrong.password);

    const missingVariable = await runSigilAsync([
      "migrate",
      "web3signer",
      "-c",
      config,
      "--db-url",
      "env:W3S_NOT_SET",
    ]);
    expect(missingVariable.code).toBe(2);
    expect(missingVariable.stderr).toContain("environment variable W3S_NOT_SET is not set");
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");
  }, 60_000);

  test("a bad row part-way through: nothing is imported, on sqlite and on postgres", async () => {
    // The last validator's block has a 31-byte root: its predecessors were already streamed.
    const { url } = await web3signer({
      fill: async (sql) => {
        await populate(sql, few);
        await sql`UPDATE signed_blocks SET signing_root = decode(repeat('ab', 31), 'hex')
          WHERE validator_id = (SELECT max(validator_id) FROM signed_blocks)`;
      },
    });
    const { config, path } = await sqliteConfig();
    expectRefused(await migrate(config, url), /validator id \d+: a signing_root is not 32 bytes/);
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");

    const pgUrl = await server.createSchema();
    const pgConfig = dir.file(
      "postgres.yaml",
      `antislashing: {backend: postgres, url: "${pgUrl}"}\n`,
    );
    await init(pgConfig);
    expectRefused(await migrate(pgConfig, url), /a signing_root is not 32 bytes/);
    const open = () =>
      openPostgresStore({ create: true, url: pgUrl, poolSize: 1, forceIpv4: false });
    expect(await contents(open)).toBe("empty");
  }, 60_000);

  test("the noop backend keeps nothing: refused", async () => {
    const { url } = await web3signer();
    const config = dir.file("noop.yaml", "antislashing: {backend: noop}\n");
    expectRefused(await migrate(config, url), /backend is noop/);
  }, 60_000);
});

describe("sigil migrate web3signer: options and older databases", () => {
  test("--dry-run reads and checks everything and writes nothing", async () => {
    const { url } = await web3signer();
    const { config, path } = await sqliteConfig();
    const result = await migrate(config, url, "--dry-run");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("would migrate (dry run, nothing written)");
    expect(result.stdout).toMatch(new RegExp(`validators\\s+${few.length}\\n`));
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");
  }, 60_000);

  test("a high watermark: refused unless --ignore-high-watermark, then sigil signs beyond it", async () => {
    const high = { slot: 1000n, epoch: 100n };
    const { admin, url } = await web3signer({ fill: (sql) => populate(sql, few, { high }) });
    const { config, path } = await sqliteConfig();
    expectRefused(
      await migrate(config, url),
      /high watermark \(slot 1000, epoch 100\).*--ignore-high-watermark/,
    );
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");

    const result = await migrate(config, url, "--ignore-high-watermark");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("high watermark (slot 1000, epoch 100) is not migrated");
    // The documented difference: Web3Signer refuses at the high watermark, sigil does not.
    const tables = await readWeb3SignerTables(admin);
    const open = few.find((c) => c.scenario.name === "nothing");
    const rows = open && tables.validators.get(open.pubkey);
    if (open === undefined || rows === undefined) throw new Error("no validator without history");
    const r = new Uint8Array(32).fill(9);
    expect(web3signerMaySignBlock(rows, tables.high, 1000n, `0x${"09".repeat(32)}`)).toBe(false);
    const store = await openSqliteStore(path, { create: false });
    try {
      const d = await store.checkAndInsertBlock(GVR, {
        pubkey: open.pubkey,
        slot: 1000n,
        signingRoot: r,
      });
      expect(d.outcome).toBe("new");
    } finally {
      await store.close();
    }
  }, 60_000);

  test("a far-future record (antislashing.max_future_epochs): refused as an import is, unless --allow-future", async () => {
    const U64_MAX = "18446744073709551615";
    let pubkey = "";
    const { url } = await web3signer({
      fill: async (sql) => {
        await populate(sql, few);
        // One attestation of the first validator with history gets the farthest target epoch.
        const [row] = await sql<{ key: string; source: string }[]>`
          UPDATE signed_attestations SET target_epoch = ${U64_MAX}::numeric
          WHERE (validator_id, source_epoch, target_epoch) = (
            SELECT validator_id, source_epoch, target_epoch FROM signed_attestations
            ORDER BY validator_id, target_epoch DESC LIMIT 1)
          RETURNING source_epoch::text AS source,
            (SELECT encode(public_key, 'hex') FROM validators WHERE id = validator_id) AS key`;
        pubkey = `0x${row?.key}`;
        return row;
      },
    });
    const { config, path } = await sqliteConfig();
    const refusal = new RegExp(
      `^sigil: import refused, nothing was changed: validator ${pubkey}: attestation source epoch \\d+, target epoch ${U64_MAX} is more than 2 epochs after the current epoch \\d+ \\(antislashing.max_future_epochs\\); to import such records anyway, add --allow-future$`,
    );
    expectRefused(await migrate(config, url), refusal);
    expectRefused(await migrate(config, url, "--dry-run"), refusal);
    expect(await contents(() => openSqliteStore(path, { create: false }))).toBe("empty");

    const allowed = await migrate(config, url, "--allow-future");
    expect(allowed.code, allowed.stderr).toBe(0);
    const records = (await contents(() => openSqliteStore(path, { create: false }))) as Map<
      string,
      { attestations: string[] }
    >;
    const attestations = records.get(pubkey)?.attestations ?? [];
    expect(attestations.some((a) => a.includes(`->${U64_MAX}@`))).toBe(true);
  }, 60_000);

  test("an older Web3Signer (database_version 9: no enabled column, no high watermark)", async () => {
    const enabled = few.filter((c) => c.scenario.enabled);
    const { url } = await web3signer({
      version: 9,
      fill: (sql) => populate(sql, enabled, { enabledColumn: false }),
    });
    const { config, path } = await sqliteConfig();
    const result = await migrate(config, url);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("database_version 9");
    expect(result.stdout).toMatch(/disabled validators\s+0\n/);
    const records = (await contents(() => openSqliteStore(path, { create: false }))) as Map<
      string,
      unknown
    >;
    const withRecords = enabled.filter(
      (c) => c.scenario.blocks.length + c.scenario.attestations.length > 0,
    );
    expect([...records.keys()].sort()).toEqual(withRecords.map((c) => c.pubkey).sort());
  }, 60_000);

  test("a password written on the command line is warned about and not shown", async () => {
    const { url } = await web3signer();
    const { config } = await sqliteConfig();
    const result = await runSigilAsync([
      "migrate",
      "web3signer",
      "-c",
      config,
      "--db-url",
      url,
      "--dry-run",
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("--db-url carries a password on the command line");
    expect(`${result.stdout}${result.stderr}`).not.toContain(PASSWORD);
  }, 60_000);
});
