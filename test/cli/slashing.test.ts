import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { runSigil, sigilCommand, TempDir } from "../support/cli";
import { captureProcessOutput } from "../support/log-capture";
import { INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

const GVR = `0x${"04".repeat(32)}`;
const OTHER_GVR = `0x${"05".repeat(32)}`;
const MAINNET_GVR = "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95";
const [KEY_A = "", KEY_B = ""] = INTEROP_KEYS;

const interchange = (gvr: string) => ({
  metadata: { interchange_format_version: "5", genesis_validators_root: gvr },
  data: [
    {
      pubkey: KEY_A,
      signed_blocks: [{ slot: "81952", signing_root: `0x${"0a".repeat(32)}` }, { slot: "81953" }],
      signed_attestations: [
        { source_epoch: "2290", target_epoch: "3007", signing_root: `0x${"0b".repeat(32)}` },
        { source_epoch: "3007", target_epoch: "3008" },
      ],
    },
    { pubkey: KEY_B, signed_blocks: [{ slot: "100" }], signed_attestations: [] },
  ],
});

/**
 * A configuration for a devnet whose genesis validators root is GVR, and, unless `init` is false,
 * its database created with `sigil slashing init`.
 */
function setup(name: string, { init = true } = {}) {
  const database = join(dir.path, `${name}.sqlite`);
  const config = dir.file(
    `${name}.yaml`,
    `network_config: {genesis_validators_root: "${GVR}"}\n` +
      `antislashing: {backend: sqlite, path: "${database}"}\n`,
  );
  if (init) {
    const created = runSigil(["slashing", "init", "-c", config]);
    expect(created.code, created.stderr).toBe(0);
  }
  return {
    config,
    database,
    file: (n: string, content: unknown) => dir.file(`${name}-${n}.json`, JSON.stringify(content)),
  };
}

type Exported = ReturnType<typeof interchange>;
const byPubkey = (doc: Exported) => Object.fromEntries(doc.data.map((v) => [v.pubkey, v]));

describe("sigil slashing import|export", () => {
  test("import then export keeps every record", () => {
    const { config, file } = setup("roundtrip");
    const imported = runSigil([
      "slashing",
      "import",
      "-c",
      config,
      "--file",
      file("in", interchange(GVR)),
    ]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toContain("imported 2 validators (3 blocks, 2 attestations)");
    const out = join(dir.path, "roundtrip-out.json");
    expect(runSigil(["slashing", "export", "-c", config, "--file", out]).code).toBe(0);
    const exported = JSON.parse(readFileSync(out, "utf8")) as Exported;
    expect(exported.metadata).toEqual({
      interchange_format_version: "5",
      genesis_validators_root: GVR,
    });
    const expected = byPubkey(interchange(GVR));
    const actual = byPubkey(exported);
    for (const key of [KEY_A, KEY_B]) {
      expect(new Set(actual[key]?.signed_blocks.map((b) => JSON.stringify(b)))).toEqual(
        new Set(expected[key]?.signed_blocks.map((b) => JSON.stringify(b))),
      );
      expect(new Set(actual[key]?.signed_attestations.map((a) => JSON.stringify(a)))).toEqual(
        new Set(expected[key]?.signed_attestations.map((a) => JSON.stringify(a))),
      );
    }
  });

  test("export --pubkeys limits the validators; --file - writes to stdout", () => {
    const { config, file } = setup("select");
    expect(
      runSigil(["slashing", "import", "-c", config, "--file", file("in", interchange(GVR))]).code,
    ).toBe(0);
    const result = runSigil([
      "slashing",
      "export",
      "-c",
      config,
      "--file",
      "-",
      "--pubkeys",
      KEY_B,
    ]);
    expect(result.code).toBe(0);
    const exported = JSON.parse(result.stdout) as Exported;
    expect(exported.data.map((v) => v.pubkey)).toEqual([KEY_B]);
  });

  test("import reads standard input with --file -", () => {
    const { config } = setup("stdin");
    const result = Bun.spawnSync(
      sigilCommand(["slashing", "import", "-c", config, "--file", "-"]),
      {
        stdin: new TextEncoder().encode(JSON.stringify(interchange(GVR))),
        env: { ...process.env, NO_COLOR: "1" },
      },
    );
    captureProcessOutput(result.pid, {
      stdout: result.stdout.toString(),
      stderr: result.stderr.toString(),
    });
    expect(result.exitCode).toBe(0);
    expect(result.stderr.toString()).toContain("imported 2 validators");
  });

  test("another chain's genesis validators root refuses the whole import and changes nothing", () => {
    const { config, file } = setup("gvr");
    expect(
      runSigil(["slashing", "import", "-c", config, "--file", file("first", interchange(GVR))])
        .code,
    ).toBe(0);
    const before = runSigil(["slashing", "export", "-c", config, "--file", "-"]).stdout;
    const refused = runSigil([
      "slashing",
      "import",
      "-c",
      config,
      "--file",
      file("other", interchange(OTHER_GVR)),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("import refused, nothing was changed");
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(runSigil(["slashing", "export", "-c", config, "--file", "-"]).stdout).toBe(before);
  });

  test("a malformed file is refused with the JSON path of the problem, and nothing is written", () => {
    const { config, file } = setup("malformed");
    const bad = interchange(GVR);
    const attestation = bad.data[0]?.signed_attestations[1];
    if (attestation) attestation.target_epoch = "not-a-number";
    const refused = runSigil(["slashing", "import", "-c", config, "--file", file("bad", bad)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/target_epoch/);
    const exported = runSigil(["slashing", "export", "-c", config, "--file", "-"]);
    const data = exported.code === 0 ? (JSON.parse(exported.stdout) as Exported).data : [];
    expect(data.flatMap((v) => [...v.signed_blocks, ...v.signed_attestations])).toEqual([]);
  });

  test("a missing --file is a usage error", () => {
    const { config } = setup("usage");
    const result = runSigil(["slashing", "import", "-c", config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--file is required");
  });

  test("a missing input file is a one-line error", () => {
    const { config } = setup("missing");
    const result = runSigil([
      "slashing",
      "import",
      "-c",
      config,
      "--file",
      join(dir.path, "nope.json"),
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `sigil: --file: cannot read ${join(dir.path, "nope.json")}: no such file\n`,
    );
  });

  test("exporting a new database gives its chain's root and no validators", () => {
    const { config } = setup("empty");
    const result = runSigil(["slashing", "export", "-c", config, "--file", "-"]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
      data: [],
    });
  });
});

describe("sigil slashing init, and commands on a database that is not there", () => {
  test("init creates the database for the configured chain, once; a second init changes nothing", () => {
    const { config, database } = setup("init", { init: false });
    expect(existsSync(database)).toBe(false);
    const first = runSigil(["slashing", "init", "-c", config]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`slashing protection database ${database} initialized`);
    expect(first.stdout).toContain(GVR);
    expect(statSync(database).mode & 0o777).toBe(0o600);
    const second = runSigil(["slashing", "init", "-c", config]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain("was already initialized");
    expect(second.stdout).toContain("nothing changed");
  });

  test.each([
    ["import", ["--file", "IN"]],
    ["export", ["--file", "-"]],
  ])(
    "%s on a missing database exits 2 naming it and the init command, creating nothing",
    (command, extra) => {
      const { config, database, file } = setup(`missing-db-${command}`, { init: false });
      const input = file("in", interchange(GVR));
      const result = runSigil([
        "slashing",
        command,
        "-c",
        config,
        ...extra.map((arg) => (arg === "IN" ? input : arg)),
      ]);
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toContain(`${database} does not exist`);
      expect(result.stderr).toContain(`sigil slashing init -c ${config}`);
      expect(existsSync(database)).toBe(false);
      expect(existsSync(`${database}.lock`)).toBe(false);
    },
  );

  test("an import into a new database for another chain is refused naming both roots; nothing written", () => {
    const { config, file } = setup("fresh-other-chain");
    const refused = runSigil([
      "slashing",
      "import",
      "-c",
      config,
      "--file",
      file("other", interchange(OTHER_GVR)),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("import refused, nothing was changed");
    expect(refused.stderr).toContain(OTHER_GVR);
    expect(refused.stderr).toContain(GVR);
    const exported = runSigil(["slashing", "export", "-c", config, "--file", "-"]);
    expect(JSON.parse(exported.stdout)).toEqual({
      metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
      data: [],
    });
  });

  test("a database of another chain stops every command with exit 2 naming both roots", () => {
    const { database } = setup("bound-elsewhere");
    // The same file, configured for mainnet.
    const mainnet = dir.file(
      "bound-elsewhere-mainnet.yaml",
      `network: mainnet\nantislashing: {backend: sqlite, path: "${database}"}\n`,
    );
    for (const command of [["init"], ["export", "--file", "-"]]) {
      const result = runSigil(["slashing", ...command, "-c", mainnet]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`belongs to the chain with genesis validators root ${GVR}`);
      expect(result.stderr).toContain(MAINNET_GVR);
    }
  });

  test("init for a custom network without genesis_validators_root exits 2 and creates nothing", () => {
    const database = join(dir.path, "unknown-chain.sqlite");
    const config = dir.file(
      "unknown-chain.yaml",
      `network_config: {genesis_fork_version: "0x10000910"}\n` +
        `antislashing: {backend: sqlite, path: "${database}"}\n`,
    );
    const result = runSigil(["slashing", "init", "-c", config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("network_config sets no genesis_validators_root");
    expect(existsSync(database)).toBe(false);
  });
});
