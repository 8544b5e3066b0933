import { describe, expect, test } from "bun:test";
import { parseUnit, timeSpanSeconds, unitBoolean, unitValue } from "./systemd-unit";

describe("parseUnit", () => {
  const unit = parseUnit(
    [
      "# comment",
      "[Service]",
      "; another comment",
      "ExecStart=/usr/bin/x \\",
      "  --flag value",
      "CapabilityBoundingSet=",
      "Environment=A=1",
      "Environment=B=2",
      "[Install]",
      "WantedBy = multi-user.target",
    ].join("\n"),
  );

  test("joins continuation lines, keeps empty values, and the last assignment wins", () => {
    expect(unitValue(unit, "Service", "ExecStart")).toBe("/usr/bin/x --flag value");
    expect(unitValue(unit, "Service", "CapabilityBoundingSet")).toBe("");
    expect(unitValue(unit, "Service", "Environment")).toBe("B=2");
    expect(unitValue(unit, "Install", "WantedBy")).toBe("multi-user.target");
    expect(unitValue(unit, "Service", "WantedBy")).toBeUndefined();
  });

  test("refuses a line that is neither a section, an assignment nor a comment", () => {
    expect(() => parseUnit("[Service]\nnot an assignment")).toThrow("not a unit file line");
    expect(() => parseUnit("Key=before any section")).toThrow("not a unit file line");
  });
});

test("unitBoolean reads systemd's spellings and refuses others", () => {
  expect(unitBoolean("yes")).toBe(true);
  expect(unitBoolean("On")).toBe(true);
  expect(unitBoolean("0")).toBe(false);
  expect(unitBoolean(undefined)).toBeUndefined();
  expect(() => unitBoolean("strict")).toThrow("not a systemd boolean");
});

test("timeSpanSeconds reads systemd time spans", () => {
  expect(timeSpanSeconds("45")).toBe(45);
  expect(timeSpanSeconds("45s")).toBe(45);
  expect(timeSpanSeconds("1min 30s")).toBe(90);
  expect(timeSpanSeconds("2h")).toBe(7200);
  expect(() => timeSpanSeconds("soon")).toThrow("not a time span");
  expect(() => timeSpanSeconds("5 fortnights")).toThrow("not a time span");
});
