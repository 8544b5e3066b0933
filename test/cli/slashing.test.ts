import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runSigil, sigilCommand, TempDir } from "../support/cli";
import { captureProcessOutput } from "../support/log-capture";
import { INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

const GVR = `0x${"04".repeat(32)}`;
const OTHER_GVR = `0x${"05".repeat(32)}`;
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

function setup(name: string) {
  const config = dir.file(
    `${name}.yaml`,
    `antislashing: {backend: sqlite, path: "${join(dir.path, `${name}.sqlite`)}"}\n`,
  );
  return {
    config,
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
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
  });

  test("exporting a database where nothing was ever signed is a one-line error, no file written", () => {
    const { config } = setup("empty");
    const target = join(dir.path, "empty-export.json");
    const result = runSigil(["slashing", "export", "-c", config, "--file", target]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringContaining("nothing to export"),
    ]);
    expect(existsSync(target)).toBe(false);
  });
});
