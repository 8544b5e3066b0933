// One policy-rule schema, four callers: the same rules through the config file (static_auth), the
// Auth API of a real stateful signer, `sigil operator auth policy create --rules` against it, and
// the signer_state codec reading a stored policy. Each must accept or refuse each rule alike, and
// word a refusal alike after the path of the problem.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { loadConfig } from "../../src/config/load";
import { decodePolicy } from "../../src/state/codec";
import { bootstrapStateful, managementCall } from "../support/ceremony";
import { runSigilAsync, TempDir } from "../support/cli";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { INTEROP_KEYS } from "../support/slashing";

const KEY = INTEROP_KEYS[0] ?? "";

interface Case {
  readonly name: string;
  readonly rule: unknown;
  /** Refused: the path of the problem inside the rule, and a fragment of its wording. */
  readonly refused?: { readonly at: string; readonly says: string };
}

const CASES: readonly Case[] = [
  {
    name: "an unknown field",
    rule: { effect: "allow", scope: ["sign"] },
    refused: { at: ".scope", says: "unknown field" },
  },
  {
    name: "an effect other than allow or deny",
    rule: { effect: "permit" },
    refused: { at: ".effect", says: '"allow" or "deny"' },
  },
  {
    name: "no effect",
    rule: { scopes: ["sign"] },
    refused: { at: ".effect", says: "is required" },
  },
  {
    name: "an unknown scope",
    rule: { effect: "allow", scopes: ["sign", "everything"] },
    refused: { at: ".scopes[1]", says: 'unknown scope "everything"' },
  },
  {
    name: "scopes that are not a list",
    rule: { effect: "allow", scopes: "sign" },
    refused: { at: ".scopes", says: "a list of scopes" },
  },
  {
    name: "a public key that is too short",
    rule: { effect: "allow", keys: ["0x1234"] },
    refused: { at: ".keys[0]", says: 'invalid public key "0x1234"' },
  },
  {
    name: "a public key that is not a string",
    rule: { effect: "allow", keys: [5] },
    refused: { at: ".keys[0]", says: "invalid public key 5" },
  },
  {
    name: "an unknown signing operation",
    rule: { effect: "deny", operations: ["DEPOSIT"] },
    refused: { at: ".operations[0]", says: 'unknown signing operation "DEPOSIT"' },
  },
  {
    name: "an operation in the wrong case",
    rule: { effect: "deny", operations: ["attestation"] },
    refused: { at: ".operations[0]", says: 'unknown signing operation "attestation"' },
  },
  {
    name: "a rule that is a string",
    rule: "allow",
    refused: { at: "", says: "must be an object" },
  },
  {
    name: "a rule that is a list",
    rule: [{ effect: "allow" }],
    refused: { at: "", says: "must be an object" },
  },
  { name: "a rule that is null", rule: null, refused: { at: "", says: "must be an object" } },
  { name: "an allow-everything rule", rule: { effect: "allow" } },
  {
    name: "every dimension, a key in upper case, an empty list",
    rule: {
      effect: "deny",
      scopes: ["sign", "signer_status"],
      keys: [`0x${KEY.slice(2).toUpperCase()}`],
      operations: [],
    },
  },
];

/** What one caller made of a rule: accepted, or refused with the problem's path and wording. */
type Verdict = { accepted: true } | { accepted: false; at: string; problem: string };

/** Splits "<prefix><at>: <problem>" into the path inside the rule and the wording after it. */
function refusal(message: string, prefix: string, at: string): Verdict {
  const start = message.indexOf(`${prefix}${at}: `);
  if (start < 0) return { accepted: false, at: `(not found in: ${message})`, problem: "" };
  const problem = message.slice(start + prefix.length + at.length + 2).trim();
  return { accepted: false, at, problem };
}

const dir = new TempDir();
let signer: InProcessSigner;
let management = "";

beforeAll(async () => {
  signer = await startInProcessSigner(dir, "rules", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ],
  });
  management = (await bootstrapStateful(signer.url, signer.logs)).management;
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

async function throughConfig(rule: unknown, at: string): Promise<Verdict> {
  const rules = JSON.stringify([rule]);
  const file = dir.file("static.yaml", `static_auth: {policies: [{name: p, rules: ${rules}}]}\n`);
  const loaded = loadConfig({ argv: ["-c", file], env: {} });
  if (loaded.ok) return { accepted: true };
  const messages = loaded.problems.map((p) => `${p.where}: ${p.message}`).join("\n");
  return refusal(messages, "static_auth.policies[0].rules[0]", at);
}

async function throughApi(rule: unknown, at: string, n: number): Promise<Verdict> {
  const answer = await managementCall(
    signer.url,
    management,
    "POST",
    "/api/v1/signer/auth/policies",
    {
      name: `api-${n}`,
      rules: [rule],
    },
  );
  if (answer.status === 201) return { accepted: true };
  expect(answer.status).toBe(400);
  expect(answer.body.code).toBe("invalid_request");
  return refusal(String(answer.body.message), "rules[0]", at);
}

async function throughCli(rule: unknown, at: string, n: number): Promise<Verdict> {
  const result = await runSigilAsync(
    [
      ...["operator", "auth", "policy", "create", "--name", `cli-${n}`],
      ...["--rules", JSON.stringify([rule]), "--signer-url", signer.url, "--token", "env:MGMT"],
    ],
    { MGMT: management },
  );
  if (result.code === 0) return { accepted: true };
  expect(result.code, result.stderr).toBe(2);
  return refusal(result.stderr, "sigil: --rules: [0]", at);
}

async function throughCodec(rule: unknown, at: string): Promise<Verdict> {
  try {
    decodePolicy("stored", JSON.stringify([rule]));
    return { accepted: true };
  } catch (error) {
    return refusal((error as Error).message, 'stored policy "stored": rules[0]', at);
  }
}

describe("a policy rule gets one verdict from config, API, CLI and the state codec", () => {
  for (const [n, { name, rule, refused }] of CASES.entries()) {
    test(name, async () => {
      const at = refused?.at ?? "";
      const verdicts = {
        config: await throughConfig(rule, at),
        api: await throughApi(rule, at, n),
        cli: await throughCli(rule, at, n),
        codec: await throughCodec(rule, at),
      };
      if (!refused) {
        for (const verdict of Object.values(verdicts)) expect(verdict).toEqual({ accepted: true });
        return;
      }
      const { problem } = verdicts.api as { problem: string };
      expect(problem).toContain(refused.says);
      for (const verdict of Object.values(verdicts)) {
        expect(verdict).toEqual({ accepted: false, at, problem });
      }
    });
  }

  test("the accepted rules were created through the API and the CLI, keys in lower case", async () => {
    const listed = await managementCall(
      signer.url,
      management,
      "GET",
      "/api/v1/signer/auth/policies",
    );
    const policies = listed.body.data as { name: string; rules: { keys?: string[] }[] }[];
    const accepted = CASES.flatMap((c, n) => (c.refused ? [] : [`api-${n}`, `cli-${n}`]));
    expect(policies.map((p) => p.name).sort()).toEqual(accepted.sort());
    const keys = policies.flatMap((p) => p.rules.flatMap((r) => r.keys ?? []));
    expect(keys).toEqual([KEY.toLowerCase(), KEY.toLowerCase()]);
  });
});
