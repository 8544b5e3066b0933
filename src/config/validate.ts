import { LEGACY_SCOPES } from "../auth/scopes";
import { allowlistEntryProblem, listenAddressProblem } from "../net/host";
import { parseLogFilter } from "../observability/log";
import { parseWrapSpec } from "../seal/wrap/index";
import { configuredNetworkOf } from "../signing/spec-config";
import { isSigningOperation } from "../wire/operations";
import { isPubkeyHex } from "../wire/pubkey";
import { checkCommitBoost } from "./commit-boost";
import { type ConfigProblem, problem } from "./problems";
import type { Config, LegacyPolicyConfig } from "./schema";

type Env = Record<string, string | undefined>;

/**
 * Rules that a schema cannot express: cross-field conditions, name lists, formats, `env:`
 * references. Pure but for one read: the environment is an argument, and a devnet's spec config
 * (`network: <path>`) is read and checked here, so `config check` reports its problems too.
 * Returns every problem, never just the first.
 * static_auth's rules and CIDRs are not checked here: they are wire shapes (auth/schema.ts),
 * checked with the config's structure by the one schema the Auth API and the CLI use too.
 */
export function validateConfig(config: Config, env: Env): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const report = (where: string, message: string) => problems.push(problem(where, message));
  checkLogging(config, report);
  checkListeners(config, report);
  checkNetwork(config, report);
  checkCors(config, report);
  checkAddresses(config, report);
  checkPubkeys("canary_keys", config.canary_keys, report);
  checkAntislashing(config, report);
  checkCloudKv(config, report);
  checkOpenTelemetry(config, report);
  checkAuthModes(config, report);
  checkLegacyAuth(config, env, report);
  checkStaticAuth(config, env, report);
  checkSignerState(config, report);
  checkKeyManager(config, report);
  const network = configuredNetworkOf(config.network, config.network_config);
  checkCommitBoost(config, env, network.ok ? network.network : undefined, report, checkPostgresUrl);
  return problems;
}

type Report = (where: string, message: string) => void;

/** `env:VAR` is resolved from the environment; anything else is the value itself. */
export function resolveSecret(
  value: string,
  env: Env,
): { ok: true; value: string } | { ok: false; variable: string } {
  if (!value.startsWith("env:")) return { ok: true, value };
  const variable = value.slice(4);
  const resolved = env[variable];
  return resolved === undefined || resolved === ""
    ? { ok: false, variable }
    : { ok: true, value: resolved };
}

/** A named network, or a spec config that is readable and gives what signing needs. */
function checkNetwork(config: Config, report: Report) {
  const resolved = configuredNetworkOf(config.network, config.network_config);
  if (!resolved.ok) for (const { where, message } of resolved.problems) report(where, message);
}

/** Wildcard addresses take the port on every interface, so they meet every other address. */
const WILDCARDS = new Set(["0.0.0.0", "::", "[::]"]);

/** The signing and metrics listeners cannot share a port on an address both listen on. */
function checkListeners(config: Config, report: Report) {
  const { server, metrics } = config;
  if (server.listen_port === 0 || server.listen_port !== metrics.listen_port) return;
  const overlap =
    server.listen_address === metrics.listen_address ||
    WILDCARDS.has(server.listen_address) ||
    WILDCARDS.has(metrics.listen_address);
  if (!overlap) return;
  report(
    "metrics.listen_port",
    `is server.listen_port too (${server.listen_port} on ${metrics.listen_address} and ${server.listen_address}): the signing and the metrics listeners need different ports`,
  );
}

function checkLogging(config: Config, report: Report) {
  const parsed = parseLogFilter(config.logging.level);
  if (!parsed.ok) report("logging.level", parsed.error);
}

function checkAddresses(config: Config, report: Report) {
  for (const listener of ["server", "metrics"] as const) {
    const problem = listenAddressProblem(config[listener].listen_address);
    if (problem) report(`${listener}.listen_address`, problem);
  }
  for (const [i, entry] of config.server.host_allowlist.entries()) {
    const problem = allowlistEntryProblem(entry);
    if (problem) report(`server.host_allowlist[${i}]`, problem);
  }
}

function checkCors(config: Config, report: Report) {
  for (const [i, origin] of (config.server.cors_allowed_origins ?? []).entries()) {
    if (origin !== "*" && !isOrigin(origin)) {
      report(
        `server.cors_allowed_origins[${i}]`,
        `"${origin}" is not "*" or an origin like https://host:port`,
      );
    }
  }
}

function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (
      (url.protocol === "http:" || url.protocol === "https:") &&
      url.origin === text.replace(/\/$/, "")
    );
  } catch {
    return false;
  }
}

function checkPubkeys(where: string, keys: readonly string[] | undefined, report: Report) {
  for (const [i, key] of (keys ?? []).entries()) {
    if (!isPubkeyHex(key))
      report(`${where}[${i}]`, "invalid public key: expected 0x followed by 96 hex characters");
  }
}

function checkNames(
  where: string,
  names: readonly string[] | undefined,
  isKnown: (name: string) => boolean,
  kind: string,
  report: Report,
) {
  for (const [i, name] of (names ?? []).entries()) {
    if (!isKnown(name)) report(`${where}[${i}]`, `unknown ${kind} "${name}"`);
  }
}

function checkAntislashing(config: Config, report: Report) {
  const { backend, url, table } = config.antislashing;
  if (backend === "postgres") checkPostgresUrl("antislashing.url", url, report);
  if (backend === "dynamodb" && !table)
    report("antislashing.table", "required when antislashing.backend is dynamodb");
}

export function checkPostgresUrl(where: string, url: string | undefined, report: Report) {
  if (!url) return report(where, "required for the postgres backend");
  try {
    const protocol = new URL(url).protocol;
    if (protocol !== "postgres:" && protocol !== "postgresql:") {
      report(where, "must start with postgres:// or postgresql://");
    }
  } catch {
    report(where, "is not a valid URL");
  }
}

const AGE_RECIPIENT = /^age1[02-9ac-hj-np-z]{58}$/;

function checkCloudKv(config: Config, report: Report) {
  const kv = config.key_sources.cloud_kv;
  // The same check `sigil operator init` applies to these defaults, so config check and init agree.
  for (const [i, arn] of (kv.kms_key_arns ?? []).entries()) {
    const parsed = parseWrapSpec(`awskms:${arn}`);
    if (!parsed.ok) report(`key_sources.cloud_kv.kms_key_arns[${i}]`, parsed.reason);
  }
  if (
    kv.kms_threshold !== undefined &&
    kv.kms_key_arns !== undefined &&
    kv.kms_threshold > kv.kms_key_arns.length
  ) {
    report(
      "key_sources.cloud_kv.kms_threshold",
      `${kv.kms_threshold} is more than the ${kv.kms_key_arns.length} configured kms_key_arns`,
    );
  }
  if (kv.keygen.backup.enabled && kv.keygen.backup.recipients.length === 0) {
    report("key_sources.cloud_kv.keygen.backup.recipients", "required when backup.enabled is true");
  }
  for (const [i, recipient] of kv.keygen.backup.recipients.entries()) {
    if (!AGE_RECIPIENT.test(recipient))
      report(
        `key_sources.cloud_kv.keygen.backup.recipients[${i}]`,
        "not an age public key (age1…)",
      );
  }
  const uses = kv.keygen.enabled || kv.writable.enabled;
  if (uses && !kv.table)
    report("key_sources.cloud_kv.table", "required when keygen or writable is enabled");
  if (kv.table && !config.signer_state) {
    report(
      "key_sources.cloud_kv.table",
      "the cloud_kv key source needs signer_state (its keys are sealed under the master key)",
    );
  }
}

function checkOpenTelemetry(config: Config, report: Report) {
  try {
    const { protocol } = new URL(config.opentelemetry.endpoint);
    if (protocol !== "http:" && protocol !== "https:") throw new Error(protocol);
  } catch {
    report("opentelemetry.endpoint", "must be an http:// or https:// URL");
  }
}

function checkAuthModes(config: Config, report: Report) {
  const legacy = config.auth_policies !== undefined || config.unauthenticated_policy !== undefined;
  if (config.static_auth && config.signer_state) {
    report(
      "static_auth",
      "static_auth cannot be set in stateful mode (signer_state is configured); choose one",
    );
  }
  if (legacy && config.static_auth)
    report("auth_policies", "auth_policies and static_auth are two auth modes; choose one");
  if (legacy && config.signer_state) {
    report(
      "auth_policies",
      "auth_policies cannot be used in stateful mode (signer_state is configured); choose one",
    );
  }
}

const LEGACY_TOKEN = /^[A-Za-z0-9-]{16,}$/;

function checkLegacyAuth(config: Config, env: Env, report: Report) {
  const tokensSeen = new Map<string, string>();
  for (const [name, policy] of Object.entries(config.auth_policies ?? {})) {
    const where = `auth_policies.${name}`;
    checkLegacyPolicy(where, policy, report);
    const token = resolveSecret(policy.token, env);
    if (!token.ok) {
      report(`${where}.token`, `environment variable ${token.variable} is not set`);
      continue;
    }
    if (!LEGACY_TOKEN.test(token.value)) {
      report(
        `${where}.token`,
        "invalid token: at least 16 characters, letters, digits and dashes only",
      );
      continue;
    }
    const first = tokensSeen.get(token.value);
    if (first)
      report(`${where}.token`, `the same token as ${first}.token; every policy needs its own`);
    else tokensSeen.set(token.value, where);
  }
  if (config.unauthenticated_policy)
    checkLegacyPolicy("unauthenticated_policy", config.unauthenticated_policy, report);
}

function checkLegacyPolicy(
  where: string,
  policy: Omit<LegacyPolicyConfig, "token">,
  report: Report,
) {
  checkPubkeys(`${where}.allowed_keys`, policy.allowed_keys, report);
  const isLegacyScope = (name: string) => (LEGACY_SCOPES as readonly string[]).includes(name);
  checkNames(`${where}.allowed_scopes`, policy.allowed_scopes, isLegacyScope, "scope", report);
  checkNames(`${where}.denied_scopes`, policy.denied_scopes, isLegacyScope, "scope", report);
  checkNames(
    `${where}.allowed_signing_operations`,
    policy.allowed_signing_operations,
    isSigningOperation,
    "signing operation",
    report,
  );
  checkNames(
    `${where}.denied_signing_operations`,
    policy.denied_signing_operations,
    isSigningOperation,
    "signing operation",
    report,
  );
  if (policy.allowed_scopes && policy.denied_scopes) {
    report(where, "allowed_scopes and denied_scopes cannot both be set");
  }
  if (policy.allowed_signing_operations && policy.denied_signing_operations) {
    report(where, "allowed_signing_operations and denied_signing_operations cannot both be set");
  }
  const signDenied =
    policy.denied_scopes?.includes("sign") ||
    (policy.allowed_scopes !== undefined && !policy.allowed_scopes.includes("sign"));
  if (policy.allowed_signing_operations && signDenied) {
    report(where, "allowed_signing_operations is set but the sign scope is denied");
  }
}

/** Static tokens travel as Bearer tokens or Basic passwords: printable, no spaces, long enough to resist guessing. */
const STATIC_TOKEN = /^[A-Za-z0-9._~+/=-]{16,}$/;

function checkStaticAuth(config: Config, env: Env, report: Report) {
  const auth = config.static_auth;
  if (!auth) return;
  const names = new Set<string>();
  for (const [i, policy] of auth.policies.entries()) {
    const where = `static_auth.policies[${i}]`;
    if (names.has(policy.name)) report(`${where}.name`, `duplicate policy name "${policy.name}"`);
    names.add(policy.name);
  }
  const isPolicy = (name: string) => names.has(name);
  checkNames(
    "static_auth.anonymous.policies",
    auth.anonymous?.policies,
    isPolicy,
    "policy",
    report,
  );
  const secretsSeen = new Map<string, string>();
  for (const [i, token] of (auth.tokens ?? []).entries()) {
    const where = `static_auth.tokens[${i}]`;
    checkNames(`${where}.policies`, token.policies, isPolicy, "policy", report);
    const secret = resolveSecret(token.secret, env);
    if (!secret.ok) {
      report(`${where}.secret`, `environment variable ${secret.variable} is not set`);
      continue;
    }
    if (!STATIC_TOKEN.test(secret.value)) {
      report(
        `${where}.secret`,
        "invalid token: at least 16 characters of A-Z a-z 0-9 . _ ~ + / = -",
      );
      continue;
    }
    const first = secretsSeen.get(secret.value);
    if (first) report(`${where}.secret`, `the same token as ${first}.secret`);
    else secretsSeen.set(secret.value, where);
  }
}

function checkSignerState(config: Config, report: Report) {
  const state = config.signer_state;
  if (!state) return;
  if (state.backend === "sqlite" && !state.path)
    report("signer_state.path", "required when signer_state.backend is sqlite");
  if (state.backend === "postgres") checkPostgresUrl("signer_state.url", state.url, report);
  if (state.backend === "dynamodb" && !state.table)
    report("signer_state.table", "required when signer_state.backend is dynamodb");
}

function checkKeyManager(config: Config, report: Report) {
  if (
    config.key_sources.key_manager_api.enabled &&
    config.key_sources.filesystem.paths.length === 0
  ) {
    report(
      "key_sources.key_manager_api.enabled",
      "needs key_sources.filesystem.paths: imported keystores are written to the first path",
    );
  }
}
