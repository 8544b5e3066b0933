// src/config/docs.test.ts keeps docs/configuration.md's option table equal to the one generated
// from the schema. This checks that comparison really catches drift in both directions: a table
// edited by hand, and a schema that changed without `npm run docs:config`.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Type } from "@sinclair/typebox";
import { DOCS_BEGIN, optionTable, withOptionTable } from "../../src/config/docs";
import { ConfigSchema } from "../../src/config/schema";
import { REPO_ROOT } from "./harness";

const committed = readFileSync(join(REPO_ROOT, "docs/configuration.md"), "utf8");

describe("the configuration.md drift check", () => {
  test("the committed table is the generated one (the check passes today)", () => {
    expect(withOptionTable(committed)).toBe(committed);
  });

  test("notices a row edited by hand", () => {
    const row = "| Port of the signing API (0 picks a free port). |";
    expect(committed).toContain(row);
    const edited = committed.replace(row, "| Port of the signing API. |");
    expect(withOptionTable(edited)).not.toBe(edited);
    expect(withOptionTable(edited)).toBe(committed);
  });

  test("notices a row deleted by hand", () => {
    const lines = committed.split("\n");
    const edited = lines.filter((line) => !line.startsWith("| `metrics.listen_port` |")).join("\n");
    expect(edited).not.toBe(committed);
    expect(withOptionTable(edited)).toBe(committed);
  });

  test("notices an option added to the schema but not to the doc", () => {
    const grown = Type.Object({
      ...ConfigSchema.properties,
      drift_probe: Type.Optional(Type.Boolean({ description: "Only in this test." })),
    });
    const table = optionTable(grown);
    expect(table).toContain("`drift_probe`");
    expect(withOptionTable(committed, table)).not.toBe(committed);
  });

  test("refuses a document whose generated-table markers are gone", () => {
    expect(() => withOptionTable(committed.replace(DOCS_BEGIN, ""))).toThrow("markers");
  });
});
