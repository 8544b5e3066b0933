// The messages a new operator meets in the first hour name the real cause in plain words: no
// parser states, no raw errno text, positions once, counts in the right number, and usage lines
// complete enough to run as printed.
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { initializedDatabase, runSigil, runSigilAsync, TempDir } from "../support/cli";
import { freePort } from "../support/postgres";
import { GVR, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

const database = () => ({ SIGNER_ANTISLASHING__PATH: initializedDatabase(dir) });

describe("slashing import of a file it cannot use", () => {
  test("a file that is not JSON: what is wrong and where, not the parser's state", () => {
    const file = dir.file("not-json.json", "not json\n");
    const result = runSigil(["slashing", "import", "--file", file], database());
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'sigil: import refused, nothing was changed: not JSON (an EIP-3076 interchange file is one JSON object): unexpected "o" at byte 2\n',
    );
  });

  test("a truncated file says so", () => {
    const file = dir.file(
      "truncated.json",
      '{"metadata": {"interchange_format_version": "5", "genesis',
    );
    const result = runSigil(["slashing", "import", "--file", file], database());
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "sigil: import refused, nothing was changed: not JSON (an EIP-3076 interchange file is one JSON object): it ends in the middle of a value (truncated?)\n",
    );
  });

  test("a missing file: cannot read <path>: no such file, before any database is opened", () => {
    const missing = join(dir.path, "no-such-export.json");
    const result = runSigil(["slashing", "import", "--file", missing], {
      // No database either: the file is what the command line got wrong, and is named first.
      SIGNER_ANTISLASHING__PATH: join(dir.path, "no-such.sqlite"),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`sigil: --file: cannot read ${missing}: no such file\n`);
  });

  test("a directory is named as one", () => {
    const result = runSigil(["slashing", "import", "--file", dir.path], database());
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`sigil: --file: cannot read ${dir.path}: is a directory\n`);
  });
});

describe("YAML errors", () => {
  test("the position once, as file:line:col, and no trailing colon", () => {
    const file = dir.file("bad.yaml", "server:\n  listen_port: [1\n");
    const result = runSigil(["config", "check", "-c", file]);
    expect(result.code).toBe(2);
    const line = result.stderr.split("\n")[1] ?? "";
    expect(line).toStartWith(`  ${file}:3:1: YAML: `);
    expect(line).not.toMatch(/at line \d+, column \d+/);
    expect(line).not.toMatch(/:\s*$/);
  });

  test("a devnet spec config's YAML error reads the same", () => {
    const spec = dir.file("spec.yaml", "PRESET_BASE: minimal\n\tSECONDS_PER_SLOT: 6\n");
    const file = dir.file("devnet.yaml", `network: ${spec}\n`);
    const result = runSigil(["config", "check", "-c", file]);
    expect(result.code).toBe(2);
    expect(result.stderr.split("\n")[1]).toBe(
      `  network: ${spec}:2:1: YAML: Tabs are not allowed as indentation`,
    );
  });
});

describe("counts", () => {
  test("export and import of one validator, one attestation: singular", () => {
    const config = dir.file(
      "one.yaml",
      `antislashing: {path: "${join(dir.path, "one.sqlite")}"}\n`,
    );
    expect(runSigil(["slashing", "init", "-c", config]).code).toBe(0);
    const interchange = {
      metadata: { interchange_format_version: "5", genesis_validators_root: GVR },
      data: [
        {
          pubkey: INTEROP_KEYS[0],
          signed_blocks: [],
          signed_attestations: [
            { source_epoch: "1", target_epoch: "2", signing_root: `0x${"11".repeat(32)}` },
          ],
        },
      ],
    };
    const file = dir.file("one.json", JSON.stringify(interchange));
    const imported = runSigil(["slashing", "import", "-c", config, "--file", file]);
    expect(imported.stderr).toStartWith("imported 1 validator (0 blocks, 1 attestation) from ");
    const out = join(dir.path, "one-out.json");
    const exported = runSigil(["slashing", "export", "-c", config, "--file", out]);
    expect(exported.stderr).toStartWith("exported 1 validator (0 blocks, 1 attestation) from ");
  });
});

describe("operator auth usage lines run as printed", () => {
  const pages = [
    ["policy", "list"],
    ["policy", "get"],
    ["policy", "create"],
    ["policy", "update"],
    ["policy", "delete"],
    ["token", "create"],
    ["token", "list"],
    ["token", "revoke"],
  ];
  const values: Record<string, string> = {
    "<value|env:VAR>": "env:SIGIL_MANAGEMENT_TOKEN",
    "<name>": "validator-client",
    "<json|@file>": '[{"effect":"allow","scopes":["sign"]}]',
    "<a,b>": "validator-client",
    "<n>": "60",
    "<id>": "accessor-1",
  };
  for (const words of pages) {
    test(`operator auth ${words.join(" ")}: its usage line names --token and parses`, async () => {
      const page = runSigil(["operator", "auth", ...words, "--help"]).stdout;
      const usage = page.split("\n")[page.split("\n").indexOf("Usage:") + 1]?.trim() ?? "";
      expect(usage).toContain(" --token <value|env:VAR>");
      const port = await freePort();
      const args = usage
        .split(" ")
        .slice(1)
        .flatMap((word) => {
          if (word === "[options]") return ["--signer-url", `http://127.0.0.1:${port}`];
          const value = values[word];
          if (value === undefined && word.startsWith("<")) throw new Error(`no value for ${word}`);
          return [value ?? word];
        });
      const result = await runSigilAsync(args, {
        SIGIL_MANAGEMENT_TOKEN: "management-token-0123456789",
      });
      // Nothing is listening there: the command got as far as calling the signer.
      expect(result.stderr).not.toContain("is required");
      expect(result.stderr).toContain(`127.0.0.1:${port}`);
      expect(result.code).toBe(1);
    });
  }
});
