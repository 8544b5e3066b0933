/**
 * The `commit_boost` section's cross-field rules (docs/commit-boost.md): what a schema cannot
 * say, checked by `serve` and `config check` alike. Nothing is checked while it is disabled.
 */
import { allowlistEntryProblem } from "../net/host";
import type { NetworkConstants } from "../signing/network";
import type { Config } from "./schema";

type Env = Record<string, string | undefined>;
type Report = (where: string, message: string) => void;

/** Shorter secrets are refused: a JWT secret is guessed offline from one token. */
export const MIN_JWT_SECRET_LENGTH = 16;

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]"]);

function secretValue(value: string, env: Env): string | undefined {
  if (!value.startsWith("env:")) return value;
  const resolved = env[value.slice(4)];
  return resolved === undefined || resolved === "" ? undefined : resolved;
}

/** The chain id requests are signed for, or undefined when neither config nor network give it. */
export function commitBoostChainId(
  config: Config,
  network: NetworkConstants | undefined,
): bigint | undefined {
  const configured = config.commit_boost.chain_id;
  return configured === undefined ? network?.depositChainId : BigInt(configured);
}

export function checkCommitBoost(
  config: Config,
  env: Env,
  network: NetworkConstants | undefined,
  report: Report,
  checkPostgresUrl: (where: string, url: string | undefined, report: Report) => void,
): void {
  const cb = config.commit_boost;
  if (!cb.enabled) return;
  if (cb.modules.length === 0)
    report("commit_boost.modules", "no module is configured: every request would be refused");
  const seen = new Set<string>();
  for (const [i, module] of cb.modules.entries()) {
    if (seen.has(module.id))
      report(`commit_boost.modules[${i}].id`, `${module.id} is listed twice`);
    seen.add(module.id);
    for (const [k, key] of (module.pubkeys ?? []).entries()) {
      if (!/^0x[0-9a-fA-F]{96}$/.test(key))
        report(
          `commit_boost.modules[${i}].pubkeys[${k}]`,
          "invalid public key: expected 0x followed by 96 hex characters",
        );
    }
    const secret = secretValue(module.jwt_secret, env);
    if (secret === undefined)
      report(
        `commit_boost.modules[${i}].jwt_secret`,
        `environment variable ${module.jwt_secret.slice(4)} is not set`,
      );
    else if (secret.length < MIN_JWT_SECRET_LENGTH)
      report(
        `commit_boost.modules[${i}].jwt_secret`,
        `must be at least ${MIN_JWT_SECRET_LENGTH} characters`,
      );
  }
  for (const [i, entry] of cb.host_allowlist.entries()) {
    const problem = allowlistEntryProblem(entry);
    if (problem) report(`commit_boost.host_allowlist[${i}]`, problem);
  }
  for (const [other, listener] of [
    ["server", config.server],
    ["metrics", config.metrics],
  ] as const) {
    if (cb.listen_port === 0 || cb.listen_port !== listener.listen_port) continue;
    const overlap =
      cb.listen_address === listener.listen_address ||
      WILDCARDS.has(cb.listen_address) ||
      WILDCARDS.has(listener.listen_address);
    if (overlap)
      report(
        "commit_boost.listen_port",
        `is ${other}.listen_port too: each listener needs its own port`,
      );
  }
  if (network && commitBoostChainId(config, network) === undefined)
    report(
      "commit_boost.chain_id",
      "required: the network gives no chain id (a spec config without DEPOSIT_CHAIN_ID)",
    );
  const store = cb.proxy_store;
  if (store) {
    const where = "commit_boost.proxy_store";
    if (store.backend === "sqlite" && !store.path)
      report(`${where}.path`, `required when ${where}.backend is sqlite`);
    if (store.backend === "postgres") checkPostgresUrl(`${where}.url`, store.url, report);
    if (store.backend === "dynamodb" && !store.table)
      report(`${where}.table`, `required when ${where}.backend is dynamodb`);
  } else if (!config.signer_state) {
    report("commit_boost.proxy_store", "required without signer_state: proxy keys need a database");
  }
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

/** A Commit-Boost listener reachable from the network without TLS: tokens and signatures in clear. */
export function commitBoostWarnings(config: Config): string[] {
  const cb = config.commit_boost;
  if (!cb.enabled || cb.tls || LOOPBACK.has(cb.listen_address)) return [];
  return [
    `commit_boost.listen_address is ${cb.listen_address} without commit_boost.tls: module JWTs and signatures cross the network in clear (Commit-Boost's own signer uses TLS by default since v0.10); set commit_boost.tls, or listen on 127.0.0.1`,
  ];
}
