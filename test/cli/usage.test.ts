// The command line as an operator meets it: help pages reached both ways, usage lines that run
// as printed, usage errors that exit 2 with one line, and no terminal colour in a pipe.
// (src/cli/help.test.ts checks every page's usage line, examples and flags in-process.)
import { afterAll, describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { runSigil, runSigilAsync, TempDir } from "../support/cli";

const dir = new TempDir();
afterAll(() => dir.remove());

const config = dir.file(
  "usage.yaml",
  `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}\n`,
);

/** The usage line of a help page, its placeholders filled in with `values`. */
function usageOf(page: string, values: Record<string, string>): string[] {
  const line = page.split("\n")[page.split("\n").indexOf("Usage:") + 1]?.trim() ?? "";
  expect(line).toStartWith("sigil ");
  return line
    .split(" ")
    .slice(1)
    .flatMap((word) => {
      const value = values[word];
      if (value === undefined && /^[<[]/.test(word)) throw new Error(`no value for ${word}`);
      return value === undefined ? [word] : value.split(" ");
    });
}

describe("help", () => {
  test("sigil help <command> is <command> --help: plain text in a pipe, NO_COLOR or not", () => {
    const viaHelp = runSigil(["help", "slashing", "import"], { NO_COLOR: "" });
    const viaFlag = runSigil(["slashing", "import", "--help"], { NO_COLOR: "" });
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
    expect(viaHelp.stdout).toContain("Usage:\n  sigil slashing import --file <path> [options]\n");
    expect(viaHelp.stdout).toContain("Examples:\n  sigil slashing import -c ");
    expect(viaHelp.stdout).not.toContain("\x1b");
    expect(viaHelp.stderr).toBe("");
  });

  test("sigil --version prints the version", async () => {
    const pkg = await Bun.file(new URL("../../package.json", import.meta.url)).json();
    expect(runSigil(["--version"]).stdout).toBe(`${pkg.version}\n`);
  });
});

describe("usage lines run as printed", () => {
  test("slashing init, export and import, from their help pages", () => {
    const page = (words: string[]) => runSigil([...words, "--help"]).stdout;
    const init = runSigil(usageOf(page(["slashing", "init"]), { "[options]": `-c ${config}` }));
    expect(init.stderr).toBe("");
    expect(init.code).toBe(0);
    const out = join(dir.path, "exported.json");
    const exported = runSigil(
      usageOf(page(["slashing", "export"]), { "<path>": out, "[options]": `-c ${config}` }),
    );
    expect(exported.code).toBe(0);
    // It says what it wrote, and where.
    expect(exported.stderr).toBe(
      `exported 0 validators (0 blocks, 0 attestations) from ${join(dir.path, "slashing.sqlite")} to ${out}\n`,
    );
    const imported = runSigil(
      usageOf(page(["slashing", "import"]), { "<path>": out, "[options]": `-c ${config}` }),
    );
    expect(imported.code).toBe(0);
    expect(imported.stderr).toBe(
      `imported 0 validators (0 blocks, 0 attestations) from ${out} into ${join(dir.path, "slashing.sqlite")}\n`,
    );
  });
});

test("slashing export to a pipe or device writes into it and leaves it one", async () => {
  // Renaming a finished file over /dev/null (as root) replaced the device with a regular file.
  const fifo = join(dir.path, "export.fifo");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const exporting = runSigilAsync(["slashing", "export", "-c", config, "--file", fifo]);
  const text = await Bun.file(fifo).text();
  const result = await exporting;
  expect(result.code).toBe(0);
  expect(JSON.parse(text).metadata.interchange_format_version).toBe("5");
  expect(statSync(fifo).isFIFO()).toBe(true);
});

describe("usage errors exit 2 with one line and nothing on standard output", () => {
  const cases: [string[], string][] = [
    [["config"], "sigil: sigil config needs a command: check, print; see sigil help config\n"],
    [
      ["help", "config", "chek"],
      'sigil: unknown command "chek" for sigil config (did you mean "sigil config check"?); see sigil help config\n',
    ],
    [
      ["slashing", "export", "--file"],
      "sigil: --file needs a value; see sigil help slashing export\n",
    ],
    [
      ["slashing", "export", "-c", "x.yaml", "--server-listen-port", "9100"],
      "sigil: unknown option --server-listen-port for sigil slashing export; see sigil help slashing export\n",
    ],
    [
      ["version", "now"],
      'sigil: unexpected argument "now" for sigil version: it takes options only (a value with spaces needs quotes); see sigil help version\n',
    ],
  ];
  for (const [argv, message] of cases) {
    test(`sigil ${argv.join(" ")}`, () => {
      const result = runSigil(argv);
      expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        code: 2,
        stdout: "",
        stderr: message,
      });
    });
  }
});
