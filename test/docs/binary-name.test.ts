// A newcomer follows the README, then getting-started: both call the binary by one name, `sigil`
// (installed on PATH: the README's install step, getting-started's), never `./dist/sigil` in one
// place and `sigil` in the next. And getting-started's sample start-up log is in the order a
// real start logs it.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startSigil, TempDir } from "../support/cli";
import { REPO_ROOT } from "./harness";
import { parseMarkdown } from "./markdown";

const FILES = ["README.md", "docs/getting-started.md"];

/** The commands of a shell block: its lines, comments and continuations aside. */
function commandLines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** How each command line starts the binary, when it does: `sigil`, `./dist/sigil`, `dist/sigil`. */
function binarySpellings(line: string): string[] {
  const found: string[] = [];
  // A command word: at the start, after a pipe, `&&`, `;`, `$(`, or an environment assignment.
  const pattern =
    /(?:^|[|;&(]\s*|^(?:\w+=\S*\s+)+)((?:\.\/|\/)?(?:[\w.-]+\/)*sigil(?:-linux-[\w-]+)?)(?=\s|$)/g;
  for (const match of line.matchAll(pattern)) if (match[1]) found.push(match[1]);
  return found;
}

describe("one spelling of the binary", () => {
  test("the spelling check sees the other spellings (it can fail)", () => {
    expect(binarySpellings("./dist/sigil version")).toEqual(["./dist/sigil"]);
    expect(binarySpellings("dist/sigil config check -c x")).toEqual(["dist/sigil"]);
    expect(binarySpellings("SIGNER_X=1 sigil serve")).toEqual(["sigil"]);
    expect(binarySpellings("sudo install -m 0755 dist/sigil /usr/local/bin/sigil")).toEqual([]);
  });

  for (const file of FILES) {
    test(`${file}: every command runs the binary as \`sigil\``, () => {
      const blocks = parseMarkdown(readFileSync(join(REPO_ROOT, file), "utf8")).blocks.filter(
        (block) => block.tag === "sh",
      );
      const spellings = new Map<string, string[]>();
      for (const block of blocks) {
        for (const line of commandLines(block.text)) {
          for (const spelling of binarySpellings(line))
            spellings.set(spelling, [...(spellings.get(spelling) ?? []), `${file}:${block.line}`]);
        }
      }
      expect([...spellings.keys()]).toEqual(["sigil"]);
    });
  }
});

describe("getting-started's sample start-up log", () => {
  const dir = new TempDir();
  afterAll(() => dir.remove());

  test("lists its lines in the order serve logs them", async () => {
    const text = readFileSync(join(REPO_ROOT, "docs/getting-started.md"), "utf8");
    const sample = parseMarkdown(text).blocks.find(
      (block) => block.tag === "text" && block.text.includes("sigil listening"),
    );
    const messages = ["metrics listening", "filesystem keys loaded", "sigil listening"];
    const order = (log: string) =>
      messages
        .map((message) => ({ message, at: log.indexOf(message) }))
        .filter(({ at }) => at >= 0)
        .sort((a, b) => a.at - b.at)
        .map(({ message }) => message);
    expect(order(sample?.text ?? "")).toEqual(messages);

    const keys = join(dir.path, "keys");
    mkdirSync(keys);
    const config = dir.file(
      "config.yaml",
      `server: {listen_address: 127.0.0.1, listen_port: 0}\nkey_sources: {filesystem: {paths: ["${keys}"]}}\nantislashing: {path: "${join(dir.path, "db.sqlite")}"}\n`,
    );
    const sigil = await startSigil(["serve", "-c", config, "--init-slashing-protection"]);
    try {
      expect(order(sigil.stderrText())).toEqual(order(sample?.text ?? ""));
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
  });
});
