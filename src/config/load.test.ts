import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { type LoadResult, loadConfig } from "./load";
import { type ConfigProblem, formatProblems } from "./problems";
import type { Config } from "./schema";

type Env = Record<string, string | undefined>;

const dir = mkdtempSync(join(os.tmpdir(), "sigil-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCounter = 0;
/** Writes `text` to a new YAML file in the temp dir and returns its path. */
function writeConfig(text: string): string {
  fileCounter += 1;
  const path = join(dir, `config-${fileCounter}.yaml`);
  writeFileSync(path, text);
  return path;
}

function load(options: { yaml?: string; env?: Env; argv?: string[] } = {}): LoadResult {
  const argv = [...(options.yaml !== undefined ? ["-c", writeConfig(options.yaml)] : [])];
  argv.push(...(options.argv ?? []));
  return loadConfig({ argv, env: options.env ?? {} });
}

function ok(result: LoadResult): Config {
  if (!result.ok) {
    throw new Error(`expected a valid configuration, got:\n${formatProblems(result.problems)}`);
  }
  return result.config;
}

function problemsOf(result: LoadResult): ConfigProblem[] {
  if (result.ok) throw new Error("expected configuration problems, but the config was accepted");
  return result.problems;
}

/** Problem as one line, for `toContain` style assertions. */
const line = (p: ConfigProblem) => `${p.where}: ${p.message}`;

function at(value: unknown, path: string): unknown {
  let node: unknown = value;
  for (const key of path.split(".")) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

const PUBKEY = `0x${"a".repeat(96)}`;

describe("defaults", () => {
  /** The spec's "(none)": the option is absent (or, for lists, empty). */
  const NONE = Symbol("none");

  // Every option of the spec's configuration table, with the spec's default.
  const table: Array<[string, unknown]> = [
    ["server.listen_address", "0.0.0.0"],
    ["server.listen_port", 9000],
    ["server.request_timeout_seconds", 30],
    ["server.graceful_shutdown_timeout_seconds", 25],
    ["server.cors_allowed_origins", null],
    ["server.seccomp", false],
    // The spec says 0.0.0.0; sigil keeps its unauthenticated plain-http metrics on loopback unless
    // told otherwise, as Web3Signer does (docs/monitoring.md, CHANGELOG).
    ["metrics.listen_address", "127.0.0.1"],
    ["metrics.listen_port", 3000],
    ["metrics.refresh_interval_seconds", 30],
    ["network", "mainnet"],
    ["key_sources.filesystem.paths", NONE],
    ["key_sources.filesystem.keystore_load_concurrency", 128],
    ["key_sources.filesystem.raw_load_concurrency", 128],
    ["key_sources.cloud_kv.table", NONE],
    ["key_sources.cloud_kv.status_filter", ["active"]],
    ["key_sources.cloud_kv.key_refresh_interval_minutes", 10],
    ["key_sources.cloud_kv.max_concurrent_reads", 16],
    ["key_sources.cloud_kv.unseal_timeout_minutes", NONE],
    ["key_sources.cloud_kv.kms_key_arns", NONE],
    ["key_sources.cloud_kv.kms_threshold", NONE],
    ["key_sources.cloud_kv.keygen.enabled", false],
    ["key_sources.cloud_kv.keygen.max_items_per_request", 100],
    ["key_sources.cloud_kv.keygen.max_concurrent_keygen", 16],
    ["key_sources.cloud_kv.keygen.request_timeout_seconds", 600],
    ["key_sources.cloud_kv.keygen.backup.enabled", false],
    ["key_sources.cloud_kv.keygen.backup.recipients", NONE],
    ["key_sources.cloud_kv.writable.enabled", false],
    ["key_sources.cloud_kv.writable.max_concurrent_writes", 16],
    ["key_sources.cloud_kv.writable.request_timeout_seconds", 600],
    ["key_sources.cloud_kv.writable.max_items_per_request", 100],
    ["key_sources.key_manager_api.enabled", false],
    ["key_sources.key_manager_api.max_concurrent_reads", 50],
    ["key_sources.key_manager_api.max_concurrent_writes", 10],
    ["key_sources.key_manager_api.request_timeout_seconds", 30],
    ["key_sources.key_manager_api.max_items_per_request", 100],
    ["max_concurrent_signing_jobs", 500],
    ["signing_queue_buffer_size", 10000],
    ["antislashing.backend", "sqlite"],
    ["antislashing.path", "./slashing_protection.sqlite"],
    ["antislashing.url", NONE],
    ["antislashing.pool_size", 16],
    ["antislashing.force_ipv4", false],
    ["antislashing.table", NONE],
    ["canary_keys", NONE],
    ["opentelemetry.enabled", false],
    ["opentelemetry.endpoint", "http://localhost:4317"],
    ["opentelemetry.service_name", "signer-service"],
    ["server.keep_alive_timeout_seconds", 120],
    ["server.host_allowlist", ["localhost", "127.0.0.1", "::1"]],
    ["logging.level", "info"],
    ["logging.format", "text"],
    ["logging.log_color", NONE],
    // No auth configured by default: every route is open.
    ["auth_policies", NONE],
    ["unauthenticated_policy", NONE],
    ["static_auth", NONE],
    ["signer_state", NONE],
  ];

  test("with no file, env or flags every option has the spec's default", () => {
    const config = ok(load());
    const mismatches: string[] = [];
    for (const [path, expected] of table) {
      const actual = at(config, path);
      const good =
        expected === NONE
          ? actual === undefined || (Array.isArray(actual) && actual.length === 0)
          : Bun.deepEquals(actual, expected, true);
      if (!good) {
        const shown = expected === NONE ? "(none)" : JSON.stringify(expected);
        mismatches.push(`${path}: expected ${shown}, got ${JSON.stringify(actual)}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  test("no warnings and no leftover legacy key by default", () => {
    const result = load();
    expect(result.warnings).toEqual([]);
    expect("key_manager_api" in ok(result)).toBe(false);
  });

  test("every interface: one line about auth and the allow-list, each part only when it applies", () => {
    const serving = (result: LoadResult) => (result.ok ? result.servingWarnings : ["not loaded"]);
    const auth = "auth_policies: {vc: {token: vc-token-0123456789}}\n";
    // No -c: the defaults listen everywhere without auth; one line says both, and where from.
    const defaults = serving(load());
    expect(defaults).toHaveLength(1);
    expect(defaults[0]).toContain(
      "server.listen_address is 0.0.0.0 (every interface, the default: no -c file was given) and no auth is configured: anyone who can reach port 9000",
    );
    expect(defaults[0]).toContain("Also, server.host_allowlist is the default");
    expect(serving(load({ yaml: "server: {listen_address: 127.0.0.1}\n" }))).toEqual([]);
    const listed = serving(load({ yaml: "server: {host_allowlist: [signer.internal]}\n" }));
    expect(listed).toHaveLength(1);
    expect(listed[0]).toStartWith("server.listen_address is 0.0.0.0 (every interface) and no auth");
    expect(listed[0]).not.toContain("host_allowlist is the default");
    // With auth over plain http, a second line: the tokens cross the network in clear.
    const withAuth = serving(load({ yaml: auth }));
    expect(withAuth).toHaveLength(2);
    expect(withAuth[0]).toStartWith(
      "server.listen_address is 0.0.0.0 (every interface), but server.host_allowlist is the default",
    );
    expect(withAuth[0]).not.toContain("no auth");
    expect(withAuth[1]).toContain("server.tls is not set: tokens, and what is signed, cross");
    expect(serving(load({ yaml: auth, env: { SIGNER_SERVER__HOST_ALLOWLIST: "*" } }))).toEqual([
      "server.listen_address is 0.0.0.0 (every interface): every network of this host can reach the signing API on port 9000; listen on the address of the validator clients' network if it has one",
      withAuth[1] ?? "",
    ]);
    expect(serving(load({ yaml: auth, argv: ["--server-listen-address", "::"] }))[0]).toStartWith(
      "server.listen_address is :: (every interface)",
    );
  });

  test("a key directory that is missing or a file is a warning naming the option", () => {
    const file = writeConfig("not a directory");
    const missing = join(dir, "missing");
    const result = load({
      yaml: `server: {listen_address: 127.0.0.1}\nkey_sources: {filesystem: {paths: ["${dir}", "${missing}", "${file}"]}}\n`,
    });
    expect(result.ok ? result.servingWarnings : []).toEqual([
      `key_sources.filesystem.paths[1]: the key directory ${missing} does not exist: serve would load no keys from it`,
      `key_sources.filesystem.paths[2]: ${file} is a file, not a key directory: serve would load no keys from it`,
    ]);
  });

  test("pruning on a backend that keeps no history is a warning", () => {
    const serving = (backend: string) => {
      const result = load({
        yaml: `server: {listen_address: 127.0.0.1}\nantislashing: {backend: ${backend}, table: t-slashing, url: "postgres://u@h/d", pruning_epochs_to_keep: 100}\n`,
      });
      return result.ok ? result.servingWarnings : ["not loaded"];
    };
    expect(serving("dynamodb")).toEqual([
      "antislashing.pruning_epochs_to_keep is 100, but the dynamodb backend keeps one watermark per validator, no history to prune (minimal strategy): the setting is ignored (pruning applies to sqlite and postgres)",
    ]);
    expect(serving("noop")[0]).toContain("the noop backend keeps nothing");
    expect(serving("sqlite")).toEqual([]);
    expect(serving("postgres")).toEqual([]);
  });
});

describe("precedence: flags > env > file > defaults", () => {
  const fileYaml = [
    "server:",
    "  listen_port: 9100",
    "network: sepolia",
    "antislashing:",
    "  backend: noop",
    "  url: postgres://u:p@db.example/slashing",
    "  table: slashing-table",
  ].join("\n");
  const env: Env = {
    SIGNER_SERVER__LISTEN_PORT: "9200",
    SIGNER_NETWORK: "hoodi",
    SIGNER_ANTISLASHING__BACKEND: "postgres",
  };
  const flags = [
    "--server-listen-port",
    "9300",
    "--network",
    "mainnet",
    "--antislashing",
    "dynamodb",
  ];

  const pick = (c: Config) => [c.server.listen_port, c.network, c.antislashing.backend];

  test("file, env and flag all set: the flag wins", () => {
    expect(pick(ok(load({ yaml: fileYaml, env, argv: flags })))).toEqual([
      9300,
      "mainnet",
      "dynamodb",
    ]);
  });

  test("file and env set: env wins", () => {
    expect(pick(ok(load({ yaml: fileYaml, env })))).toEqual([9200, "hoodi", "postgres"]);
  });

  test("env and flag set (no file value): the flag wins", () => {
    const result = load({
      env,
      argv: [...flags, "--antislashing-dynamodb-table", "slashing-table"],
    });
    expect(pick(ok(result))).toEqual([9300, "mainnet", "dynamodb"]);
  });

  test("each layer alone overrides the default", () => {
    expect(pick(ok(load({ yaml: fileYaml })))).toEqual([9100, "sepolia", "noop"]);
    const envOnly = { ...env, SIGNER_ANTISLASHING__URL: "postgres://u:p@db.example/slashing" };
    expect(pick(ok(load({ env: envOnly })))).toEqual([9200, "hoodi", "postgres"]);
    const flagOnly = [...flags, "--antislashing-dynamodb-table", "slashing-table"];
    expect(pick(ok(load({ argv: flagOnly })))).toEqual([9300, "mainnet", "dynamodb"]);
  });

  test("a layer setting one option of a section keeps the file's sibling values", () => {
    const yaml = [
      "server:",
      "  listen_address: 127.0.0.1",
      "  listen_port: 9100",
      "  request_timeout_seconds: 45",
      "antislashing:",
      "  path: /data/slashing.sqlite",
      "  pool_size: 8",
      "key_sources:",
      "  filesystem:",
      "    paths: [/keys]",
      "    raw_load_concurrency: 4",
    ].join("\n");
    const config = ok(
      load({
        yaml,
        env: {
          SIGNER_SERVER__LISTEN_PORT: "9200",
          SIGNER_KEY_SOURCES__FILESYSTEM__KEYSTORE_LOAD_CONCURRENCY: "7",
        },
        argv: ["--server-request-timeout-seconds", "50", "--antislashing-postgres-force-ipv4"],
      }),
    );
    expect(config.server.listen_address).toBe("127.0.0.1");
    expect(config.server.listen_port).toBe(9200);
    expect(config.server.request_timeout_seconds).toBe(50);
    expect(config.server.graceful_shutdown_timeout_seconds).toBe(25);
    expect(config.antislashing.path).toBe("/data/slashing.sqlite");
    expect(config.antislashing.pool_size).toBe(8);
    expect(config.antislashing.force_ipv4).toBe(true);
    expect(config.antislashing.backend).toBe("sqlite");
    expect(config.key_sources.filesystem.paths).toEqual(["/keys"]);
    expect(config.key_sources.filesystem.raw_load_concurrency).toBe(4);
    expect(config.key_sources.filesystem.keystore_load_concurrency).toBe(7);
  });
});

describe("environment variables", () => {
  test("a list takes comma-separated items", () => {
    const config = ok(load({ env: { SIGNER_KEY_SOURCES__FILESYSTEM__PATHS: "/a, /b ,/c" } }));
    expect(config.key_sources.filesystem.paths).toEqual(["/a", "/b", "/c"]);
  });

  test("a list takes a JSON array (items may then contain commas)", () => {
    const config = ok(
      load({ env: { SIGNER_KEY_SOURCES__FILESYSTEM__PATHS: '["/keys/a", "/keys/b,c"]' } }),
    );
    expect(config.key_sources.filesystem.paths).toEqual(["/keys/a", "/keys/b,c"]);
  });

  test("an env list replaces the file's list", () => {
    const config = ok(
      load({
        yaml: "key_sources:\n  filesystem:\n    paths: [/from-file]\n",
        env: { SIGNER_KEY_SOURCES__FILESYSTEM__PATHS: "/from-env" },
      }),
    );
    expect(config.key_sources.filesystem.paths).toEqual(["/from-env"]);
  });

  const booleans: Array<[string, boolean]> = [
    ["true", true],
    ["1", true],
    ["false", false],
    ["0", false],
  ];
  for (const [text, expected] of booleans) {
    test(`boolean "${text}" is ${expected}`, () => {
      // The file sets the opposite, so the env value must actually be applied.
      const config = ok(
        load({
          yaml: `server:\n  seccomp: ${!expected}\nopentelemetry:\n  enabled: ${!expected}\n`,
          env: { SIGNER_SERVER__SECCOMP: text, SIGNER_OPENTELEMETRY__ENABLED: text },
        }),
      );
      expect(config.server.seccomp).toBe(expected);
      expect(config.opentelemetry.enabled).toBe(expected);
    });
  }

  test("a boolean that is not true/false/1/0 is a problem naming the variable", () => {
    const problems = problemsOf(load({ env: { SIGNER_SERVER__SECCOMP: "maybe" } }));
    expect(problems.some((p) => line(p).includes("SIGNER_SERVER__SECCOMP"))).toBe(true);
  });

  test("a non-integer is a problem naming the variable", () => {
    const problems = problemsOf(load({ env: { SIGNER_SERVER__LISTEN_PORT: "90a0" } }));
    expect(problems).toHaveLength(1);
    expect(line(problems[0] ?? { where: "", message: "" })).toContain("SIGNER_SERVER__LISTEN_PORT");
  });

  test("an out-of-range integer is a problem naming the variable", () => {
    const problems = problemsOf(load({ env: { SIGNER_METRICS__LISTEN_PORT: "70000" } }));
    expect(problems.map(line).join("\n")).toContain("SIGNER_METRICS__LISTEN_PORT");
    expect(problems.map(line).join("\n")).toContain("metrics.listen_port");
  });

  test("SIGNER_SERVER__CORS_ALLOWED_ORIGINS=null disables CORS over the file's list", () => {
    const config = ok(
      load({
        yaml: "server:\n  cors_allowed_origins: [https://app.example]\n",
        env: { SIGNER_SERVER__CORS_ALLOWED_ORIGINS: "null" },
      }),
    );
    expect(config.server.cors_allowed_origins).toBeNull();
  });

  test("SIGNER_SERVER__CORS_ALLOWED_ORIGINS as a comma list", () => {
    const config = ok(
      load({
        env: { SIGNER_SERVER__CORS_ALLOWED_ORIGINS: "https://a.example,https://b.example:8443" },
      }),
    );
    expect(config.server.cors_allowed_origins).toEqual([
      "https://a.example",
      "https://b.example:8443",
    ]);
  });

  test("SIGNER_AUTH_POLICIES takes the policy map as JSON", () => {
    const policies = {
      vc: {
        token: "validator-client-token-01",
        allowed_scopes: ["sign", "public_keys"],
        denied_signing_operations: ["VOLUNTARY_EXIT"],
      },
    };
    const config = ok(load({ env: { SIGNER_AUTH_POLICIES: JSON.stringify(policies) } }));
    expect(config.auth_policies).toEqual(policies);
  });

  test("SIGNER_AUTH_POLICIES that is not JSON is a problem naming the variable", () => {
    const problems = problemsOf(load({ env: { SIGNER_AUTH_POLICIES: "{vc: token}" } }));
    expect(problems.map(line).join("\n")).toContain("SIGNER_AUTH_POLICIES");
  });

  test("an unknown SIGNER_ variable is a warning, not a failure", () => {
    const result = load({ env: { SIGNER_SERVER__LISTEN_PROT: "9001", OTHER_VAR: "x" } });
    const config = ok(result);
    expect(config.server.listen_port).toBe(9000);
    expect(result.warnings.some((w) => w.includes("SIGNER_SERVER__LISTEN_PROT"))).toBe(true);
    expect(result.warnings.some((w) => w.includes("OTHER_VAR"))).toBe(false);
  });
});

describe("command-line flags", () => {
  test("--filesystem-keystores-path is repeatable and keeps the order", () => {
    const config = ok(
      load({
        argv: ["--filesystem-keystores-path", "/k2", "--filesystem-keystores-path", "/k1"],
      }),
    );
    expect(config.key_sources.filesystem.paths).toEqual(["/k2", "/k1"]);
  });

  test("--cors-allowed-origins takes a comma list", () => {
    const config = ok(
      load({ argv: ["--cors-allowed-origins", "https://a.example,https://b.example"] }),
    );
    expect(config.server.cors_allowed_origins).toEqual(["https://a.example", "https://b.example"]);
  });

  test("--antislashing-postgres-force-ipv4 sets true", () => {
    expect(ok(load({ argv: ["--antislashing-postgres-force-ipv4"] })).antislashing.force_ipv4).toBe(
      true,
    );
  });

  test("--no-antislashing-postgres-force-ipv4 overrides the file's true", () => {
    const config = ok(
      load({
        yaml: "antislashing:\n  force_ipv4: true\n",
        argv: ["--no-antislashing-postgres-force-ipv4"],
      }),
    );
    expect(config.antislashing.force_ipv4).toBe(false);
  });

  test("scalar flags parse to the option's type", () => {
    const config = ok(
      load({
        argv: [
          "--server-listen-address=127.0.0.1",
          "--metrics-listen-port",
          "3100",
          "--metrics-refresh-interval",
          "60",
          "--max-concurrent-signing-jobs",
          "100",
          "--signing-queue-buffer-size",
          "3000",
          "--antislashing-postgres-pool-size",
          "8",
          "--antislashing-sqlite-path",
          "/data/s.sqlite",
        ],
      }),
    );
    expect(config.server.listen_address).toBe("127.0.0.1");
    expect(config.metrics.listen_port).toBe(3100);
    expect(config.metrics.refresh_interval_seconds).toBe(60);
    expect(config.max_concurrent_signing_jobs).toBe(100);
    expect(config.signing_queue_buffer_size).toBe(3000);
    expect(config.antislashing.pool_size).toBe(8);
    expect(config.antislashing.path).toBe("/data/s.sqlite");
  });

  test("an unknown flag is a problem", () => {
    const problems = problemsOf(load({ argv: ["--server-listen-prot", "9001"] }));
    expect(problems.map(line).join("\n")).toContain("--server-listen-prot");
  });

  test("a scalar flag given twice is a problem", () => {
    const problems = problemsOf(
      load({ argv: ["--server-listen-port", "9001", "--server-listen-port", "9002"] }),
    );
    expect(problems.map(line).join("\n")).toContain("--server-listen-port");
  });

  test("a stray positional argument is a problem", () => {
    const problems = problemsOf(load({ argv: ["--network", "hoodi", "extra-argument"] }));
    expect(problems.map(line).join("\n")).toContain("extra-argument");
  });

  test("a flag value of the wrong type is a problem naming the flag", () => {
    const problems = problemsOf(load({ argv: ["--server-listen-port", "high"] }));
    expect(problems.map(line).join("\n")).toContain("--server-listen-port");
  });
});

describe("unknown keys in the file", () => {
  const cases: Array<{ name: string; yaml: string; where: string; suggest?: string }> = [
    { name: "top level", yaml: "netwrok: hoodi\n", where: "netwrok", suggest: "network" },
    {
      name: "nested",
      yaml: "server:\n  listen_prot: 9001\n",
      where: "server.listen_prot",
      suggest: "listen_port",
    },
    {
      name: "deeply nested",
      yaml: "key_sources:\n  cloud_kv:\n    keygen:\n      backup:\n        recipent: []\n",
      where: "key_sources.cloud_kv.keygen.backup.recipent",
      suggest: "recipients",
    },
    {
      name: "inside an auth_policies entry",
      yaml: "auth_policies:\n  vc:\n    token: validator-client-token-01\n    allowed_scope: [sign]\n",
      where: "auth_policies.vc.allowed_scope",
      suggest: "allowed_scopes",
    },
    {
      name: "inside static_auth.tokens[0]",
      yaml: [
        "static_auth:",
        "  policies:",
        "    - name: all",
        "      rules: [{ effect: allow }]",
        "  tokens:",
        "    - secret: static-token-0000001",
        "      policies: [all]",
        "      token_bound_cidr: [10.0.0.0/8]",
      ].join("\n"),
      where: "static_auth.tokens[0].token_bound_cidr",
      suggest: "token_bound_cidrs",
    },
    {
      name: "far from any option (no suggestion)",
      yaml: "server:\n  zzzzzzzzzz: 1\n",
      where: "server.zzzzzzzzzz",
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const problems = problemsOf(load({ yaml: c.yaml }));
      const found = problems.filter((p) => p.where === c.where);
      expect(found.map((p) => p.where)).toEqual([c.where]);
      const message = found[0]?.message ?? "";
      expect(message).toContain("unknown");
      if (c.suggest) expect(message).toContain(`did you mean "${c.suggest}"`);
      else expect(message).not.toContain("did you mean");
    });
  }
});

describe("YAML file errors", () => {
  test("a syntax error reports file:line:col", () => {
    const path = writeConfig("network: mainnet\nserver:\n  listen_port: 9000\n bad: x\n");
    const problems = problemsOf(loadConfig({ argv: ["-c", path], env: {} }));
    expect(problems.length).toBeGreaterThan(0);
    const text = problems.map(line).join("\n");
    // The offending line is line 4.
    expect(text).toMatch(new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:4:\\d+`));
  });

  test("a duplicate key is an error naming the file", () => {
    const path = writeConfig("server:\n  listen_port: 9001\n  listen_port: 9002\n");
    const problems = problemsOf(loadConfig({ argv: ["-c", path], env: {} }));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.map(line).join("\n")).toContain(path);
  });

  test("an empty file gives all defaults", () => {
    const defaults = ok(load());
    expect(ok(load({ yaml: "" }))).toEqual(defaults);
    expect(ok(load({ yaml: "# only a comment\n" }))).toEqual(defaults);
  });

  test("a top-level list is an error", () => {
    const path = writeConfig("- network: hoodi\n- server: {}\n");
    const problems = problemsOf(loadConfig({ argv: ["-c", path], env: {} }));
    expect(problems.map(line).join("\n")).toContain(path);
  });

  test("a missing file is a problem naming the path", () => {
    const path = join(dir, "does-not-exist.yaml");
    const problems = problemsOf(loadConfig({ argv: ["-c", path], env: {} }));
    expect(problems).toHaveLength(1);
    expect(line(problems[0] ?? { where: "", message: "" })).toContain(path);
  });

  test("the config path is reported back on success", () => {
    const path = writeConfig("network: hoodi\n");
    const result = loadConfig({ argv: ["-c", path], env: {} });
    expect(result.ok && result.configPath).toBe(path);
  });
});

describe("all problems at once", () => {
  test("a file with many independent problems yields all of them in one result", () => {
    const yaml = [
      "server:",
      "  listen_prot: 9001", // unknown key
      "  request_timeout_seconds: 0", // out of range
      "network: goerli", // not an enum value
      "logging:",
      "  format: xml", // not an enum value
      "antislashing:",
      "  backend: postgres", // postgres without url (semantic)
      `canary_keys: ["0x1234", "${PUBKEY}"]`, // bad pubkey (semantic)
      "auth_policies:",
      "  vc:",
      "    token: short", // token under 16 chars (semantic)
      "    allowed_signing_operations: [SIGN_ANYTHING]", // unknown operation (semantic)
    ].join("\n");
    const problems = problemsOf(load({ yaml }));
    const where = problems.map((p) => p.where);
    for (const expected of [
      "server.listen_prot",
      "server.request_timeout_seconds",
      "network",
      "logging.format",
      "antislashing.url",
      "canary_keys[0]",
      "auth_policies.vc.token",
      "auth_policies.vc.allowed_signing_operations[0]",
    ]) {
      expect(where).toContain(expected);
    }
    expect(where).not.toContain("canary_keys[1]");
  });

  test("problems from file, env and flags are reported together", () => {
    const problems = problemsOf(
      load({
        yaml: "network: goerli\n",
        env: { SIGNER_SERVER__LISTEN_PORT: "nope" },
        argv: ["--metrics-listen-port", "99999"],
      }),
    );
    const text = problems.map(line).join("\n");
    expect(text).toContain("network");
    expect(text).toContain("SIGNER_SERVER__LISTEN_PORT");
    expect(text).toContain("metrics.listen_port");
  });
});

describe("legacy top-level key_manager_api", () => {
  test("folds into key_sources.key_manager_api, disappears, and warns", () => {
    const result = load({
      yaml: "key_sources:\n  filesystem:\n    paths: [/var/lib/sigil/keys]\nkey_manager_api:\n  enabled: true\n  max_concurrent: 4\n",
    });
    const config = ok(result);
    expect(config.key_sources.key_manager_api).toEqual({
      enabled: true,
      max_concurrent_reads: 50,
      max_concurrent_writes: 4,
      request_timeout_seconds: 30,
      max_items_per_request: 100,
      max_request_body_bytes: 64 * 1024 * 1024,
    });
    expect("key_manager_api" in config).toBe(false);
    expect(result.warnings.some((w) => w.includes("key_manager_api"))).toBe(true);
  });

  test("enabled alone keeps the new form's default writes", () => {
    const config = ok(
      load({
        yaml: "key_sources:\n  filesystem:\n    paths: [/var/lib/sigil/keys]\nkey_manager_api:\n  enabled: true\n",
      }),
    );
    expect(config.key_sources.key_manager_api.enabled).toBe(true);
    expect(config.key_sources.key_manager_api.max_concurrent_writes).toBe(10);
  });

  test("conflicting explicit values in both forms are problems", () => {
    const yaml = [
      "key_manager_api:",
      "  enabled: true",
      "  max_concurrent: 4",
      "key_sources:",
      "  key_manager_api:",
      "    enabled: false",
      "    max_concurrent_writes: 8",
    ].join("\n");
    const where = problemsOf(load({ yaml })).map((p) => p.where);
    expect(where).toContain("key_manager_api.enabled");
    expect(where).toContain("key_manager_api.max_concurrent");
  });

  test("the same explicit value in both forms is not a conflict", () => {
    const yaml = [
      "key_manager_api:",
      "  enabled: true",
      "key_sources:",
      "  filesystem:",
      "    paths: [/var/lib/sigil/keys]",
      "  key_manager_api:",
      "    enabled: true",
    ].join("\n");
    expect(ok(load({ yaml })).key_sources.key_manager_api.enabled).toBe(true);
  });
});

describe("secrets in problems", () => {
  test("a token of the wrong YAML type is not echoed in the problem", () => {
    // Sixteen digits: a valid alphanumeric token, but YAML reads it as a number.
    const secret = "4829103756184420";
    const problems = problemsOf(load({ yaml: `auth_policies:\n  vc:\n    token: ${secret}\n` }));
    expect(problems.map((p) => p.where)).toContain("auth_policies.vc.token");
    for (const p of problems) expect(line(p)).not.toContain(secret);
  });

  test("a static token secret of the wrong type is not echoed in the problem", () => {
    const secret = "7391046285503318";
    const yaml = [
      "static_auth:",
      "  policies: [{ name: all, rules: [{ effect: allow }] }]",
      "  tokens:",
      `    - secret: ${secret}`,
      "      policies: [all]",
    ].join("\n");
    const problems = problemsOf(load({ yaml }));
    expect(problems.map((p) => p.where)).toContain("static_auth.tokens[0].secret");
    for (const p of problems) expect(line(p)).not.toContain(secret);
  });
});
