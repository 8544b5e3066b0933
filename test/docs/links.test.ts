// Relative links between the docs must lead somewhere: to a file of the repository and, with a
// #fragment, to a heading of that Markdown file (GitHub's anchor rules).
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { documentedFiles, REPO_ROOT } from "./harness";
import { parseMarkdown } from "./markdown";

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const fenced = new Set<number>();
  for (const block of parseMarkdown(markdown).blocks) {
    const lines = block.text.split("\n").length;
    for (let line = block.line; line <= block.line + lines + 1; line++) fenced.add(line);
  }
  const seen = new Map<string, number>();
  markdown.split("\n").forEach((line, index) => {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading?.[1] || fenced.has(index + 1)) return;
    const base = heading[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  });
  return anchors;
}

test("headingAnchors follows GitHub's rules", () => {
  const anchors = headingAnchors(
    "# Title\n## 1. Get the binary\n## signer_state (stateful mode)\n## Start, stop, restart\n## Title\n",
  );
  expect([...anchors]).toEqual([
    "title",
    "1-get-the-binary",
    "signer_state-stateful-mode",
    "start-stop-restart",
    "title-1",
  ]);
});

test("every relative link in the docs leads to a file and, if it names one, a heading", () => {
  const broken: string[] = [];
  for (const file of documentedFiles()) {
    const text = readFileSync(join(REPO_ROOT, file), "utf8");
    const prose = text.replace(/```[\s\S]*?```/g, "");
    for (const match of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] ?? "";
      if (/^[a-z]+:/i.test(target)) continue;
      const [path = "", fragment] = target.split("#");
      const resolved = path === "" ? file : normalize(join(dirname(file), path));
      if (!existsSync(join(REPO_ROOT, resolved))) {
        broken.push(`${file}: ${target} (no ${resolved})`);
        continue;
      }
      if (fragment && resolved.endsWith(".md")) {
        const anchors = headingAnchors(readFileSync(join(REPO_ROOT, resolved), "utf8"));
        if (!anchors.has(fragment)) broken.push(`${file}: ${target} (no heading #${fragment})`);
      }
    }
  }
  expect(broken).toEqual([]);
});
