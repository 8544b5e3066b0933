import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sqliteFileProblem } from "./file-problem";

const dir = mkdtempSync(join(tmpdir(), "sigil-file-problem-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const write = { access: "write" } as const;

test("a missing directory, unless it may be created", () => {
  const path = join(dir, "missing", "db.sqlite");
  expect(sqliteFileProblem(path, write)).toBe(
    `its directory ${join(dir, "missing")} does not exist`,
  );
  expect(sqliteFileProblem(path, { access: "write", createDirectory: true })).toBeUndefined();
});

test("a directory where the file should be, and a file where the directory should be", () => {
  mkdirSync(join(dir, "a-directory"));
  expect(sqliteFileProblem(join(dir, "a-directory"), write)).toBe(
    "it is a directory, not a database file",
  );
  writeFileSync(join(dir, "a-file"), "");
  expect(sqliteFileProblem(join(dir, "a-file", "db.sqlite"), write)).toBe(
    `${join(dir, "a-file")} is not a directory`,
  );
});

test("nothing to say about a file that can be opened, or one that is not there yet", () => {
  writeFileSync(join(dir, "db.sqlite"), "");
  expect(sqliteFileProblem(join(dir, "db.sqlite"), write)).toBeUndefined();
  expect(sqliteFileProblem(join(dir, "new.sqlite"), write)).toBeUndefined();
  expect(sqliteFileProblem(join(dir, "db.sqlite"), { access: "read" })).toBeUndefined();
});

// Permissions: test/cli/database-files.test.ts, as a user other than the files' owner.
