import { type RuleInput, RulesSchema } from "../../auth/schema";
import { routePath } from "../../http/table";
import { checkShape, describeProblem } from "../../wire/check";
import { defineCommand } from "../command";
import { EXIT_USAGE, fail } from "../exit";
import { call, clientFromFlags, connectionArgs, jsonArgs, requiredTokenArgs } from "./client";
import {
  booleanFlag,
  type FlagValues,
  inlineOrFile,
  listFlag,
  parseFlags,
  requiredFlag,
  stringFlag,
} from "./flags";
import {
  asRecord,
  dataArray,
  formatFields,
  formatTable,
  list,
  note,
  printJson,
  printText,
  text,
} from "./output";

const commonArgs = { ...connectionArgs, ...requiredTokenArgs, ...jsonArgs } as const;

const nameArgs = {
  name: {
    type: "string",
    valueHint: "name",
    required: true,
    description: "Policy name (required)",
  },
} as const;

const rulesArgs = {
  rules: {
    type: "string",
    valueHint: "json|@file",
    required: true,
    description:
      'JSON array of rules, e.g. \'[{"effect":"allow","scopes":["sign"]}]\', or @file.json (@- for standard input) (required)',
  },
} as const;

/**
 * `--rules`: a JSON array of rules, checked by the schema the server checks it with (and the
 * config's static_auth): a bad rule is refused before any request, worded as the server words it
 * (`[0].effect: must be "allow" or "deny"`). Whether a policy of that name exists stays the
 * server's to judge.
 */
export function parseRules(
  raw: string,
): { ok: true; rules: RuleInput[] } | { ok: false; reason: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    return {
      ok: false,
      reason: `not valid JSON (${error instanceof Error ? error.message : error})`,
    };
  }
  const checked = checkShape(RulesSchema, parsed);
  return checked.ok
    ? { ok: true, rules: checked.value }
    : { ok: false, reason: describeProblem(checked) };
}

function rulesFlag(values: FlagValues): RuleInput[] {
  const raw = requiredFlag(values, "rules", "a JSON array of rules, or @file.json");
  const parsed = parseRules(inlineOrFile("rules", raw));
  if (!parsed.ok) fail(`--rules: ${parsed.reason}`, EXIT_USAGE);
  return parsed.rules;
}

function policyPath(name: string): string {
  return routePath("getPolicy", { name });
}

/** A dimension a rule does not name matches anything; an empty list matches nothing. */
function dimension(value: unknown): string {
  return list(value, Array.isArray(value) ? "none" : "any");
}

function formatPolicy(body: unknown): string {
  const policy = asRecord(body);
  const rules = Array.isArray(policy.rules) ? policy.rules : [];
  const head = `policy ${text(policy.name)}`;
  if (rules.length === 0) return `${head}\n(no rules: denies everything)`;
  const rows = rules.map((rule, i) => {
    const r = asRecord(rule);
    return [
      String(i + 1),
      text(r.effect),
      dimension(r.scopes),
      dimension(r.operations),
      dimension(r.keys),
    ];
  });
  return `${head}\n\n${formatTable(["#", "EFFECT", "SCOPES", "OPERATIONS", "KEYS"], rows)}`;
}

function printPolicy(values: FlagValues, body: unknown): void {
  if (booleanFlag(values, "json")) printJson(body);
  else printText(formatPolicy(body));
}

const policyCreate = defineCommand({
  meta: {
    name: "create",
    description: "Create a policy",
    examples: [
      `sigil operator auth policy create --token env:SIGIL_MANAGEMENT_TOKEN --name validator-client --rules '[{"effect":"allow","scopes":["sign","list_keys"]}]'`,
      `sigil operator auth policy create --token env:SIGIL_MANAGEMENT_TOKEN --name monitoring --rules @monitoring-rules.json`,
    ],
  },
  args: { ...nameArgs, ...rulesArgs, ...commonArgs },
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, { ...nameArgs, ...rulesArgs, ...commonArgs });
    const name = requiredFlag(values, "name", "the policy name");
    const rules = rulesFlag(values);
    const client = clientFromFlags(values, true);
    const { body } = await call(client, "POST", routePath("createPolicy"), {
      body: { name, rules },
    });
    printPolicy(values, body);
  },
});

const policyList = defineCommand({
  meta: {
    name: "list",
    description: "List the policies",
    examples: ["sigil operator auth policy list --token env:SIGIL_MANAGEMENT_TOKEN"],
  },
  args: commonArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, commonArgs);
    const client = clientFromFlags(values, true);
    const { body } = await call(client, "GET", routePath("listPolicies"));
    if (booleanFlag(values, "json")) return printJson(body);
    const policies = dataArray(body).map(asRecord);
    if (policies.length === 0) return note("no policies");
    const rows = policies.map((p) => {
      const rules = Array.isArray(p.rules) ? p.rules.map(asRecord) : [];
      const count = (effect: string) => rules.filter((r) => r.effect === effect).length;
      return [text(p.name), String(rules.length), String(count("allow")), String(count("deny"))];
    });
    printText(formatTable(["NAME", "RULES", "ALLOW", "DENY"], rows));
  },
});

const policyGet = defineCommand({
  meta: {
    name: "get",
    description: "Show one policy",
    examples: [
      "sigil operator auth policy get --token env:SIGIL_MANAGEMENT_TOKEN --name validator-client",
    ],
  },
  args: { ...nameArgs, ...commonArgs },
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, { ...nameArgs, ...commonArgs });
    const name = requiredFlag(values, "name", "the policy name");
    const client = clientFromFlags(values, true);
    const { body } = await call(client, "GET", policyPath(name));
    printPolicy(values, body);
  },
});

const policyUpdate = defineCommand({
  meta: {
    name: "update",
    description: "Replace the rules of a policy",
    examples: [
      "sigil operator auth policy update --token env:SIGIL_MANAGEMENT_TOKEN --name monitoring --rules @monitoring-rules.json",
    ],
  },
  args: { ...nameArgs, ...rulesArgs, ...commonArgs },
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, { ...nameArgs, ...rulesArgs, ...commonArgs });
    const name = requiredFlag(values, "name", "the policy name");
    const rules = rulesFlag(values);
    const client = clientFromFlags(values, true);
    const { body } = await call(client, "PUT", policyPath(name), { body: { rules } });
    printPolicy(values, body);
  },
});

const policyDelete = defineCommand({
  meta: {
    name: "delete",
    description: "Delete a policy",
    examples: [
      "sigil operator auth policy delete --token env:SIGIL_MANAGEMENT_TOKEN --name monitoring",
    ],
  },
  args: { ...nameArgs, ...commonArgs },
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, { ...nameArgs, ...commonArgs });
    const name = requiredFlag(values, "name", "the policy name");
    const client = clientFromFlags(values, true);
    await call(client, "DELETE", policyPath(name));
    note(`deleted policy ${name}`);
  },
});

const tokenCreateArgs = {
  policies: {
    type: "string",
    valueHint: "a,b",
    required: true,
    description: "Policies bound to the token, comma-separated (required)",
  },
  "ttl-seconds": {
    type: "string",
    valueHint: "n",
    required: true,
    description: "Lifetime in seconds (required)",
  },
  "token-bound-cidrs": {
    type: "string",
    valueHint: "cidr,cidr",
    description: "Source CIDRs the token is restricted to, comma-separated (default: any)",
  },
} as const;

const tokenCreate = defineCommand({
  meta: {
    name: "create",
    description: "Mint a client token (printed once: store it when it is shown)",
    examples: [
      "sigil operator auth token create --token env:SIGIL_MANAGEMENT_TOKEN --policies validator-client --ttl-seconds 2592000 --token-bound-cidrs 10.0.1.0/24",
    ],
  },
  args: { ...tokenCreateArgs, ...commonArgs },
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, { ...tokenCreateArgs, ...commonArgs });
    const policies = listFlag(requiredFlag(values, "policies", "comma-separated policy names"));
    if (policies.length === 0) fail("--policies names no policy", EXIT_USAGE);
    const ttl = requiredFlag(values, "ttl-seconds", "the token lifetime in seconds");
    if (!/^[1-9]\d*$/.test(ttl) || !Number.isSafeInteger(Number(ttl)))
      fail(`--ttl-seconds: "${ttl}" is not a positive whole number of seconds`, EXIT_USAGE);
    const cidrs = stringFlag(values, "token-bound-cidrs");
    const body = {
      policies,
      ttl_seconds: Number(ttl),
      ...(cidrs !== undefined ? { token_bound_cidrs: listFlag(cidrs) } : {}),
    };
    const client = clientFromFlags(values, true);
    const response = await call(client, "POST", routePath("createToken"), { body });
    if (booleanFlag(values, "json")) printJson(response.body);
    else {
      const t = asRecord(response.body);
      printText(
        formatFields([
          ["token", text(t.token)],
          ["accessor", text(t.accessor)],
          ["policies", list(t.policies, "-")],
          ["token_bound_cidrs", list(t.token_bound_cidrs, "any")],
          ["created_at", text(t.created_at)],
          ["expires_at", text(t.expires_at, "never")],
        ]),
      );
    }
    note(
      "The token is shown only this once and cannot be retrieved again: hand it to its client now. Revoke it by its accessor.",
    );
  },
});

const tokenList = defineCommand({
  meta: {
    name: "list",
    description: "List the tokens (accessors and metadata, never the tokens)",
    examples: ["sigil operator auth token list --token env:SIGIL_MANAGEMENT_TOKEN"],
  },
  args: commonArgs,
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, commonArgs);
    const client = clientFromFlags(values, true);
    const { body } = await call(client, "GET", routePath("listTokens"));
    if (booleanFlag(values, "json")) return printJson(body);
    const tokens = dataArray(body).map(asRecord);
    if (tokens.length === 0) return note("no tokens");
    const rows = tokens.map((t) => [
      text(t.accessor),
      text(t.kind),
      list(t.policies, "-"),
      list(t.token_bound_cidrs, "any"),
      text(t.created_at),
      text(t.expires_at, "never"),
    ]);
    printText(formatTable(["ACCESSOR", "KIND", "POLICIES", "CIDRS", "CREATED", "EXPIRES"], rows));
  },
});

const accessorArgs = {
  accessor: {
    type: "string",
    valueHint: "id",
    required: true,
    description: "Accessor of the token to revoke, from token list (required)",
  },
} as const;

const tokenRevoke = defineCommand({
  meta: {
    name: "revoke",
    description: "Revoke a token by its accessor",
    examples: [
      'sigil operator auth token revoke --token env:SIGIL_MANAGEMENT_TOKEN --accessor "$ACCESSOR"',
    ],
  },
  args: { ...accessorArgs, ...commonArgs },
  async run({ rawArgs }) {
    const values = parseFlags(rawArgs, { ...accessorArgs, ...commonArgs });
    const accessor = requiredFlag(values, "accessor", "the token's accessor, from token list");
    const client = clientFromFlags(values, true);
    await call(client, "DELETE", routePath("revokeToken", { accessor }));
    note(`revoked token ${accessor}`);
  },
});

export const authCommand = defineCommand({
  meta: {
    name: "auth",
    description: "Manage policies and client tokens (stateful mode, management token)",
    examples: [
      "sigil operator auth policy list --token env:SIGIL_MANAGEMENT_TOKEN",
      "sigil operator auth token list --token env:SIGIL_MANAGEMENT_TOKEN",
    ],
  },
  subCommands: {
    policy: defineCommand({
      meta: {
        name: "policy",
        description: "Create, list, show, update and delete policies",
        examples: ["sigil operator auth policy list --token env:SIGIL_MANAGEMENT_TOKEN"],
      },
      subCommands: {
        create: policyCreate,
        list: policyList,
        get: policyGet,
        update: policyUpdate,
        delete: policyDelete,
      },
    }),
    token: defineCommand({
      meta: {
        name: "token",
        description: "Mint, list and revoke client tokens",
        examples: ["sigil operator auth token list --token env:SIGIL_MANAGEMENT_TOKEN"],
      },
      subCommands: { create: tokenCreate, list: tokenList, revoke: tokenRevoke },
    }),
  },
});
