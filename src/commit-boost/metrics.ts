import { Counter, Gauge, type Registry } from "prom-client";
import type { CommitBoostObserver } from "./http";
import type { AuthFailureLimiter } from "./limiter";

/**
 * The Commit-Boost listener's metrics, in the signer's registry. Labels are route names, error
 * codes and refusal reasons: never a module secret, a key or a client address.
 */
export function commitBoostMetrics(
  registry: Registry,
  limiter: AuthFailureLimiter,
): CommitBoostObserver {
  const requests = new Counter({
    name: "signer_commit_boost_requests_total",
    help: "Commit-Boost signer API requests by route and outcome (ok, or the error code).",
    labelNames: ["route", "outcome"] as const,
    registers: [registry],
  });
  const failures = new Counter({
    name: "signer_commit_boost_auth_failures_total",
    help: "Commit-Boost requests refused before a route ran, by reason (a JWT check, blocked, body).",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "signer_commit_boost_blocked_clients",
    help: "Client addresses the Commit-Boost listener refuses (429) after repeated auth failures.",
    registers: [registry],
    collect() {
      this.set(limiter.blockedCount());
    },
  });
  return {
    request: (route, outcome) => requests.inc({ route, outcome }),
    authFailure: (reason) => failures.inc({ reason }),
  };
}
