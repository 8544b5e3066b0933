// Dependencies point one way (DESIGN §2): a folder of src/ imports only folders below it. Every
// import counts, `import type` included: a type names what a module depends on as much as a value.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");

/**
 * Lowest first. A folder may import folders of a lower level; folders of one level are peers
 * that do not import each other. Files at the top of src/ (errors.ts, version.ts) are below
 * everything; main.ts only runs the CLI.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["wire", "net", "os", "observability"],
  ["bls", "storage"],
  ["antislashing"],
  ["auth"],
  ["state"],
  ["seal"],
  ["keys"],
  ["signing"],
  ["config"],
  ["migrate"],
  ["http"],
  ["commit-boost"],
  ["app"],
  ["cli"],
];

const levelOf = new Map(LAYERS.flatMap((folders, level) => folders.map((f) => [f, level])));
const BELOW_ALL = new Set(["errors", "version"]);

/** Relative specifiers of every static and dynamic import and re-export, types included. */
function importsOf(text: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;
  for (const match of text.matchAll(pattern)) if (match[1]) found.push(match[1]);
  return found;
}

function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true })
    .map(String)
    .filter((file) => /\.(ts|mjs)$/.test(file) && !file.endsWith(".test.ts"));
}

/** Its folder under src/, or its own name (without .ts) for a file at the top of src/. */
const placeOf = (path: string) => (relative(SRC, path).split("/")[0] ?? "").replace(/\.ts$/, "");

function violations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles()) {
    const from = join(SRC, file);
    const fromPlace = placeOf(from);
    if (!file.includes("/")) continue; // main.ts, errors.ts, version.ts
    for (const specifier of importsOf(readFileSync(from, "utf8"))) {
      const target = resolve(dirname(from), specifier);
      if (!target.startsWith(SRC)) continue; // package.json
      const toPlace = placeOf(target);
      if (toPlace === fromPlace) continue;
      if (BELOW_ALL.has(toPlace)) continue;
      const fromLevel = levelOf.get(fromPlace);
      const toLevel = levelOf.get(toPlace);
      if (fromLevel === undefined || toLevel === undefined || toLevel >= fromLevel) {
        found.push(`src/${file} imports ${specifier} (${fromPlace} → ${toPlace})`);
      }
    }
  }
  return found.sort();
}

describe("dependencies point one way", () => {
  test("every folder of src/ has a layer", () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !levelOf.has(folder))).toEqual([]);
  });

  test("no import reaches a folder at its own level or above", () => {
    expect(violations()).toEqual([]);
  });

  test("the check sees type imports, dynamic imports and re-exports", () => {
    expect(
      importsOf(
        'import type { A } from "../a";\nconst b = await import("./b");\nexport { c } from "../../c";',
      ),
    ).toEqual(["../a", "./b", "../../c"]);
  });
});
