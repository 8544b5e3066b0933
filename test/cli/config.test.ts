import { afterAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { parse } from "yaml";
import { initializedDatabase, runSigil, TempDir } from "../support/cli";

const dir = new TempDir();
afterAll(() => dir.remove());

const PUBKEY = `0x${"a".repeat(96)}`;
const GOOD_TOKEN = "vc-token-0123456789";

/** config check on `yaml`, its sqlite database (checked to exist, as serve does) initialized. */
function check(yaml: string, env: Record<string, string> = {}) {
  return runSigil(["config", "check", "-c", dir.file(`c-${crypto.randomUUID()}.yaml`, yaml)], {
    SIGNER_ANTISLASHING__PATH: initializedDatabase(dir),
    ...env,
  });
}

/**
 * The start-up validation errors listed in the spec's Errors section, each as the smallest
 * config that shows it, the option path the message must name, and words it must contain.
 */
const SPEC_ERRORS: {
  name: string;
  yaml: string;
  where: string;
  says: RegExp;
  env?: Record<string, string>;
}[] = [
  {
    name: "both allowed_signing_operations and denied_signing_operations",
    yaml: `auth_policies:\n  vc:\n    token: ${GOOD_TOKEN}\n    allowed_signing_operations: [ATTESTATION]\n    denied_signing_operations: [VOLUNTARY_EXIT]\n`,
    where: "auth_policies.vc",
    says: /allowed_signing_operations and denied_signing_operations cannot both be set/,
  },
  {
    name: "both allowed_scopes and denied_scopes",
    yaml: `auth_policies:\n  vc:\n    token: ${GOOD_TOKEN}\n    allowed_scopes: [sign]\n    denied_scopes: [list_keys]\n`,
    where: "auth_policies.vc",
    says: /allowed_scopes and denied_scopes cannot both be set/,
  },
  {
    name: "allowed_signing_operations while the sign scope is denied",
    yaml: `auth_policies:\n  vc:\n    token: ${GOOD_TOKEN}\n    denied_scopes: [sign]\n    allowed_signing_operations: [ATTESTATION]\n`,
    where: "auth_policies.vc",
    says: /sign scope is denied/,
  },
  {
    name: "token under 16 characters",
    yaml: "auth_policies:\n  vc:\n    token: short-token\n",
    where: "auth_policies.vc.token",
    says: /at least 16 characters/,
  },
  {
    name: "token with characters other than alphanumerics and dashes",
    yaml: "auth_policies:\n  vc:\n    token: has_underscores_and_more\n",
    where: "auth_policies.vc.token",
    says: /letters, digits and dashes only/,
  },
  {
    name: "two policies sharing a token",
    yaml: `auth_policies:\n  a:\n    token: ${GOOD_TOKEN}\n  b:\n    token: env:SAME_TOKEN\n`,
    env: { SAME_TOKEN: GOOD_TOKEN },
    where: "auth_policies.b.token",
    says: /same token as auth_policies\.a/,
  },
  {
    name: "unknown signing operation",
    yaml: `auth_policies:\n  vc:\n    token: ${GOOD_TOKEN}\n    allowed_signing_operations: [DEPOSIT]\n`,
    where: "auth_policies.vc.allowed_signing_operations[0]",
    says: /unknown signing operation "DEPOSIT"/,
  },
  {
    name: "invalid public key format",
    yaml: `auth_policies:\n  vc:\n    token: ${GOOD_TOKEN}\n    allowed_keys: ["${PUBKEY.slice(0, 50)}"]\n`,
    where: "auth_policies.vc.allowed_keys[0]",
    says: /invalid public key/,
  },
  {
    name: "env: token whose variable is not set",
    yaml: "auth_policies:\n  vc:\n    token: env:SIGIL_TEST_UNSET_VARIABLE\n",
    where: "auth_policies.vc.token",
    says: /SIGIL_TEST_UNSET_VARIABLE is not set/,
  },
  {
    name: "invalid CIDR in a static token",
    yaml: `static_auth:\n  policies: [{name: vc, rules: [{effect: allow, scopes: [sign]}]}]\n  tokens: [{secret: ${GOOD_TOKEN}, policies: [vc], token_bound_cidrs: ["10.1.2.0/40"]}]\n`,
    where: "static_auth.tokens[0].token_bound_cidrs[0]",
    says: /invalid CIDR "10\.1\.2\.0\/40"/,
  },
  {
    name: "static_auth set in stateful mode",
    yaml: "signer_state: {backend: sqlite, path: state.sqlite}\nstatic_auth:\n  policies: []\n",
    where: "static_auth",
    says: /cannot be set in stateful mode/,
  },
];

describe("sigil config check: the spec's start-up validation errors", () => {
  for (const { name, yaml, where, says, env } of SPEC_ERRORS) {
    test(`${name} → its message and exit 2`, () => {
      const result = check(yaml, env);
      expect(result.code).toBe(2);
      const line = result.stderr.split("\n").find((l) => l.trim().startsWith(`${where}:`));
      expect(line, result.stderr).toBeDefined();
      expect(line).toMatch(says);
      expect(result.stdout).toBe("");
    });
  }

  test("every problem of a file is printed at once", () => {
    const yaml = [
      "server:",
      "  listen_port: 99999",
      "network: goerli",
      `canary_keys: ["0x1234"]`,
      "auth_policies:",
      "  vc:",
      "    token: short",
      "    allowed_signing_operations: [NOT_AN_OP]",
      "",
    ].join("\n");
    const result = check(yaml);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("(5 problems)");
    for (const where of [
      "server.listen_port",
      "network",
      "canary_keys[0]",
      "auth_policies.vc.token",
      "auth_policies.vc.allowed_signing_operations[0]",
    ]) {
      expect(result.stderr).toContain(`  ${where}: `);
    }
  });

  test("an unknown key is rejected by name, with a suggestion", () => {
    const result = check("server:\n  listen_prot: 9000\n");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'server.listen_prot: unknown option (did you mean "listen_port"?)',
    );
  });

  test("secrets never appear in error output", () => {
    const secret = "Secret_With_Underscore_1234";
    const result = check(`auth_policies:\n  vc:\n    token: ${secret}\n`);
    expect(result.code).toBe(2);
    expect(result.stderr).not.toContain(secret);
  });

  test("a valid file passes with exit 0", () => {
    const result = check(
      "server:\n  listen_address: 127.0.0.1\n  listen_port: 9100\nnetwork: hoodi\n",
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("configuration is valid");
  });

  test("every interface is valid, with one warning line about auth and the allow-list (and clear tokens)", () => {
    const warnings = (result: { code: number; stderr: string }) => {
      expect(result.code).toBe(0);
      return result.stderr
        .trim()
        .split("\n")
        .filter((line) => line !== "");
    };
    const open = warnings(check("server:\n  listen_port: 9100\n"));
    expect(open).toEqual([
      expect.stringMatching(
        /^sigil: warning: server.listen_address is 0.0.0.0 \(every interface\) and no auth is configured: anyone who can reach port 9100 can have the loaded keys sign .*\. Also, server.host_allowlist is the default/,
      ),
    ]);
    const auth = "auth_policies:\n  vc:\n    token: vc-token-0123456789\n";
    expect(warnings(check(`server:\n  listen_port: 9100\n${auth}`))).toEqual([
      expect.stringMatching(
        /^sigil: warning: server.listen_address is 0.0.0.0 \(every interface\), but server.host_allowlist is the default/,
      ),
      expect.stringContaining("server.tls is not set: tokens, and what is signed, cross"),
    ]);
    const listed = `server:\n  listen_port: 9100\n  host_allowlist: [signer.internal]\n${auth}`;
    expect(warnings(check(listed))).toEqual([
      "sigil: warning: server.listen_address is 0.0.0.0 (every interface): every network of this host can reach the signing API on port 9100; listen on the address of the validator clients' network if it has one",
      expect.stringContaining("server.tls is not set: tokens, and what is signed, cross"),
    ]);
  });

  test("tokens over plain http off loopback are a warning; loopback or server.tls is not", () => {
    const auth = "auth_policies:\n  vc:\n    token: vc-token-0123456789\n";
    const clear = check(
      `server:\n  listen_address: 10.1.2.3\n  listen_port: 9100\n  host_allowlist: [signer.internal]\n${auth}`,
    );
    expect(clear.code).toBe(0);
    expect(clear.stderr).toBe(
      "sigil: warning: server.listen_address is 10.1.2.3 (not loopback) and server.tls is not set: tokens, and what is signed, cross the network in clear; set server.tls (docs/tls.md), or listen on 127.0.0.1 behind a TLS proxy\n",
    );
    for (const loopback of ["127.0.0.1", "127.0.0.2", "::1", "localhost"]) {
      const local = check(`server:\n  listen_address: "${loopback}"\n  listen_port: 9100\n${auth}`);
      expect({ loopback, stderr: local.stderr }).toEqual({ loopback, stderr: "" });
    }
    // No auth: no token to leak (the every-interface warning covers that case).
    expect(check("server:\n  listen_address: 10.1.2.3\n  listen_port: 9100\n").stderr).toBe("");
  });

  test("metrics on every interface are a warning (the default is loopback: load.test.ts)", () => {
    const quiet = "server:\n  listen_address: 127.0.0.1\n  listen_port: 9100\n";
    for (const address of ["0.0.0.0", "::"]) {
      const open = check(quiet, { SIGNER_METRICS__LISTEN_ADDRESS: address });
      expect(open.code).toBe(0);
      expect(open.stderr).toBe(
        `sigil: warning: metrics.listen_address is ${address} (every interface): anyone who can reach port 0 can read the metrics (plain http, no auth); listen on 127.0.0.1 or on the monitoring network's address\n`,
      );
    }
  });

  test("without -c, the defaults' 0.0.0.0 and no auth are one warning line saying so", () => {
    const result = runSigil(
      ["config", "check"],
      { SIGNER_ANTISLASHING__PATH: initializedDatabase(dir) },
      dir.path,
    );
    expect(result.code).toBe(0);
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^sigil: warning: server.listen_address is 0.0.0.0 \(every interface, the default: no -c file was given\) and no auth is configured: /,
      ),
    ]);
  });

  test("one port for the signing and the metrics listener is an error naming both", () => {
    const result = check("server: {listen_port: 9100}\n", {
      SIGNER_METRICS__LISTEN_PORT: "9100",
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "  metrics.listen_port: is server.listen_port too (9100 on 127.0.0.1 and 0.0.0.0): the signing and the metrics listeners need different ports",
    );
  });

  test("a missing key directory and pruning an unpruned backend are warnings", () => {
    const result = check(
      "server: {listen_address: 127.0.0.1}\nkey_sources: {filesystem: {paths: [no-such-keys]}}\nantislashing: {backend: noop, pruning_epochs_to_keep: 10}\n",
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      `sigil: warning: key_sources.filesystem.paths[0]: the key directory no-such-keys (${resolve(import.meta.dir, "../../no-such-keys")}) does not exist: serve would load no keys from it\n`,
    );
    expect(result.stderr).toContain(
      "sigil: warning: antislashing.pruning_epochs_to_keep is 10, but the noop backend keeps nothing",
    );
  });

  test("server.seccomp is honoured on Linux x64 and arm64 (elsewhere it is refused, exit 2)", () => {
    const result = check("server:\n  seccomp: true\n");
    const supported =
      process.platform === "linux" && (process.arch === "x64" || process.arch === "arm64");
    expect(result.code).toBe(supported ? 0 : 2);
    if (!supported) expect(result.stderr).toMatch(/server\.seccomp: /);
  });
});

describe("a missing slashing protection database", () => {
  test("config check refuses it as serve does: same message, exit 2, the init command of the flags given", async () => {
    const cwd = dir.path;
    const file = dir.file("missing-db.yaml", "server: {listen_address: 127.0.0.1}\n");
    const flags = ["-c", file, "--antislashing-sqlite-path", "db3/slash.sqlite"];
    const checked = runSigil(["config", "check", ...flags], {}, cwd);
    const served = runSigil(
      ["serve", ...flags, "--server-listen-port", "0", "--metrics-listen-port", "0"],
      {},
      cwd,
    );
    const refusal = (stderr: string) =>
      stderr.split("\n").find((line) => line.includes("does not exist"));
    expect(checked.code).toBe(2);
    expect(served.code).toBe(2);
    expect(checked.stdout).toBe("");
    expect(refusal(checked.stderr)).toBe(refusal(served.stderr));
    expect(refusal(checked.stderr)).toBe(
      `sigil: slashing protection database db3/slash.sqlite does not exist; sigil never creates one silently. If it existed, it was deleted or moved: restore it (a new, empty one would let sigil sign again what it signed before). Its directory ${resolve(cwd, "db3")} does not exist either: is antislashing.path right? To create a new, empty one: \`sigil slashing init -c ${file} --antislashing-sqlite-path db3/slash.sqlite\` (or start once with --init-slashing-protection).`,
    );
  });

  test("the hint runs as printed: it creates the database serve then opens", () => {
    const file = dir.file("hint-db.yaml", "server: {listen_address: 127.0.0.1}\nnetwork: hoodi\n");
    const path = `${dir.path}/hint dir/slash.sqlite`;
    const checked = runSigil(["config", "check", "-c", file, "--antislashing-sqlite-path", path]);
    const hint = /`(sigil slashing init [^`]+)`/.exec(checked.stderr)?.[1] ?? "";
    expect(hint).toBe(`sigil slashing init -c ${file} --antislashing-sqlite-path '${path}'`);
    const words = Array.from(hint.matchAll(/'([^']*)'|(\S+)/g), (m) => m[1] ?? m[2] ?? "");
    const made = runSigil(words.slice(1));
    expect(made.stdout).toContain(`slashing protection database ${path} initialized for hoodi`);
    const again = runSigil(["config", "check", "-c", file, "--antislashing-sqlite-path", path]);
    expect(again.code, again.stderr).toBe(0);
  });

  test("slashing init without -c says which defaults it used", () => {
    const cwd = dir.path;
    const result = runSigil(["slashing", "init"], {}, cwd);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      "sigil: no -c file given: network mainnet, antislashing.backend sqlite, antislashing.path ./slashing_protection.sqlite (the defaults, and any SIGNER_… variables and flags); for the signer's configuration run sigil slashing init -c <config file>\n",
    );
    expect(result.stdout).toContain(
      "slashing protection database ./slashing_protection.sqlite initialized for mainnet",
    );
  });
});

describe("sigil config print", () => {
  test("prints the effective config: flag > env > file > default", () => {
    const file = dir.file(
      "layers.yaml",
      "server:\n  listen_port: 9001\n  listen_address: 127.0.0.2\nnetwork: sepolia\n",
    );
    const env = {
      SIGNER_SERVER__LISTEN_PORT: "9002",
      SIGNER_NETWORK: "hoodi",
      SIGNER_MAX_CONCURRENT_SIGNING_JOBS: "7",
    };
    const result = runSigil(["config", "print", "-c", file, "--server-listen-port", "9003"], env);
    expect(result.code).toBe(0);
    const printed = parse(result.stdout);
    expect(printed.server.listen_port).toBe(9003); // flag over env and file
    expect(printed.network).toBe("hoodi"); // env over file
    expect(printed.server.listen_address).toBe("127.0.0.2"); // file over default
    expect(printed.max_concurrent_signing_jobs).toBe(7); // env over default
    expect(printed.signing_queue_buffer_size).toBe(10000); // default
  });

  test("redacts clear-text secrets, keeps env: references, masks database passwords", () => {
    const file = dir.file(
      "secrets.yaml",
      [
        "antislashing:",
        "  backend: postgres",
        "  url: postgres://sigil:db-password-123@db.internal:5432/slashing",
        "static_auth:",
        "  policies: [{name: vc, rules: [{effect: allow}]}]",
        `  tokens: [{secret: Clear-Text-Token-0123456, policies: [vc]}, {secret: "env:VC_TOKEN", policies: [vc]}]`,
        "",
      ].join("\n"),
    );
    const result = runSigil(["config", "print", "-c", file], {
      VC_TOKEN: "from-env-token-0123456789",
    });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain("Clear-Text-Token-0123456");
    expect(result.stdout).not.toContain("db-password-123");
    expect(result.stdout).not.toContain("from-env-token-0123456789");
    const printed = parse(result.stdout);
    expect(printed.static_auth.tokens[0].secret).toBe("<redacted>");
    expect(printed.static_auth.tokens[1].secret).toBe("env:VC_TOKEN");
    expect(printed.antislashing.url).toBe("postgres://sigil:***@db.internal:5432/slashing");
  });
});

describe("CLI surface", () => {
  const levels = [
    [],
    ["serve"],
    ["config"],
    ["config", "check"],
    ["config", "print"],
    ["version"],
    ["operator"],
  ];
  for (const level of levels) {
    test(`sigil ${level.join(" ")} --help`, () => {
      const result = runSigil([...level, "--help"]);
      expect(result.code).toBe(0);
      // The usage line is the whole command, as typed.
      expect(result.stdout).toMatch(new RegExp(`Usage:\n  ${["sigil", ...level].join(" ")}( |\n)`));
    });
  }

  test("serve --help lists the configuration flags", () => {
    const { stdout } = runSigil(["serve", "--help"]);
    for (const flag of [
      "--server-listen-port",
      "--filesystem-keystores-path",
      "--antislashing-postgres-url",
      "--config",
    ]) {
      expect(stdout).toContain(flag);
    }
  });

  test("sigil version prints the package version, the commit, Bun's version and the BLS backend", async () => {
    const pkg = await Bun.file(new URL("../../package.json", import.meta.url)).json();
    const result = runSigil(["version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^sigil ${pkg.version.replaceAll(".", "\\.")} \\(commit \\S+, bun ${Bun.version.replaceAll(".", "\\.")}\\), bls (blst|noble)\n$`,
      ),
    );
    // blst is embedded in the binary and installed for the sources: auto must find it.
    expect(result.stdout).toContain("bls blst");
  });

  test("an unknown flag is a usage error (exit 2) naming the flag and the closest one", () => {
    const result = runSigil(["config", "check", "--server-listen-prot", "1"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "sigil: unknown option --server-listen-prot for sigil config check (did you mean --server-listen-port?); see sigil help config check\n",
    );
  });

  test("an unknown command is a usage error (exit 2)", () => {
    const result = runSigil(["frobnicate"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('sigil: unknown command "frobnicate" for sigil; see sigil help\n');
  });
});
