import { describe, expect, test } from "bun:test";
import { testLogger } from "../../test/support/log-capture";
import { createLooseModeReport, formatMode, isOpenToOthers, LOOSE_FILES_NAMED } from "./file-mode";

describe("isOpenToOthers", () => {
  test.each([
    [0o600, false],
    [0o400, false],
    [0o700, false],
    [0o640, true],
    [0o604, true],
    [0o620, true],
    [0o602, true],
    [0o610, true],
    [0o100644, true],
    [0o100600, false],
  ])("mode %o → %p", (mode, expected) => {
    expect(isOpenToOthers(mode)).toBe(expected);
  });
});

test("formatMode prints the permission bits as chmod takes them", () => {
  expect(formatMode(0o100644)).toBe("0644");
  expect(formatMode(0o600)).toBe("0600");
  expect(formatMode(0o7)).toBe("0007");
});

describe("createLooseModeReport", () => {
  function logger() {
    const lines: string[] = [];
    const log = testLogger("warn", lines);
    return { log, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
  }

  test("names loose files in path order, once each, and ignores tight ones", () => {
    const report = createLooseModeReport();
    report.check("/k/b", 0o644);
    report.check("/k/a", 0o600);
    report.check("/k/c", 0o660);
    report.check("/k/b", 0o644);
    const { log, records } = logger();
    expect(report.flush(log)).toBe(2);
    expect(records().map((r) => [r.file, r.mode])).toEqual([
      ["/k/b", "0644"],
      ["/k/c", "0660"],
    ]);
  });

  test(`names at most ${LOOSE_FILES_NAMED} files, then counts the rest in one line`, () => {
    const report = createLooseModeReport();
    for (let i = 0; i < LOOSE_FILES_NAMED + 7; i++)
      report.check(`/k/${String(i).padStart(3, "0")}`, 0o644);
    const { log, records } = logger();
    expect(report.flush(log)).toBe(LOOSE_FILES_NAMED + 7);
    const all = records();
    expect(all.filter((r) => r.file !== undefined)).toHaveLength(LOOSE_FILES_NAMED);
    expect(all.at(-1)).toMatchObject({ count: 7, total: LOOSE_FILES_NAMED + 7 });
  });

  test("a report with nothing loose logs nothing", () => {
    const { log, records } = logger();
    expect(createLooseModeReport().flush(log)).toBe(0);
    expect(records()).toEqual([]);
  });
});
