import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAtomicWriteTemporary, removeLeftoverTemporaries, writeFileAtomic } from "./persist";

let dir = "";
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("writeFileAtomic", () => {
  test("writes the content with mode 0600 and leaves no temporary", () => {
    dir = mkdtempSync(join(tmpdir(), "sigil-persist-"));
    writeFileAtomic(join(dir, "k.password"), "secret");
    writeFileAtomic(join(dir, "k.password"), "replaced");
    expect(readFileSync(join(dir, "k.password"), "utf8")).toBe("replaced");
    expect(statSync(join(dir, "k.password")).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["k.password"]);
  });
});

describe("isAtomicWriteTemporary", () => {
  test.each([
    [".0xabc.json.0123456789ab.tmp", true],
    [".k.password.a1b2c3d4e5f6.tmp", true],
    // What an operator might have: never taken for ours.
    ["keys.tmp", false],
    [".hidden.tmp", false],
    [".k.json.0123456789ab.tmp.bak", false],
    [".k.json.0123456789AB.tmp", false],
    [".k.json.0123-456789a.tmp", false],
    [".k.json.0123456789a.tmp", false],
    ["k.json.0123456789ab.tmp", false],
  ])("%s → %p", (name, expected) => {
    expect(isAtomicWriteTemporary(name)).toBe(expected);
  });
});

describe("removeLeftoverTemporaries", () => {
  test("removes only the temporaries of interrupted writes", () => {
    dir = mkdtempSync(join(tmpdir(), "sigil-persist-"));
    const keep = ["0xab.yaml", "0xab.json", "notes.tmp", ".profile"];
    const leftovers = [".0xab.yaml.00112233aabb.tmp", ".0xab.password.ffeeddccbbaa.tmp"];
    for (const name of [...keep, ...leftovers]) writeFileSync(join(dir, name), "x");
    expect(removeLeftoverTemporaries(dir).sort()).toEqual([...leftovers].sort());
    expect(readdirSync(dir).sort()).toEqual([...keep].sort());
  });

  test("a missing directory has nothing to remove", () => {
    expect(removeLeftoverTemporaries(join(tmpdir(), "sigil-no-such-dir-9f8e7d"))).toEqual([]);
  });
});
