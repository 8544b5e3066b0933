import { describe, expect, test } from "bun:test";
import type { TSchema } from "@sinclair/typebox";
import { ConfigSchema } from "./schema";
import { parseTextValue } from "./text-value";
import { schemaAt } from "./walk";

function node(path: string): TSchema {
  const schema = schemaAt(ConfigSchema, path.split("."));
  if (!schema) throw new Error(`no option ${path}`);
  return schema;
}

type Case = [kind: string, option: string, text: string, expected: unknown];

const parsed: Case[] = [
  ["integer", "server.listen_port", "9001", 9001],
  ["integer (trimmed)", "server.listen_port", " 9001 ", 9001],
  ["integer (negative; range checked later)", "server.listen_port", "-1", -1],
  ["boolean true", "server.seccomp", "true", true],
  ["boolean TRUE", "server.seccomp", "TRUE", true],
  ["boolean 1", "server.seccomp", "1", true],
  ["boolean false", "server.seccomp", "false", false],
  ["boolean 0", "server.seccomp", "0", false],
  ["string", "server.listen_address", "127.0.0.1", "127.0.0.1"],
  ["enum (checked later)", "network", "hoodi", "hoodi"],
  ["list, comma-separated", "key_sources.filesystem.paths", "/a, /b,,/c", ["/a", "/b", "/c"]],
  ["list, JSON array", "key_sources.filesystem.paths", '["/a", "/b,c"]', ["/a", "/b,c"]],
  ["list, empty", "key_sources.filesystem.paths", "", []],
  ["nullable list, null", "server.cors_allowed_origins", "null", null],
  [
    "nullable list, items",
    "server.cors_allowed_origins",
    "https://a,https://b",
    ["https://a", "https://b"],
  ],
  ["record, JSON", "auth_policies", '{"vc":{"token":"t"}}', { vc: { token: "t" } }],
  [
    "list of objects, JSON",
    "static_auth.policies",
    '[{"name":"p","rules":[]}]',
    [{ name: "p", rules: [] }],
  ],
];

const rejected: Array<[kind: string, option: string, text: string]> = [
  ["integer with letters", "server.listen_port", "90a"],
  ["integer with a fraction", "server.listen_port", "1.5"],
  ["integer, empty", "server.listen_port", ""],
  ["boolean yes", "server.seccomp", "yes"],
  ["boolean, empty", "server.seccomp", ""],
  ["list, bad JSON array", "key_sources.filesystem.paths", '["/a",'],
  ["record, not JSON", "auth_policies", "vc=token"],
];

describe("parseTextValue", () => {
  for (const [kind, option, text, expected] of parsed) {
    test(`${kind}: ${JSON.stringify(text)}`, () => {
      expect(parseTextValue(node(option), text)).toEqual({ ok: true, value: expected });
    });
  }
  for (const [kind, option, text] of rejected) {
    test(`rejects ${kind}: ${JSON.stringify(text)}`, () => {
      const result = parseTextValue(node(option), text);
      expect(result.ok).toBe(false);
      expect(result.ok ? "" : result.message).not.toBe("");
    });
  }
});
