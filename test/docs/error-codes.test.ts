// docs/troubleshooting.md lists every HTTP error code and every exit status sigil can produce.
// The codes come from the source itself, so a code added there fails this test until it is
// documented: STATUS_BY_CODE is typed Record<ErrorCode, number> (the compiler keeps it complete),
// and any `{ code: "…", message }` body built outside errorResponse is found by scanning src/.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as exits from "../../src/cli/exit";
import { STATUS_BY_CODE } from "../../src/http/errors";
import { REPO_ROOT } from "./harness";

const doc = readFileSync(join(REPO_ROOT, "docs/troubleshooting.md"), "utf8");

function sourceFiles(): { path: string; text: string }[] {
  return readdirSync(join(REPO_ROOT, "src"), { recursive: true })
    .map(String)
    .filter((path) => path.endsWith(".ts") && !path.endsWith(".test.ts"))
    .map((path) => ({
      path: `src/${path}`,
      text: readFileSync(join(REPO_ROOT, "src", path), "utf8"),
    }));
}

/** The rows of the Markdown table that follows `heading`, as arrays of trimmed cells. */
function tableAfter(heading: string): string[][] {
  const start = doc.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`docs/troubleshooting.md has no "${heading}"`);
  const lines = doc.slice(start).split("\n");
  const first = lines.findIndex((line) => line.startsWith("|"));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

/** First cell `name` → second cell. */
function documented(heading: string): Map<string, string> {
  const rows = tableAfter(heading);
  return new Map(rows.map(([name = "", second = ""]) => [name.replaceAll("`", ""), second]));
}

/** `{ code: "…", message }` bodies built without errorResponse (the metrics listener's 404). */
function handBuiltCodes(): { path: string; code: string }[] {
  const literal = /\{\s*code:\s*"([a-z_]+)",\s*message:/g;
  return sourceFiles().flatMap(({ path, text }) =>
    [...text.matchAll(literal)].map((match) => ({ path, code: match[1] ?? "" })),
  );
}

describe("HTTP error codes in docs/troubleshooting.md", () => {
  const table = documented("## HTTP error codes");

  test("every code of the error table is documented with its status", () => {
    const codes = Object.entries(STATUS_BY_CODE);
    expect(codes.length).toBeGreaterThan(20);
    const wrong = codes
      .filter(([code, status]) => table.get(code) !== String(status))
      .map(([code, status]) => `${code}: source ${status}, doc ${table.get(code) ?? "missing"}`);
    expect(wrong).toEqual([]);
  });

  test("every code in a hand-built error body is documented", () => {
    const missing = handBuiltCodes().filter(({ code }) => !table.has(code));
    expect(missing).toEqual([]);
  });

  test("documents no code the source no longer has", () => {
    const known = new Set([...Object.keys(STATUS_BY_CODE), ...handBuiltCodes().map((c) => c.code)]);
    expect([...table.keys()].filter((code) => !known.has(code))).toEqual([]);
  });
});

describe("exit statuses in docs/troubleshooting.md", () => {
  const table = documented("## Exit statuses");

  test("every exit status the CLI defines or uses is documented", () => {
    const named = Object.entries(exits)
      .filter(([name, value]) => name.startsWith("EXIT_") && typeof value === "number")
      .map(([, value]) => value as number);
    expect(named).toEqual(expect.arrayContaining([0, 1, 2]));
    const literal = sourceFiles().flatMap(({ text }) =>
      [...text.matchAll(/process\.exit\((\d+)\)/g)].map((match) => Number(match[1])),
    );
    const statuses = [...new Set([...named, ...literal])].sort();
    const missing = statuses.filter((status) => !table.has(String(status)));
    expect(missing).toEqual([]);
  });
});
