// CHANGELOG.md (Keep a Changelog, Semantic Versioning): the version package.json gives every
// binary has its heading, `[Unreleased]` is on top for the next one, versions go newest first,
// and the upgrade and release docs point at it. LICENSE is the license package.json names.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const pkg = JSON.parse(read("package.json")) as { version: string; license: string };

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$/;

interface Heading {
  name: string;
  date?: string;
  line: string;
}

/** The `## ` headings of a changelog: `[Unreleased]`, or `[x.y.z] - YYYY-MM-DD`. */
function changelogHeadings(text: string): { headings: Heading[]; problems: string[] } {
  const headings: Heading[] = [];
  const problems: string[] = [];
  for (const line of text.split("\n").filter((l) => l.startsWith("## "))) {
    const match = /^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/.exec(line);
    if (!match?.[1]) {
      problems.push(`not a Keep a Changelog heading: ${line}`);
      continue;
    }
    const [, name, date] = match;
    if (name !== "Unreleased" && !SEMVER.test(name))
      problems.push(`not a semantic version: ${line}`);
    if (name !== "Unreleased" && (date === undefined || Number.isNaN(Date.parse(date))))
      problems.push(`a released version needs its date: ${line}`);
    headings.push({ name, ...(date && { date }), line });
  }
  return { headings, problems };
}

function compareVersions(a: string, b: string): number {
  const parts = (v: string) => (SEMVER.exec(v) ?? []).slice(1, 4).map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

describe("CHANGELOG.md", () => {
  const { headings, problems } = changelogHeadings(read("CHANGELOG.md"));

  test("every heading is [Unreleased] or [x.y.z] - date", () => {
    expect(problems).toEqual([]);
  });

  test("package.json's version has its entry", () => {
    expect(SEMVER.test(pkg.version)).toBe(true);
    expect(headings.map((h) => h.name)).toContain(pkg.version);
  });

  test("[Unreleased] comes first, then versions newest first, each once", () => {
    expect(headings[0]?.name).toBe("Unreleased");
    const versions = headings.slice(1).map((h) => h.name);
    expect(versions).not.toContain("Unreleased");
    expect(new Set(versions).size).toBe(versions.length);
    expect([...versions].sort((a, b) => compareVersions(b, a))).toEqual(versions);
  });

  test("the check refuses a changelog without the version, or out of order", () => {
    const missing = changelogHeadings("## [Unreleased]\n\n## [0.0.9] - 2026-01-01\n");
    expect(missing.headings.map((h) => h.name)).not.toContain(pkg.version);
    expect(changelogHeadings("## [0.1.0]\n").problems).toEqual([
      "a released version needs its date: ## [0.1.0]",
    ]);
    expect(changelogHeadings("## 0.1.0 - 2026-01-01\n").problems).toHaveLength(1);
    expect(changelogHeadings("## [one] - 2026-01-01\n").problems).toEqual([
      "not a semantic version: ## [one] - 2026-01-01",
    ]);
  });

  test("docs/upgrading.md and docs/release.md point at it", () => {
    expect(read("docs/upgrading.md")).toContain("](../CHANGELOG.md)");
    expect(read("docs/release.md")).toContain("](../CHANGELOG.md)");
  });
});

test("LICENSE is the Apache License 2.0 that package.json names", () => {
  expect(pkg.license).toBe("Apache-2.0");
  const license = read("LICENSE");
  expect(license).toContain("Apache License\n                           Version 2.0, January 2004");
  expect(license).toContain("END OF TERMS AND CONDITIONS");
  expect(license.split("\n").length).toBeGreaterThan(200);
});
