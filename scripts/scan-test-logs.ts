// The whole-run secret scan: `npm test` runs it after `bun test`. Reads every log the tests left in
// .test-logs/ (test/support/log-capture.ts) and fails if any test secret shows up in one: the fixed
// secrets below, the ones tests minted at run time (.test-logs/secrets.txt), sigil's runtime
// tokens except the logged one-time setup token, and age identities. Also fails if it read too
// little to mean anything, so a capture that silently broke cannot pass.
// Usage: bun scripts/scan-test-logs.ts [directory]   (default: $SIGIL_TEST_LOG_DIR or .test-logs)
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { interopSecret } from "../test/support/interop";
import {
  formatLeak,
  type LogFile,
  logKindOf,
  MIN_SECRET_LENGTH,
  scanLogs,
  secretForms,
  type TestSecret,
  usableSecrets,
} from "../test/support/log-scan";

const repoRoot = resolve(import.meta.dir, "..");
const dir = resolve(
  process.argv[2] ?? process.env.SIGIL_TEST_LOG_DIR ?? join(repoRoot, ".test-logs"),
);
const MIN_LINES = 1000;

/** Interop keys the tests use (examples/keys holds 0-3; tests derive others up to 40). */
const INTEROP_KEY_COUNT = 64;

/**
 * Static secrets written into test configs, environments and requests. A test that adds one
 * should add it here; secrets made at run time go through registerTestSecret instead.
 * `needle` narrows a value that is also an ordinary word elsewhere (the postgres password
 * "sigil-test" is the prefix of every TempDir).
 */
const STATIC_SECRETS: readonly (TestSecret & { from: string })[] = [
  { from: "test/observability/secrets-in-logs.test.ts", value: "static-secret-token-0123456789" },
  { from: "test/observability/secrets-in-logs.test.ts", value: "env-secret-token-0123456789ab" },
  {
    from: "test/observability/secrets-in-logs.test.ts",
    value: "key-manager-password-never-logged",
  },
  { from: "test/observability/tracing.test.ts", value: "tracing-test-token-0123456789" },
  { from: "test/http/metrics.test.ts", value: "metrics-test-token-0123456789" },
  { from: "test/http/keymanager.test.ts", value: "key-manager-test-password" },
  { from: "test/http/auth.test.ts", value: "vc-token-0123456789abcdef" },
  { from: "test/http/auth.test.ts", value: "ops-token-0123456789abcdef" },
  { from: "test/http/auth.test.ts", value: "cidr-token-0123456789abcdef" },
  { from: "test/http/auth.test.ts", value: "monitoring-token-0123456789" },
  { from: "test/http/auth.test.ts", value: "wrong-token-0123456789abcdef" },
  { from: "test/http/auth.test.ts", value: "not-a-known-token-at-all" },
  { from: "test/cli/config.test.ts", value: "vc-token-0123456789" },
  { from: "test/cli/config.test.ts", value: "Secret_With_Underscore_1234" },
  { from: "test/cli/config.test.ts", value: "has_underscores_and_more" },
  { from: "test/cli/config.test.ts", value: "short-token" },
  { from: "test/cli/config.test.ts", value: "Clear-Text-Token-0123456" },
  { from: "test/cli/config.test.ts", value: "from-env-token-0123456789" },
  { from: "test/cli/config.test.ts", value: "db-password-123" },
  { from: "test/cli/operator-client.test.ts", value: "mgmt-0123456789abcdef0123456789abcdef" },
  { from: "test/keys/filesystem.test.ts", value: "  pass phrase with spaces " },
  { from: "test/support/postgres.ts", value: "sigil-test", needle: ":sigil-test@" },
  { from: "test/support/dynamodb.ts", value: "test-secret" },
  { from: "test/state/postgres.test.ts", value: "hunter2", needle: ":hunter2@" },
  { from: "test/antislashing/postgres.test.ts", value: "secret", needle: ":secret@" },
  { from: "src/seal/wrap/awskms.test.ts", value: "signer-secret" },
  { from: "src/seal/wrap/awskms.test.ts", value: "alice-secret" },
  { from: "src/seal/wrap/awskms.test.ts", value: "bob-secret" },
  { from: "src/auth/legacy.test.ts", value: "0123456789abcdef-token" },
  { from: "src/config/validate.test.ts", value: "validator-client-token-A1" },
  { from: "src/config/validate.test.ts", value: "monitoring-token-B2-0000" },
  { from: "src/config/validate.test.ts", value: "exit-operator-token-0003" },
  { from: "src/config/validate.test.ts", value: "short-secret-15" },
  { from: "src/config/validate.test.ts", value: "static secret with spaces" },
  { from: "src/config/redact.test.ts", value: "legacy-clear-text-token-01" },
  { from: "src/config/redact.test.ts", value: "static-clear-text-secret-02" },
  { from: "src/config/redact.test.ts", value: "hunter2-pg-pass" },
  { from: "src/config/redact.test.ts", value: "state-pass-77" },
  { from: "src/config/load.test.ts", value: "validator-client-token-01" },
  { from: "src/config/load.test.ts", value: "static-token-0000001" },
  { from: "src/config/load.test.ts", value: "4829103756184420" },
  { from: "src/config/load.test.ts", value: "7391046285503318" },
].map((s) => ({ ...s, label: `static secret (${s.from})` }));

/** A keystore password as typed, and as EIP-2335 uses it (NFKD, control characters removed). */
function passwordForms(label: string, password: string): TestSecret[] {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: EIP-2335 password processing
  const processed = password.normalize("NFKD").replace(/[\u0000-\u001f\u007f-\u009f]/g, "");
  return [
    ...secretForms(label, password),
    ...(processed.trim() === password.trim()
      ? []
      : secretForms(`${label} (EIP-2335 form)`, processed)),
  ];
}

function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.replace(/^0x/, ""), "hex"));
}

function fixedSecrets(): TestSecret[] {
  const secrets: TestSecret[] = [];
  for (let i = 0; i < INTEROP_KEY_COUNT; i++) {
    secrets.push(...secretForms(`interop private key ${i}`, interopSecret(i)));
  }
  // examples/keys: raw keys in the descriptors, keystore passwords in the .password files.
  const examples = join(repoRoot, "examples/keys");
  for (const name of readdirSync(examples).sort()) {
    const text = readFileSync(join(examples, name), "utf8");
    if (name.endsWith(".yaml")) {
      const key = text.match(/privateKey:\s*["']?(0x[0-9a-fA-F]{64})/)?.[1];
      if (key) secrets.push(...secretForms(`private key examples/keys/${name}`, fromHex(key)));
    }
    if (name.endsWith(".password")) {
      secrets.push(...passwordForms(`keystore password examples/keys/${name}`, text));
    }
  }
  // EIP-2335 vectors: every password, every expected secret.
  const vectors = join(repoRoot, "test/vectors/eip2335-keystores");
  const vectorFiles = [
    "password_normalization.json",
    ...["valid", "invalid"].flatMap((sub) =>
      readdirSync(join(vectors, sub))
        .filter((name) => name.endsWith(".json"))
        .map((name) => join(sub, name)),
    ),
  ];
  for (const name of vectorFiles.sort()) {
    const parsed = JSON.parse(readFileSync(join(vectors, name), "utf8")) as {
      password?: string;
      expected_secret?: string;
      cases?: { password?: string }[];
    };
    for (const password of [parsed.password, ...(parsed.cases ?? []).map((c) => c.password)]) {
      if (password) secrets.push(...passwordForms(`keystore password ${name}`, password));
    }
    if (parsed.expected_secret) {
      secrets.push(...secretForms(`vector secret ${name}`, fromHex(parsed.expected_secret)));
    }
  }
  for (const s of STATIC_SECRETS) {
    secrets.push(
      ...secretForms(s.label, s.value).map((f) => (s.needle ? { ...f, needle: s.needle } : f)),
    );
  }
  return secrets;
}

function registeredSecrets(): TestSecret[] {
  const file = join(dir, "secrets.txt");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .flatMap((line) => {
      const { label, value, hex } = JSON.parse(line) as {
        label: string;
        value?: string;
        hex?: string;
      };
      return secretForms(`${label} (registered at run time)`, hex ? fromHex(hex) : (value ?? ""));
    });
}

function logFiles(): LogFile[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".log"))
    .sort()
    .map((name) => ({
      name: relative(process.cwd(), join(dir, name)),
      kind: logKindOf(name),
      text: readFileSync(join(dir, name), "utf8"),
    }));
}

const files = logFiles();
const registered = registeredSecrets();
const all = [...fixedSecrets(), ...registered];
const { tooShort } = usableSecrets(all);
const result = scanLogs(files, all);
const spawned = files.filter(
  (f) => /(^|\/)sigil-[^/]*\.stderr\.log$/.test(f.name) && f.text !== "",
);
const inProcess = files.filter((f) => /(^|\/)inprocess-[^/]*\.log$/.test(f.name) && f.text !== "");

const summary =
  `scan-test-logs: scanned ${result.lines} lines from ${result.files} files ` +
  `(${spawned.length} sigil process logs, ${inProcess.length} in-process logs) for ` +
  `${result.secrets} secrets (${registered.length} forms registered at run time, ` +
  `${result.setupTokens} logged setup tokens allowed)`;

const problems: string[] = [];
if (result.lines < MIN_LINES) {
  problems.push(
    `only ${result.lines} lines in ${dir} (expected at least ${MIN_LINES}): is log capture broken?`,
  );
}
if (spawned.length === 0)
  problems.push("no log from a spawned sigil process: is log capture broken?");
if (inProcess.length === 0)
  problems.push("no log from an in-process logger: is log capture broken?");
if (registered.length === 0)
  problems.push("no secret was registered at run time: is registerTestSecret broken?");
if (tooShort.length > 0) {
  console.error(
    `scan-test-logs: ignored ${tooShort.length} secret forms shorter than ${MIN_SECRET_LENGTH} characters: ${[...new Set(tooShort.map((s) => s.label))].join("; ")}`,
  );
}

if (result.leaks.length > 0) {
  console.error(`${summary}: ${result.leaks.length} LEAKS`);
  for (const leak of result.leaks) console.error(`  ${formatLeak(leak)}`);
} else if (problems.length === 0) {
  console.log(`${summary}: no leaks`);
} else {
  console.error(`${summary}: no leaks found, but the scan cannot be trusted`);
}
for (const problem of problems) console.error(`  ${problem}`);
if (result.leaks.length > 0 || problems.length > 0) process.exitCode = 1;
