// docs/architecture.md's "Where each rule lives" names files of src/: a file that moves or goes
// away must take its row with it, or this fails naming the row.
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../..");
const doc = readFileSync(join(REPO, "docs/architecture.md"), "utf8");

test("every file the rule index names exists under src/", () => {
  const section = doc.slice(doc.indexOf("## Where each rule lives"));
  const rows = section
    .split("\n")
    .filter((line) => /^\| [^-]/.test(line) && !line.startsWith("| rule |"));
  expect(rows.length).toBeGreaterThan(20);
  const missing: string[] = [];
  for (const row of rows) {
    const cells = row.split("|");
    const files = [...(cells[2] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");
    for (const file of files.filter((f) => f.includes("/") || f.endsWith(".ts"))) {
      // A glob names its folder (`http/routes/*.ts`).
      if (!existsSync(join(REPO, "src", file.replace(/\/\*[^/]*$/, ""))))
        missing.push(`${file} (${cells[1]?.trim()})`);
    }
  }
  expect(missing).toEqual([]);
});
