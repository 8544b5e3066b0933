// Dependencies point one way (docs/architecture.md, "Layers"): a place of src/ (a folder, or a
// file at the top of src/) imports only places below it. The order is read from that document,
// so the rule the test enforces and the one a contributor reads are one text. Every edge counts:
// `import type` (a type names what a module depends on as much as a value), dynamic imports,
// re-exports, the module a worker thread is started from (`new Worker(new URL(path, …))`, whose
// path is a string literal), and the colocated unit tests (`*.test.ts`), which sit in a layer too.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../..");
const SRC = join(REPO, "src");
const ARCHITECTURE = join(REPO, "docs/architecture.md");
const MARKER = "<!-- layers: read by test/architecture/layers.test.ts -->";

/**
 * The layers as docs/architecture.md lists them: the fenced block after MARKER, highest first,
 * one layer per line, peers separated by spaces (a file at the top of src/ by its name, `.ts`
 * included). Returned lowest first.
 */
export function layersFrom(markdown: string): string[][] {
  const at = markdown.indexOf(MARKER);
  if (at < 0) throw new Error(`docs/architecture.md has no ${MARKER}`);
  const block = /```text\n([\s\S]*?)```/.exec(markdown.slice(at));
  if (!block?.[1]) throw new Error("no ```text block after the layers marker");
  return block[1]
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => line.split(/\s+/))
    .reverse();
}

const LAYERS = layersFrom(readFileSync(ARCHITECTURE, "utf8"));
const levelOf = new Map(LAYERS.flatMap((places, level) => places.map((p) => [p, level])));

/**
 * Relative specifiers of every static and dynamic import and re-export, types included, and
 * every relative module path written as a string (how a worker's entry is named).
 */
export function importsOf(text: string): string[] {
  const found = new Set<string>();
  const imports = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;
  for (const match of text.matchAll(imports)) if (match[1]) found.add(match[1]);
  const modulePaths = /["'](\.{1,2}\/[^"'\s]+\.(?:ts|mjs|js))["']/g;
  for (const match of text.matchAll(modulePaths)) if (match[1]) found.add(match[1]);
  return [...found];
}

function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true })
    .map(String)
    .filter((file) => /\.(ts|mjs)$/.test(file));
}

/** Its folder under src/, or its own file name for a file at the top of src/. */
const placeOf = (path: string) => relative(SRC, path).split("/")[0] ?? "";

function violations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles()) {
    const from = join(SRC, file);
    const fromPlace = placeOf(from);
    for (const specifier of importsOf(readFileSync(from, "utf8"))) {
      const target = resolve(dirname(from), specifier);
      // package.json, docs/, test/support: not code of a layer (tests' helpers start signers).
      if (!target.startsWith(`${SRC}/`)) continue;
      const toPlace = placeOf(target);
      if (toPlace === fromPlace) continue;
      const fromLevel = levelOf.get(fromPlace);
      // An import names a top file without its extension ("../errors").
      const toLevel = levelOf.get(levelOf.has(toPlace) ? toPlace : `${toPlace}.ts`);
      if (fromLevel === undefined || toLevel === undefined || toLevel >= fromLevel) {
        found.push(`src/${file} imports ${specifier} (${fromPlace} → ${toPlace})`);
      }
    }
  }
  return found.sort();
}

describe("dependencies point one way", () => {
  test("every folder and every file at the top of src/ has a layer, and no layer names a stranger", () => {
    const places = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || /\.ts$/.test(entry.name))
      .filter((entry) => !entry.name.endsWith(".test.ts"))
      .map((entry) => entry.name)
      .sort();
    expect(places.filter((place) => !levelOf.has(place))).toEqual([]);
    expect([...levelOf.keys()].filter((place) => !places.includes(place))).toEqual([]);
  });

  test("no import reaches a place at its own level or above (unit tests included)", () => {
    expect(violations()).toEqual([]);
  });

  test("the check sees type imports, dynamic imports, re-exports and worker entries", () => {
    expect(
      importsOf(
        [
          'import type { A } from "../a";',
          'const b = await import("./b");',
          'export { c } from "../../c";',
          'const entry = "./worker.ts";',
          "new Worker(new URL(entry, import.meta.url).href);",
          'new Worker(new URL("../other/thread.ts", import.meta.url));',
          'const doc = "../../docs/x.md";',
        ].join("\n"),
      ),
    ).toEqual(["../a", "./b", "../../c", "./worker.ts", "../other/thread.ts"]);
  });

  test("the layers are read from docs/architecture.md, highest first", () => {
    const doc = `x\n${MARKER}\n\n\`\`\`text\ncli\napp\nwire net\nerrors.ts\n\`\`\`\n`;
    expect(layersFrom(doc)).toEqual([["errors.ts"], ["wire", "net"], ["app"], ["cli"]]);
    expect(LAYERS.at(-1)).toEqual(["main.ts"]);
    expect(LAYERS[0]).toContain("errors.ts");
  });
});
