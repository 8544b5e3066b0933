// `sigil migrate web3signer` against a real PostgreSQL holding Web3Signer's schema (created here
// from Web3Signer's migrations): after the migration, sigil refuses what Web3Signer would refuse,
// as an oracle written from Web3Signer's rules over its own tables decides it, probe by probe.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { openDynamoStore } from "../../src/antislashing/backends/dynamodb/store";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { hexToBytes } from "../../src/antislashing/encoding";
import { readInterchange, writeInterchange } from "../../src/antislashing/interchange";
import type { Decision, SlashingStore } from "../../src/antislashing/store";
import { migrateWeb3Signer } from "../../src/migrate/web3signer/migrate";
import { readWeb3Signer } from "../../src/migrate/web3signer/reader";
import { exported } from "../antislashing/support";
import { runSigilAsync, TempDir } from "../support/cli";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { registerTestSecret } from "../support/log-capture";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { type Clone, cloneScenarios, MAINNET_GVR, populate } from "./web3signer-fixture";
import {
  readWeb3SignerTables,
  type Web3SignerHigh,
  type Web3SignerRows,
  web3signerMaySignAttestation,
  web3signerMaySignBlock,
} from "./web3signer-oracle";
import { createWeb3SignerSchema } from "./web3signer-schema";

const dir = new TempDir();
const READER = "w3s_reader";
const PASSWORD = registerTestSecret(
  `w3s-${crypto.randomUUID().replaceAll("-", "")}`,
  "Web3Signer database password",
);
const GVR = hexToBytes(MAINNET_GVR);

let server: PostgresServer;
let dynamo: RunningDynamo;
const admins: postgres.Sql[] = [];
const clones = cloneScenarios();
let w3sUrl: string;
let tables: { validators: Map<string, Web3SignerRows>; high: Web3SignerHigh | null };

/** A fresh database with Web3Signer's schema at `version`, readable by the reader role. */
async function web3signerDatabase(version = 12): Promise<{ admin: postgres.Sql; url: string }> {
  const adminUrl = await server.createDatabase();
  const admin = postgres(adminUrl, { max: 2, onnotice: () => {} });
  admins.push(admin);
  await createWeb3SignerSchema(admin, version);
  const url = new URL(adminUrl);
  url.username = READER;
  url.password = PASSWORD;
  return { admin, url: url.toString() };
}

const grantReader = (admin: postgres.Sql) =>
  admin.unsafe(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${READER}`);

beforeAll(async () => {
  [server, dynamo] = await Promise.all([startPostgres(), startDynamo()]);
  const root = postgres(server.url, { max: 1, onnotice: () => {} });
  admins.push(root);
  await root.unsafe(`CREATE ROLE ${READER} LOGIN PASSWORD '${PASSWORD}'`);
  const { admin, url } = await web3signerDatabase();
  await populate(admin, clones);
  await grantReader(admin);
  w3sUrl = url;
  tables = await readWeb3SignerTables(admin);
}, 180_000);

afterAll(async () => {
  await Promise.all(admins.map((a) => a.end({ timeout: 1 })));
  await Promise.all([server?.stop(), dynamo?.stop()]);
  dir.remove();
});

function sqliteConfig(name: string, extra = ""): { config: string; path: string } {
  const path = join(dir.path, `${name}.sqlite`);
  const config = dir.file(
    `${name}.yaml`,
    `antislashing: {backend: sqlite, path: "${path}"}\n${extra}`,
  );
  return { config, path };
}

const migrateCli = (config: string, url: string, ...flags: string[]) =>
  runSigilAsync(["migrate", "web3signer", "-c", config, "--db-url", "env:W3S_DB_URL", ...flags], {
    W3S_DB_URL: url,
  });

const migrateInProcess = (store: SlashingStore, url = w3sUrl) =>
  readWeb3Signer(url, "--db-url", (snapshot) =>
    migrateWeb3Signer(snapshot, store, { ignoreHighWatermark: false, dryRun: false }),
  );

interface Tally {
  probes: number;
  agree: number;
  /** Refused by sigil, signed by Web3Signer. */
  stricter: number;
  /** The scenarios those probes came from. */
  stricterIn: Set<string>;
  mismatches: string[];
}

const refusedBy = (d: Decision) => d.outcome === "refused";
/** A Web3Signer watermark above 0 becomes a floor (floorsOf); at 0 or missing there is none. */
const vouched = (watermark: bigint | null | undefined) => watermark != null && watermark > 0n;
const min = (values: bigint[]) => values.reduce((a, b) => (a < b ? a : b));
const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;

/**
 * Sends every clone its probes and compares sigil's decision with the oracle's. Complete stores
 * must agree exactly, except for a probe older than the oldest migrated record of a side that has
 * no Web3Signer watermark (legacy records, from before Web3Signer kept watermarks): with nothing
 * vouching for the history below that record, sigil's EIP-3076 rules refuse it (conditions 2, 4,
 * 5) where Web3Signer has no lower bound. Where Web3Signer has a watermark, its floor is sigil's
 * watermark too, also between the floor and the oldest record. A minimal store must refuse at
 * least what Web3Signer refuses. A disabled validator's history is compared as if enabled: sigil
 * has no such switch (the CLI warns instead).
 */
async function compare(
  store: SlashingStore,
  strategy: "complete" | "minimal",
  probed: readonly Clone[] = clones,
  oracle = tables,
): Promise<Tally> {
  const tally: Tally = { probes: 0, agree: 0, stricter: 0, stricterIn: new Set(), mismatches: [] };
  const judge = (
    clone: Clone,
    what: string,
    w3sSigns: boolean,
    unvouched: boolean,
    d: Decision,
  ) => {
    tally.probes += 1;
    const refused = refusedBy(d);
    if (refused === !w3sSigns) tally.agree += 1;
    else if (refused) {
      tally.stricter += 1;
      tally.stricterIn.add(clone.scenario.name);
    }
    const expectedRefused = strategy === "complete" ? !w3sSigns || unvouched : !w3sSigns || refused;
    if (refused !== expectedRefused) {
      tally.mismatches.push(
        `${clone.scenario.name}: ${what}: Web3Signer ${w3sSigns ? "signs" : "refuses"}, sigil ${d.outcome}${d.outcome === "refused" ? ` (${d.reason})` : ""}`,
      );
    }
  };
  const probe = async (clone: Clone) => {
    const rows = oracle.validators.get(clone.pubkey);
    if (rows === undefined) throw new Error(`clone ${clone.pubkey} is not in Web3Signer's tables`);
    const asEnabled = { ...rows, enabled: true };
    if (clone.block !== undefined) {
      const { slot, root } = clone.block;
      const signs = web3signerMaySignBlock(asEnabled, oracle.high, slot, hex(root));
      const unvouched =
        !vouched(rows.lowWatermark?.slot) &&
        rows.blocks.length > 0 &&
        slot < min(rows.blocks.map((b) => b.slot));
      const d = await store.checkAndInsertBlock(GVR, {
        pubkey: clone.pubkey,
        slot,
        signingRoot: root,
      });
      judge(clone, `block ${slot} ${hex(root).slice(0, 10)}`, signs, unvouched, d);
    }
    if (clone.attestation !== undefined) {
      const { source, target, root } = clone.attestation;
      const signs = web3signerMaySignAttestation(asEnabled, oracle.high, source, target, hex(root));
      const unvouched =
        rows.attestations.length > 0 &&
        ((!vouched(rows.lowWatermark?.sourceEpoch) &&
          source < min(rows.attestations.map((a) => a.sourceEpoch))) ||
          (!vouched(rows.lowWatermark?.targetEpoch) &&
            target < min(rows.attestations.map((a) => a.targetEpoch))));
      const d = await store.checkAndInsertAttestation(GVR, {
        pubkey: clone.pubkey,
        sourceEpoch: source,
        targetEpoch: target,
        signingRoot: root,
      });
      judge(
        clone,
        `attestation ${source}→${target} ${hex(root).slice(0, 10)}`,
        signs,
        unvouched,
        d,
      );
    }
  };
  for (let i = 0; i < probed.length; i += 32) {
    await Promise.all(probed.slice(i, i + 32).map(probe));
  }
  return tally;
}

const LEGACY = "legacy records, no watermark";
const recordCount = (pick: (c: Clone) => number) => clones.reduce((sum, c) => sum + pick(c), 0);
const PROBES = recordCount((c) => (c.block ? 1 : 0) + (c.attestation ? 1 : 0));

describe("sigil migrate web3signer", () => {
  test("the oracle follows Web3Signer's rules (hand-checked cases)", () => {
    const pick = (name: string) => {
      const clone = clones.find((c) => c.scenario.name === name);
      const rows = clone && tables.validators.get(clone.pubkey);
      if (rows === undefined) throw new Error(name);
      return rows;
    };
    const other = `0x${"ee".repeat(32)}`;
    const pruned = pick("pruned");
    // Below the slot watermark (strict), at it with no record, at a record with another root.
    expect(web3signerMaySignBlock(pruned, null, 24n, other)).toBe(false);
    expect(web3signerMaySignBlock(pruned, null, 25n, other)).toBe(true);
    expect(web3signerMaySignBlock(pruned, null, 30n, other)).toBe(false);
    expect(web3signerMaySignBlock(pruned, null, 31n, other)).toBe(true);
    // Source below the watermark; surrounding (7, 9); clear of everything; surrounded by nothing.
    expect(web3signerMaySignAttestation(pruned, null, 5n, 10n, other)).toBe(false);
    expect(web3signerMaySignAttestation(pruned, null, 6n, 10n, other)).toBe(false);
    expect(web3signerMaySignAttestation(pruned, null, 7n, 10n, other)).toBe(true);
    expect(web3signerMaySignAttestation(pruned, null, 7n, 8n, other)).toBe(true);
    // Target below the watermark (strict) where no record is.
    const above = pick("watermark above older records");
    expect(web3signerMaySignAttestation(above, null, 5n, 5n, other)).toBe(false);
    expect(web3signerMaySignAttestation(above, null, 5n, 6n, other)).toBe(true);
    expect(web3signerMaySignBlock(above, null, 19n, other)).toBe(false);
    expect(web3signerMaySignBlock(above, null, 20n, other)).toBe(true);
    // Records without roots conflict with everything at their slot / target.
    const rootless = pick("imported without signing roots");
    expect(web3signerMaySignBlock(rootless, null, 18n, other)).toBe(false);
    expect(web3signerMaySignAttestation(rootless, null, 4n, 6n, other)).toBe(false);
    // Disabled: nothing; a high watermark: nothing at or beyond it.
    expect(web3signerMaySignBlock(pick("disabled"), null, 40n, other)).toBe(false);
    const open = pick("nothing");
    expect(web3signerMaySignBlock(open, { slot: 40n, epoch: 9n }, 40n, other)).toBe(false);
    expect(web3signerMaySignBlock(open, { slot: 40n, epoch: 9n }, 39n, other)).toBe(true);
    expect(web3signerMaySignAttestation(open, { slot: 40n, epoch: 9n }, 8n, 9n, other)).toBe(false);
  });

  test("through the CLI into sqlite: every record and watermark, then the same refusals", async () => {
    const { config, path } = sqliteConfig("cli");
    const created = await runSigilAsync(["slashing", "init", "-c", config]);
    expect(created.code, created.stderr).toBe(0);
    const result = await migrateCli(config, w3sUrl);
    expect(result.code, result.stderr).toBe(0);
    const field = (name: string) =>
      Number(result.stdout.match(new RegExp(`${name}\\s+(\\d+)`))?.[1]);
    expect(field("validators")).toBe(clones.length);
    expect(field("blocks")).toBe(recordCount((c) => c.scenario.blocks.length));
    expect(field("attestations")).toBe(recordCount((c) => c.scenario.attestations.length));
    const positive = (v: bigint | null) => v !== null && v > 0n;
    expect(field("low watermarks \\(floors\\)")).toBe(
      clones.filter((c) => {
        const w = c.scenario.lowWatermark;
        return (
          w !== null && (positive(w.slot) || positive(w.sourceEpoch) || positive(w.targetEpoch))
        );
      }).length,
    );
    const disabled = clones.filter((c) => !c.scenario.enabled);
    expect(field("disabled validators")).toBe(disabled.length);
    for (const clone of disabled)
      expect(result.stderr).toContain(`validator ${clone.pubkey} is disabled`);
    // Legacy records are the one place sigil refuses more: named (the first 20), then counted.
    const legacy = clones.filter((c) => c.scenario.name === LEGACY);
    const legacyNamed = clones.filter(
      (c) => c.scenario.name === LEGACY && result.stderr.includes(`validator ${c.pubkey} has`),
    );
    expect(legacyNamed).toHaveLength(Math.min(20, legacy.length));
    if (legacy.length > 20) {
      expect(result.stderr).toContain(`${legacy.length - 20} more validators have legacy records`);
    }
    expect(result.stderr.match(/no low watermark \(legacy data\)/g)).toHaveLength(
      legacyNamed.length,
    );
    expect(`${result.stdout}${result.stderr}`).not.toContain(PASSWORD);

    const store = await openSqliteStore(path, { create: true });
    try {
      // Every record comes over, a record below the watermark without its root (Web3Signer never
      // re-signs it); the export is a valid interchange.
      const records = await exported(store);
      for (const clone of clones) {
        const rows = tables.validators.get(clone.pubkey);
        const mark = rows?.lowWatermark;
        const below = (v: bigint, w: bigint | null | undefined) => w != null && v < w;
        const expected = {
          blocks: (rows?.blocks ?? [])
            .map((b) => `${b.slot}@${below(b.slot, mark?.slot) ? "-" : (b.root ?? "-")}`)
            .sort(),
          attestations: (rows?.attestations ?? [])
            .map((a) => {
              const old =
                below(a.sourceEpoch, mark?.sourceEpoch) || below(a.targetEpoch, mark?.targetEpoch);
              return `${a.sourceEpoch}->${a.targetEpoch}@${old ? "-" : (a.root ?? "-")}`;
            })
            .sort(),
        };
        const empty = expected.blocks.length === 0 && expected.attestations.length === 0;
        expect(records.get(clone.pubkey)).toEqual(empty ? undefined : expected);
      }
      let text = "";
      await writeInterchange(await store.exportInterchange(), (chunk) => {
        text += chunk;
      });
      const again = await openSqliteStore(join(dir.path, "reimport.sqlite"), { create: true });
      try {
        const report = await again.importInterchange(await readInterchange(text));
        expect(report.validators).toBe(clones.length);
      } finally {
        await again.close();
      }

      const tally = await compare(store, "complete");
      expect(tally.mismatches).toEqual([]);
      expect(tally.probes).toBe(PROBES);
      // The one known difference exists in the data, and only there: legacy records.
      expect([...tally.stricterIn]).toEqual([LEGACY]);
      expect(tally.agree + tally.stricter).toBe(tally.probes);
      console.log(
        `sqlite: ${clones.length} validators, ${tally.probes} probes, ${tally.agree} as Web3Signer decides, ${tally.stricter} refused below the oldest legacy record (no watermark) where Web3Signer signs`,
      );
    } finally {
      await store.close();
    }
  }, 180_000);

  test("into postgres: the same refusals", async () => {
    const store = await openPostgresStore({
      create: true,
      url: await server.createSchema(),
      poolSize: 8,
      forceIpv4: false,
    });
    try {
      const report = await migrateInProcess(store);
      expect(report.validators).toBe(clones.length);
      const tally = await compare(store, "complete");
      expect(tally.mismatches).toEqual([]);
      expect(tally.probes).toBe(PROBES);
      expect([...tally.stricterIn]).toEqual([LEGACY]);
      console.log(
        `postgres: ${tally.probes} probes, ${tally.agree} as Web3Signer decides, ${tally.stricter} stricter (below the oldest legacy record)`,
      );
    } finally {
      await store.close();
    }
  }, 180_000);

  test("into dynamodb (minimal strategy): never signs what Web3Signer refuses", async () => {
    // dynalite is slow: a sample of the clones (every scenario, a sixth of its probes) in a
    // database of their own.
    const sample = clones.filter((_, i) => i % 6 === 0);
    const { admin, url } = await web3signerDatabase();
    await populate(admin, sample);
    await grantReader(admin);
    await dynamo.createSlashingTable("migrated");
    const store = await openDynamoStore({ table: "migrated", client: dynamo.client() });
    try {
      expect((await migrateInProcess(store, url)).validators).toBe(sample.length);
      const tally = await compare(store, "minimal", sample, await readWeb3SignerTables(admin));
      expect(tally.mismatches).toEqual([]);
      console.log(
        `dynamodb: ${tally.probes} probes, ${tally.agree} as Web3Signer decides, ${tally.stricter} stricter (minimal strategy)`,
      );
    } finally {
      await store.close();
    }
  }, 180_000);
});
