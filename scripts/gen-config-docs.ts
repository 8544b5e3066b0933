// Rewrites the generated option table in docs/configuration.md from the config schema.
// A test (src/config/docs.test.ts) fails when the committed file is out of date.
import { readFileSync, writeFileSync } from "node:fs";
import { withOptionTable } from "../src/config/docs";

const path = new URL("../docs/configuration.md", import.meta.url);
writeFileSync(path, withOptionTable(readFileSync(path, "utf8")));
console.log("docs/configuration.md: option table regenerated");
