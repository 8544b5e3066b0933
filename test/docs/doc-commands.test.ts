// Doc tests: every `sh` block of the operator docs runs, so the docs cannot rot. The rules the
// docs follow (directives, port rewriting, the work directory) are at the top of harness.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { type BlockResult, DocRun, documentedFiles, REPO_ROOT } from "./harness";
import { type CodeBlock, type Directive, parseMarkdown } from "./markdown";

function directive<K extends Directive["kind"]>(
  block: CodeBlock,
  kind: K,
): Extract<Directive, { kind: K }>[] {
  return block.directives.filter((d): d is Extract<Directive, { kind: K }> => d.kind === kind);
}

function explain(result: BlockResult, problem: string): string {
  return [
    problem,
    "--- block as run",
    result.script.trimEnd(),
    "--- stdout",
    result.stdout.trimEnd(),
    "--- stderr",
    result.stderr.trimEnd(),
  ].join("\n");
}

function lastLine(log: string): string {
  return log.trimEnd().split("\n").at(-1) ?? "";
}

const tally: string[] = [];
afterAll(() => {
  if (tally.length > 0) console.log(`doc tests, sh blocks per file:\n${tally.join("\n")}`);
});

for (const file of documentedFiles()) {
  const parsed = parseMarkdown(readFileSync(join(REPO_ROOT, file), "utf8"));
  const shellBlocks = parsed.blocks.filter((block) => block.tag === "sh");
  const skipped = shellBlocks.filter((block) => directive(block, "skip").length > 0);
  const startsSigner = shellBlocks.some(
    (block) => directive(block, "serve").length + directive(block, "background").length > 0,
  );

  describe(file, () => {
    let run: DocRun | undefined;
    beforeAll(() => {
      if (shellBlocks.length > skipped.length) run = new DocRun();
    });
    afterAll(async () => {
      await run?.finish();
      tally.push(
        `  ${file}: ${shellBlocks.length - skipped.length} ran, ${skipped.length} skipped`,
      );
    });

    test(`${file}: code blocks are tagged and directives well-formed`, () => {
      expect(parsed.problems).toEqual([]);
    });

    for (const block of shellBlocks) {
      const name = `${file}:${block.line}`;
      const [skip] = directive(block, "skip");
      if (skip) {
        test(`${name} (skipped: ${skip.reason})`, () => {
          // parseDirective refuses a skip without a reason; this records it in the test list.
          expect(skip.reason.length).toBeGreaterThanOrEqual(10);
        });
        continue;
      }
      test(name, async () => {
        if (!run) throw new Error("no work directory");
        if (directive(block, "stop").length > 0) await run.stopSigner();
        for (const { config } of directive(block, "serve")) {
          // As `npm start` runs the development signer: its database is created on the first run.
          await run.startSigner(`sigil serve -c ${config} --init-slashing-protection`);
        }
        if (directive(block, "background").length > 0) {
          await run.startSigner(run.rewrite(block.text));
          return;
        }
        const result = await run.runBlock(block);
        const expected = directive(block, "expect-exit")[0]?.code ?? 0;
        if (result.code !== expected) {
          throw new Error(explain(result, `exit status ${result.code}, expected ${expected}`));
        }
        const output = `${result.stdout}\n${result.stderr}`;
        for (const { text } of directive(block, "expect-output")) {
          if (!output.includes(text)) throw new Error(explain(result, `output lacks: ${text}`));
        }
      });
    }

    if (startsSigner) {
      test(`${file}: every signer it started stopped gracefully on SIGTERM`, async () => {
        if (!run) throw new Error("no work directory");
        await run.stopSigner();
        expect(run.stoppedLogs.length).toBeGreaterThan(0);
        for (const log of run.stoppedLogs)
          expect(lastLine(log)).toMatch(/ INFO app: stopped$|"msg":"stopped"/);
      });
    }
  });
}

test("doc files are found where the harness looks", () => {
  const files = documentedFiles().map((file) => relative(REPO_ROOT, join(REPO_ROOT, file)));
  expect(files).toContain("README.md");
  expect(files).toContain("docs/getting-started.md");
  expect(files).toContain("examples/keys/README.md");
});
