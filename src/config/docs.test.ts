import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { optionTable, withOptionTable } from "./docs";
import { envName } from "./env";
import { ConfigSchema } from "./schema";
import { pathText, settableNodes } from "./walk";

const docPath = new URL("../../docs/configuration.md", import.meta.url);

describe("docs/configuration.md", () => {
  test("its option table is the one generated from the schema (run `npm run docs:config`)", () => {
    const committed = readFileSync(docPath, "utf8");
    expect(withOptionTable(committed)).toBe(committed);
  });

  test("lists every option of the spec's configuration table with its env variable", () => {
    const table = optionTable();
    const specOptions = [
      "server.listen_address",
      "server.cors_allowed_origins",
      "metrics.refresh_interval_seconds",
      "key_sources.filesystem.paths",
      "key_sources.cloud_kv.keygen.backup.recipients",
      "key_sources.cloud_kv.writable.max_items_per_request",
      "key_sources.key_manager_api.request_timeout_seconds",
      "antislashing.force_ipv4",
      "logging.log_color",
    ];
    for (const option of specOptions) expect(table).toContain(`| \`${option}\` |`);
    expect(table).toContain("`SIGNER_SERVER__LISTEN_PORT`");
    expect(table).toContain("`--filesystem-keystores-path` (repeatable)");
    for (const { path } of settableNodes(ConfigSchema)) {
      expect(table).toContain(`\`${pathText(path)}\``);
      expect(table).toContain(`\`${envName(path)}\``);
    }
  });
});
