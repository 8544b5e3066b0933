import { describe, expect, test } from "bun:test";
import { loadConfig } from "./load";
import { type ConfigProblem, formatProblems } from "./problems";
import type { Config, LegacyPolicyConfig, PolicyConfig } from "./schema";
import { validateConfig } from "./validate";

type Env = Record<string, string | undefined>;

const KEY_A = `0x${"a".repeat(96)}`;
const KEY_B = `0x${"B".repeat(48)}${"0".repeat(48)}`;
const TOKEN_A = "validator-client-token-A1";
const TOKEN_B = "monitoring-token-B2-0000";
const ARN = (n: number) =>
  `arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-${String(n).padStart(12, "0")}`;
const AGE = `age1${"q".repeat(58)}`;

/** The built-in defaults, as loadConfig produces them with no file, env or flags. */
function defaults(): Config {
  const result = loadConfig({ argv: [], env: {} });
  if (!result.ok) throw new Error(formatProblems(result.problems));
  return structuredClone(result.config);
}

function configWith(edit: (config: Config) => void): Config {
  const config = defaults();
  edit(config);
  return config;
}

function legacy(policies: Record<string, Partial<LegacyPolicyConfig>>): Config {
  return configWith((c) => {
    c.auth_policies = Object.fromEntries(
      Object.entries(policies).map(([name, p]) => [name, { token: TOKEN_A, ...p }]),
    );
  });
}

const allowAll: PolicyConfig = { name: "all", rules: [{ effect: "allow" }] };

function staticAuth(auth: NonNullable<Config["static_auth"]>): Config {
  return configWith((c) => {
    c.static_auth = auth;
  });
}

/**
 * What loading reports for static_auth policies and tokens given as JSON (as the environment
 * gives them): their rules and CIDRs are wire shapes, checked with the config's structure by the
 * schema the Auth API uses, not by validateConfig.
 */
function loadStatic(auth: { policies: unknown; tokens?: unknown }): ConfigProblem[] {
  const env: Env = { SIGNER_STATIC_AUTH__POLICIES: JSON.stringify(auth.policies) };
  if (auth.tokens !== undefined) env.SIGNER_STATIC_AUTH__TOKENS = JSON.stringify(auth.tokens);
  const result = loadConfig({ argv: [], env });
  return result.ok ? [] : result.problems;
}

const where = (problems: ConfigProblem[]) => problems.map((p) => p.where);
const text = (problems: ConfigProblem[]) =>
  problems.map((p) => `${p.where}: ${p.message}`).join("\n");

describe("valid configurations", () => {
  test("the defaults are valid", () => {
    expect(validateConfig(defaults(), {})).toEqual([]);
  });

  test("a full legacy auth_policies config has no problems", () => {
    const config = configWith((c) => {
      c.auth_policies = {
        validator: {
          token: TOKEN_A,
          allowed_keys: [KEY_A, KEY_B],
          allowed_scopes: ["sign", "public_keys"],
          denied_signing_operations: ["VOLUNTARY_EXIT"],
        },
        monitoring: {
          token: "env:MONITORING_TOKEN",
          allowed_scopes: ["public_keys", "list_keys"],
        },
        exit: {
          token: "exit-operator-token-0003",
          denied_scopes: ["import_keystores", "delete_keys"],
          allowed_signing_operations: ["VOLUNTARY_EXIT"],
        },
        everything: { token: "0123456789abcdef" },
      };
      c.unauthenticated_policy = {
        allowed_scopes: ["public_keys"],
      };
      c.canary_keys = [KEY_B];
    });
    expect(validateConfig(config, { MONITORING_TOKEN: TOKEN_B })).toEqual([]);
  });

  test("a full static_auth config has no problems", () => {
    const config = staticAuth({
      policies: [
        {
          name: "validator",
          rules: [
            { effect: "allow", scopes: ["sign", "public_keys"], keys: [KEY_A, KEY_B] },
            { effect: "deny", operations: ["VOLUNTARY_EXIT"] },
          ],
        },
        {
          name: "monitoring",
          rules: [{ effect: "allow", scopes: ["public_keys", "list_keys", "signer_status"] }],
        },
        {
          name: "exit",
          rules: [{ effect: "allow", scopes: ["sign"], operations: ["VOLUNTARY_EXIT"] }],
        },
      ],
      anonymous: { policies: ["monitoring"] },
      tokens: [
        { secret: TOKEN_A, policies: ["validator"], token_bound_cidrs: ["10.0.0.0/8", "::1/128"] },
        { secret: "env:EXIT_TOKEN", policies: ["exit", "monitoring"] },
        { secret: TOKEN_B, policies: ["monitoring"], token_bound_cidrs: ["2001:db8::/32"] },
      ],
    });
    expect(validateConfig(config, { EXIT_TOKEN: "exit-operator-token-0003" })).toEqual([]);
  });

  test("a legacy config loaded from env has no problems", () => {
    const result = loadConfig({
      argv: [],
      env: {
        SIGNER_AUTH_POLICIES: JSON.stringify({ vc: { token: TOKEN_A, allowed_keys: [KEY_A] } }),
        SIGNER_UNAUTHENTICATED_POLICY__ALLOWED_SCOPES: "public_keys",
        SIGNER_CANARY_KEYS: KEY_B,
      },
    });
    expect(result.ok ? [] : result.problems).toEqual([]);
    expect(result.warnings).toEqual([]);
    if (!result.ok) return;
    expect(result.config.unauthenticated_policy).toEqual({ allowed_scopes: ["public_keys"] });
    expect(result.config.canary_keys).toEqual([KEY_B]);
    expect(validateConfig(result.config, {})).toEqual([]);
  });
});

describe("legacy policy field pairs", () => {
  test("allowed_signing_operations and denied_signing_operations both set", () => {
    const problems = validateConfig(
      legacy({
        vc: {
          allowed_signing_operations: ["ATTESTATION"],
          denied_signing_operations: ["VOLUNTARY_EXIT"],
        },
      }),
      {},
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]?.where).toStartWith("auth_policies.vc");
  });

  test("allowed_scopes and denied_scopes both set", () => {
    const problems = validateConfig(
      legacy({ vc: { allowed_scopes: ["sign"], denied_scopes: ["delete_keys"] } }),
      {},
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]?.where).toStartWith("auth_policies.vc");
  });

  test("both pairs in unauthenticated_policy", () => {
    const config = configWith((c) => {
      c.unauthenticated_policy = {
        allowed_scopes: ["public_keys"],
        denied_scopes: ["sign"],
        allowed_signing_operations: ["ATTESTATION"],
        denied_signing_operations: ["BLOCK_V2"],
      };
    });
    const problems = validateConfig(config, {});
    expect(problems.length).toBeGreaterThanOrEqual(2);
    for (const p of problems) expect(p.where).toStartWith("unauthenticated_policy");
  });

  test("only one of each pair is fine", () => {
    expect(
      validateConfig(
        legacy({ vc: { denied_scopes: ["delete_keys"], denied_signing_operations: ["BLOCK_V2"] } }),
        {},
      ),
    ).toEqual([]);
  });
});

describe("allowed_signing_operations while the sign scope is denied", () => {
  test("via denied_scopes: [sign]", () => {
    const problems = validateConfig(
      legacy({ vc: { denied_scopes: ["sign"], allowed_signing_operations: ["ATTESTATION"] } }),
      {},
    );
    expect(where(problems)).toEqual(["auth_policies.vc"]);
  });

  test("via allowed_scopes without sign", () => {
    const problems = validateConfig(
      legacy({
        vc: { allowed_scopes: ["public_keys"], allowed_signing_operations: ["ATTESTATION"] },
      }),
      {},
    );
    expect(where(problems)).toEqual(["auth_policies.vc"]);
  });

  test("in unauthenticated_policy", () => {
    const config = configWith((c) => {
      c.unauthenticated_policy = {
        denied_scopes: ["sign"],
        allowed_signing_operations: ["ATTESTATION"],
      };
    });
    expect(where(validateConfig(config, {}))).toEqual(["unauthenticated_policy"]);
  });

  test("allowed_scopes including sign is fine", () => {
    const config = legacy({
      vc: { allowed_scopes: ["public_keys", "sign"], allowed_signing_operations: ["ATTESTATION"] },
    });
    expect(validateConfig(config, {})).toEqual([]);
  });

  test("denied_signing_operations with sign denied is not this error", () => {
    const config = legacy({
      vc: { denied_scopes: ["sign"], denied_signing_operations: ["ATTESTATION"] },
    });
    expect(validateConfig(config, {})).toEqual([]);
  });
});

describe("legacy tokens", () => {
  test("a 15-character token is invalid; 16 characters is enough", () => {
    const short = "abcdefghij-1234";
    expect(short).toHaveLength(15);
    const problems = validateConfig(legacy({ vc: { token: short } }), {});
    expect(where(problems)).toEqual(["auth_policies.vc.token"]);
    expect(validateConfig(legacy({ vc: { token: `${short}5` } }), {})).toEqual([]);
  });

  for (const bad of [
    "abcdefgh_ijklmnop",
    "abcdefgh ijklmnop",
    "abcdefgh.ijklmnop",
    "abcdefghijklmnöp",
    "abcdefgh:ijklmnop",
  ]) {
    test(`token with an invalid character: ${JSON.stringify(bad)}`, () => {
      const problems = validateConfig(legacy({ vc: { token: bad } }), {});
      expect(where(problems)).toEqual(["auth_policies.vc.token"]);
      expect(text(problems)).not.toContain(bad);
    });
  }

  test("an invalid token coming from env: is also rejected", () => {
    const problems = validateConfig(legacy({ vc: { token: "env:VC_TOKEN" } }), {
      VC_TOKEN: "too-short",
    });
    expect(where(problems)).toEqual(["auth_policies.vc.token"]);
  });

  test("two policies sharing the same token", () => {
    const problems = validateConfig(legacy({ a: { token: TOKEN_A }, b: { token: TOKEN_A } }), {});
    expect(problems).toHaveLength(1);
    expect(problems[0]?.where).toMatch(/^auth_policies\.(a|b)\.token$/);
    expect(text(problems)).not.toContain(TOKEN_A);
  });

  test("two policies sharing a token when one comes via env:", () => {
    const problems = validateConfig(
      legacy({ a: { token: TOKEN_A }, b: { token: "env:B_TOKEN" } }),
      { B_TOKEN: TOKEN_A },
    );
    expect(problems).toHaveLength(1);
    expect(text(problems)).not.toContain(TOKEN_A);
  });

  test("two policies whose env: tokens resolve to the same value", () => {
    const problems = validateConfig(
      legacy({ a: { token: "env:A_TOKEN" }, b: { token: "env:B_TOKEN" } }),
      { A_TOKEN: TOKEN_B, B_TOKEN: TOKEN_B },
    );
    expect(problems).toHaveLength(1);
    expect(text(problems)).not.toContain(TOKEN_B);
  });

  test("an env: token whose variable is not set", () => {
    const problems = validateConfig(legacy({ vc: { token: "env:SIGIL_TEST_UNSET_TOKEN" } }), {});
    expect(where(problems)).toEqual(["auth_policies.vc.token"]);
    expect(problems[0]?.message).toContain("SIGIL_TEST_UNSET_TOKEN");
  });

  test("the environment is the argument, not process.env", () => {
    const config = legacy({ vc: { token: "env:PATH" } });
    expect(where(validateConfig(config, {}))).toEqual(["auth_policies.vc.token"]);
  });
});

describe("unknown signing operation", () => {
  test("in auth_policies (both lists, wrong case included)", () => {
    const problems = validateConfig(
      legacy({
        a: { allowed_signing_operations: ["ATTESTATION", "SIGN_EVERYTHING"] },
        b: { token: TOKEN_B, denied_signing_operations: ["attestation"] },
      }),
      {},
    );
    expect(where(problems).sort()).toEqual([
      "auth_policies.a.allowed_signing_operations[1]",
      "auth_policies.b.denied_signing_operations[0]",
    ]);
    expect(text(problems)).toContain("SIGN_EVERYTHING");
  });

  test("in unauthenticated_policy", () => {
    const config = configWith((c) => {
      c.unauthenticated_policy = { denied_signing_operations: ["BLOCK"] };
    });
    expect(where(validateConfig(config, {}))).toEqual([
      "unauthenticated_policy.denied_signing_operations[0]",
    ]);
  });

  test("in a static_auth rule", () => {
    const problems = loadStatic({
      policies: [
        { name: "p", rules: [{ effect: "deny", operations: ["VOLUNTARY_EXIT", "EXIT"] }] },
      ],
    });
    expect(where(problems)).toEqual(["static_auth.policies[0].rules[0].operations[1]"]);
    expect(problems[0]?.message).toStartWith('unknown signing operation "EXIT"');
  });

  test("every operation of the spec is known", () => {
    const all = [
      "AGGREGATION_SLOT",
      "AGGREGATE_AND_PROOF",
      "ATTESTATION",
      "BLOCK_V2",
      "RANDAO_REVEAL",
      "SYNC_COMMITTEE_CONTRIBUTION_AND_PROOF",
      "SYNC_COMMITTEE_MESSAGE",
      "SYNC_COMMITTEE_SELECTION_PROOF",
      "VALIDATOR_REGISTRATION",
      "VOLUNTARY_EXIT",
    ];
    expect(validateConfig(legacy({ vc: { denied_signing_operations: all } }), {})).toEqual([]);
    expect(
      loadStatic({ policies: [{ name: "p", rules: [{ effect: "allow", operations: all }] }] }),
    ).toEqual([]);
  });
});

describe("invalid public key format", () => {
  const bad: Array<[string, string]> = [
    ["95 hex characters", `0x${"a".repeat(95)}`],
    ["97 hex characters", `0x${"a".repeat(97)}`],
    ["no 0x prefix", "a".repeat(96)],
    ["non-hex character", `0x${"g".repeat(96)}`],
    ["0X prefix", `0X${"a".repeat(96)}`],
  ];

  for (const [label, key] of bad) {
    test(`${label}: in allowed_keys, static rule keys and canary_keys`, () => {
      const config = configWith((c) => {
        c.auth_policies = { vc: { token: TOKEN_A, allowed_keys: [KEY_A, key] } };
        c.unauthenticated_policy = { allowed_keys: [key] };
        c.canary_keys = [key, KEY_B];
      });
      expect(where(validateConfig(config, {})).sort()).toEqual([
        "auth_policies.vc.allowed_keys[1]",
        "canary_keys[0]",
        "unauthenticated_policy.allowed_keys[0]",
      ]);
      const problems = loadStatic({
        policies: [{ name: "p", rules: [{ effect: "allow", keys: [key] }] }],
      });
      expect(where(problems)).toEqual(["static_auth.policies[0].rules[0].keys[0]"]);
      expect(problems[0]?.message).toContain("invalid public key");
    });
  }

  test("upper- and lower-case hex are both valid", () => {
    const config = configWith((c) => {
      c.canary_keys = [KEY_A, KEY_B, `0x${"ABCDEF0123".repeat(9)}abcdef`];
    });
    expect(validateConfig(config, {})).toEqual([]);
  });
});

describe("legacy scopes", () => {
  test("signer_status is rejected in legacy scopes", () => {
    const config = configWith((c) => {
      c.auth_policies = {
        vc: { token: TOKEN_A, allowed_scopes: ["public_keys", "signer_status"] },
      };
      c.unauthenticated_policy = { denied_scopes: ["signer_status"] };
    });
    expect(where(validateConfig(config, {})).sort()).toEqual([
      "auth_policies.vc.allowed_scopes[1]",
      "unauthenticated_policy.denied_scopes[0]",
    ]);
  });

  test("signer_status is accepted in static_auth rules", () => {
    expect(
      loadStatic({
        policies: [{ name: "mon", rules: [{ effect: "allow", scopes: ["signer_status"] }] }],
      }),
    ).toEqual([]);
  });

  test("an unknown scope is rejected in both models", () => {
    expect(
      where(validateConfig(legacy({ vc: { allowed_scopes: ["sign", "signing"] } }), {})),
    ).toEqual(["auth_policies.vc.allowed_scopes[1]"]);
    const problems = loadStatic({
      policies: [{ name: "p", rules: [{ effect: "allow", scopes: ["everything"] }] }],
    });
    expect(where(problems)).toEqual(["static_auth.policies[0].rules[0].scopes[0]"]);
    expect(problems[0]?.message).toStartWith('unknown scope "everything"');
  });
});

describe("static_auth", () => {
  test("static_auth with signer_state (stateful mode) is rejected", () => {
    const config = configWith((c) => {
      c.static_auth = { policies: [allowAll], tokens: [{ secret: TOKEN_A, policies: ["all"] }] };
      c.signer_state = {
        backend: "sqlite",
        path: "./state.sqlite",
        pool_size: 4,
        force_ipv4: false,
      };
    });
    expect(where(validateConfig(config, {}))).toContain("static_auth");
  });

  test("signer_state alone is fine", () => {
    const config = configWith((c) => {
      c.signer_state = {
        backend: "sqlite",
        path: "./state.sqlite",
        pool_size: 4,
        force_ipv4: false,
      };
    });
    expect(validateConfig(config, {})).toEqual([]);
  });

  test("a token naming an unknown policy", () => {
    const config = staticAuth({
      policies: [allowAll],
      tokens: [{ secret: TOKEN_A, policies: ["all", "nope"] }],
    });
    expect(where(validateConfig(config, {}))).toEqual(["static_auth.tokens[0].policies[1]"]);
  });

  test("anonymous naming an unknown policy", () => {
    const config = staticAuth({ policies: [allowAll], anonymous: { policies: ["missing"] } });
    expect(where(validateConfig(config, {}))).toEqual(["static_auth.anonymous.policies[0]"]);
  });

  test("a policy defined later can be referenced", () => {
    const config = staticAuth({
      policies: [allowAll, { name: "late", rules: [] }],
      anonymous: { policies: ["late"] },
      tokens: [{ secret: TOKEN_A, policies: ["late"] }],
    });
    expect(validateConfig(config, {})).toEqual([]);
  });

  test("duplicate policy names", () => {
    const config = staticAuth({ policies: [allowAll, { name: "all", rules: [] }] });
    const problems = validateConfig(config, {});
    expect(problems).toHaveLength(1);
    expect(problems[0]?.where).toStartWith("static_auth.policies[1]");
  });

  test("an env: secret whose variable is not set", () => {
    const config = staticAuth({
      policies: [allowAll],
      tokens: [{ secret: "env:SIGIL_TEST_UNSET_SECRET", policies: ["all"] }],
    });
    const problems = validateConfig(config, {});
    expect(where(problems)).toEqual(["static_auth.tokens[0].secret"]);
    expect(problems[0]?.message).toContain("SIGIL_TEST_UNSET_SECRET");
    expect(validateConfig(config, { SIGIL_TEST_UNSET_SECRET: TOKEN_B })).toEqual([]);
  });

  test("a secret under 16 characters is invalid", () => {
    const secret = "short-secret-15";
    const config = staticAuth({ policies: [allowAll], tokens: [{ secret, policies: ["all"] }] });
    const problems = validateConfig(config, {});
    expect(where(problems)).toEqual(["static_auth.tokens[0].secret"]);
    expect(text(problems)).not.toContain(secret);
  });

  test("a secret with a space is invalid", () => {
    const secret = "static secret with spaces";
    const config = staticAuth({ policies: [allowAll], tokens: [{ secret, policies: ["all"] }] });
    expect(where(validateConfig(config, {}))).toEqual(["static_auth.tokens[0].secret"]);
  });

  test("two tokens sharing a secret (also via env:)", () => {
    const config = staticAuth({
      policies: [allowAll],
      tokens: [
        { secret: TOKEN_A, policies: ["all"] },
        { secret: "env:DUP", policies: ["all"] },
      ],
    });
    const problems = validateConfig(config, { DUP: TOKEN_A });
    expect(where(problems)).toEqual(["static_auth.tokens[1].secret"]);
    expect(text(problems)).not.toContain(TOKEN_A);
  });

  describe("token_bound_cidrs", () => {
    const invalid = [
      "10.0.0.0/33",
      "300.0.0.0/8",
      "10.0.0/8",
      "10.0.0.0/",
      "2001:db8::/129",
      "2001:db8:::1/64",
      "2001:db8::g/64",
      "not-a-cidr",
    ];
    for (const cidr of invalid) {
      test(`invalid: ${cidr}`, () => {
        const problems = loadStatic({
          policies: [allowAll],
          tokens: [{ secret: TOKEN_A, policies: ["all"], token_bound_cidrs: ["10.0.0.0/8", cidr] }],
        });
        expect(where(problems)).toEqual(["static_auth.tokens[0].token_bound_cidrs[1]"]);
        expect(problems[0]?.message).toStartWith(`invalid CIDR ${JSON.stringify(cidr)}`);
      });
    }

    test("valid IPv4 and IPv6 forms are accepted", () => {
      const problems = loadStatic({
        policies: [allowAll],
        tokens: [
          {
            secret: TOKEN_A,
            policies: ["all"],
            token_bound_cidrs: [
              "10.0.0.0/8",
              "192.168.1.7/32",
              "0.0.0.0/0",
              "::1/128",
              "2001:db8::/32",
              "::/0",
              "127.0.0.1",
            ],
          },
        ],
      });
      expect(problems).toEqual([]);
    });
  });
});

describe("server.host_allowlist", () => {
  test("names, addresses and * are accepted; a port, a space or a path is not", () => {
    const config = configWith((c) => {
      c.server.host_allowlist = [
        "*",
        "signer.internal",
        "10.0.0.5",
        "::1",
        "[fe80::1]",
        "signer:9000",
        "a b",
        "host/path",
      ];
    });
    expect(where(validateConfig(config, {}))).toEqual([
      "server.host_allowlist[5]",
      "server.host_allowlist[6]",
      "server.host_allowlist[7]",
    ]);
  });
  test("an IPv6 zone id is refused in host_allowlist and in either listen_address", () => {
    const config = configWith((c) => {
      c.server.host_allowlist = ["fe80::1%eth0", "[fe80::1%25eth0]"];
      c.server.listen_address = "fe80::1%eth0";
      c.metrics.listen_address = "::1%lo";
    });
    const problems = validateConfig(config, {});
    expect(where(problems)).toEqual([
      "server.listen_address",
      "metrics.listen_address",
      "server.host_allowlist[0]",
      "server.host_allowlist[1]",
    ]);
    for (const problem of problems) expect(JSON.stringify(problem)).toContain("zone id");
  });
});

describe("backends and key sources", () => {
  test("postgres antislashing backend without url", () => {
    const config = configWith((c) => {
      c.antislashing.backend = "postgres";
    });
    expect(where(validateConfig(config, {}))).toEqual(["antislashing.url"]);
    config.antislashing.url = "postgres://signer:pw@db.internal:5432/slashing";
    expect(validateConfig(config, {})).toEqual([]);
  });

  test("dynamodb antislashing backend without table", () => {
    const config = configWith((c) => {
      c.antislashing.backend = "dynamodb";
    });
    expect(where(validateConfig(config, {}))).toEqual(["antislashing.table"]);
    config.antislashing.table = "slashing-protection";
    expect(validateConfig(config, {})).toEqual([]);
  });

  test("keygen.backup.enabled without recipients", () => {
    const config = configWith((c) => {
      c.key_sources.cloud_kv.keygen.backup.enabled = true;
    });
    expect(where(validateConfig(config, {}))).toEqual([
      "key_sources.cloud_kv.keygen.backup.recipients",
    ]);
    config.key_sources.cloud_kv.keygen.backup.recipients = [AGE];
    expect(validateConfig(config, {})).toEqual([]);
  });

  test("kms_key_arns get the checks of operator init: an AWS-managed alias or an upper-case key id is refused", () => {
    const config = configWith((c) => {
      c.key_sources.cloud_kv.kms_key_arns = [
        ARN(1),
        "arn:aws:kms:us-east-1:123456789012:alias/aws/ebs",
        ARN(2).toUpperCase().replace("ARN:AWS:KMS:US-EAST-1", "arn:aws:kms:us-east-1"),
      ];
    });
    expect(where(validateConfig(config, {}))).toEqual([
      "key_sources.cloud_kv.kms_key_arns[1]",
      "key_sources.cloud_kv.kms_key_arns[2]",
    ]);
  });

  test("kms_threshold greater than the number of kms_key_arns", () => {
    const config = configWith((c) => {
      c.key_sources.cloud_kv.kms_key_arns = [ARN(1), ARN(2)];
      c.key_sources.cloud_kv.kms_threshold = 3;
    });
    expect(where(validateConfig(config, {}))).toEqual(["key_sources.cloud_kv.kms_threshold"]);
    config.key_sources.cloud_kv.kms_threshold = 2;
    expect(validateConfig(config, {})).toEqual([]);
  });

  test("cloud_kv.table without signer_state", () => {
    const config = configWith((c) => {
      c.key_sources.cloud_kv.table = "validator-keys";
    });
    expect(where(validateConfig(config, {}))).toEqual(["key_sources.cloud_kv.table"]);
    config.signer_state = {
      backend: "dynamodb",
      table: "signer-state",
      pool_size: 4,
      force_ipv4: false,
    };
    expect(validateConfig(config, {})).toEqual([]);
  });
});

describe("collected problems", () => {
  test("every problem is reported, and no clear-text token appears in any message", () => {
    const tokens = {
      dupA: "shared-token-value-0001",
      short: "short-tok",
      badChar: "bad_char_token_value_01",
      staticShort: "tiny-secret",
      staticDup: "static-dup-secret-00001",
    };
    const config = configWith((c) => {
      c.auth_policies = {
        a: { token: tokens.dupA, allowed_keys: ["0x12"] },
        b: { token: "env:B_TOKEN", denied_signing_operations: ["NOPE"] },
        c: { token: tokens.short },
        d: { token: tokens.badChar, allowed_scopes: ["sign"], denied_scopes: ["list_keys"] },
      };
      c.static_auth = {
        policies: [allowAll],
        tokens: [
          { secret: tokens.staticShort, policies: ["all"] },
          { secret: tokens.staticDup, policies: ["all"] },
          { secret: "env:S_DUP", policies: ["ghost"] },
        ],
      };
      c.antislashing.backend = "postgres";
    });
    const env: Env = { B_TOKEN: tokens.dupA, S_DUP: tokens.staticDup };
    const problems = validateConfig(config, env);
    const found = where(problems);
    for (const expected of [
      "auth_policies.a.allowed_keys[0]",
      "auth_policies.b.denied_signing_operations[0]",
      "auth_policies.b.token",
      "auth_policies.c.token",
      "auth_policies.d.token",
      "auth_policies.d",
      "static_auth.tokens[0].secret",
      "static_auth.tokens[2].secret",
      "static_auth.tokens[2].policies[0]",
      // Its bad CIDR is a wire shape's problem, reported by loading (token_bound_cidrs above).
      "antislashing.url",
    ]) {
      expect(found).toContain(expected);
    }
    const all = text(problems);
    for (const secret of Object.values(tokens)) expect(all).not.toContain(secret);
  });
});

describe("listeners", () => {
  const listeners = (server: [string, number], metrics: [string, number]) =>
    validateConfig(
      configWith((c) => {
        [c.server.listen_address, c.server.listen_port] = server;
        [c.metrics.listen_address, c.metrics.listen_port] = metrics;
      }),
      {},
    );

  test("one port for both listeners on a shared address is a problem naming both", () => {
    expect(text(listeners(["127.0.0.1", 9000], ["127.0.0.1", 9000]))).toBe(
      "metrics.listen_port: is server.listen_port too (9000 on 127.0.0.1 and 127.0.0.1): the signing and the metrics listeners need different ports",
    );
    expect(where(listeners(["0.0.0.0", 9000], ["127.0.0.1", 9000]))).toEqual([
      "metrics.listen_port",
    ]);
    expect(where(listeners(["10.0.0.5", 3000], ["::", 3000]))).toEqual(["metrics.listen_port"]);
  });

  test("different ports, two specific addresses, or port 0 (any free port) are fine", () => {
    expect(listeners(["127.0.0.1", 9000], ["127.0.0.1", 3000])).toEqual([]);
    expect(listeners(["10.0.0.5", 9000], ["127.0.0.1", 9000])).toEqual([]);
    expect(listeners(["127.0.0.1", 0], ["127.0.0.1", 0])).toEqual([]);
  });
});
