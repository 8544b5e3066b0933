/**
 * The one access-policy evaluator of every auth mode (docs/architecture.md, "Auth"). Pure: no IO,
 * no clock.
 *
 * A rule matches a request when each dimension the rule restricts (scopes, keys, operations) is
 * present in the request and the request's value is listed in the rule. A dimension the rule
 * omits matches anything; a dimension the rule restricts but the request lacks does not match
 * (so `allow operations:[X]` does not grant a request that has no operation, and
 * `deny operations:[X]` does not refuse it). An empty list restricts to nothing: never matches.
 * Keys compare case-insensitively.
 *
 * Decision: any matching deny wins, across all the token's policies; otherwise any matching
 * allow; otherwise deny (deny-by-default). Rule and policy order never changes whether a request
 * is allowed; it only chooses which deny the refusal reason names (the first one).
 */
import type { Scope } from "./scopes";
import type { AccessDecision, AccessRequest, Policy, Rule } from "./types";

const ALLOWED: AccessDecision = { allowed: true };

/** Whether `rule` applies to `request` (its effect aside). */
export function ruleMatches(rule: Rule, request: AccessRequest): boolean {
  if (rule.scopes !== undefined && !rule.scopes.includes(request.scope)) return false;
  if (rule.keys !== undefined) {
    if (request.pubkey === undefined) return false;
    const wanted = request.pubkey.toLowerCase();
    if (!rule.keys.some((key) => key.toLowerCase() === wanted)) return false;
  }
  if (rule.operations !== undefined) {
    if (request.operation === undefined) return false;
    if (!rule.operations.includes(request.operation)) return false;
  }
  return true;
}

export function evaluate(policies: readonly Policy[], request: AccessRequest): AccessDecision {
  let allowedBy = false;
  for (const policy of policies) {
    for (const [index, rule] of policy.rules.entries()) {
      if (!ruleMatches(rule, request)) continue;
      if (rule.effect === "deny") {
        return {
          allowed: false,
          reason: `denied by policy ${JSON.stringify(policy.name)} rule ${index + 1}`,
        };
      }
      allowedBy = true;
    }
  }
  if (allowedBy) return ALLOWED;
  return { allowed: false, reason: `no policy allows ${describeRequest(request)}` };
}

/** Keys of `pubkeys` (in their order) for which `{scope, pubkey}` is allowed. Listing routes. */
export function filterAllowedKeys(
  policies: readonly Policy[],
  scope: Scope,
  pubkeys: readonly string[],
): string[] {
  return pubkeys.filter((pubkey) => evaluate(policies, { scope, pubkey }).allowed);
}

/**
 * Whether a listing route of `scope` may be reached at all: the scope-only request is allowed,
 * or at least one of `pubkeys` is. A key-restricted grant thus reaches the listing (and gets its
 * filtered keys); a token with no grant for the scope gets false (403).
 */
export function routeAllowed(
  policies: readonly Policy[],
  scope: Scope,
  pubkeys: readonly string[],
): boolean {
  if (evaluate(policies, { scope }).allowed) return true;
  return pubkeys.some((pubkey) => evaluate(policies, { scope, pubkey }).allowed);
}

/**
 * Whether a key route of `scope` may be reached at all: the scope-only request is allowed, or the
 * scope is allowed for at least one key that an allow rule names. Unlike `routeAllowed`, it does
 * not depend on which keys happen to be loaded: a key-restricted grant reaches the route (and the
 * service then decides per key with `evaluate`); a token with no grant for the scope does not.
 */
export function scopeReachable(policies: readonly Policy[], scope: Scope): boolean {
  const named = policies.flatMap((policy) =>
    policy.rules.flatMap((rule) => (rule.effect === "allow" ? (rule.keys ?? []) : [])),
  );
  return routeAllowed(policies, scope, named);
}

/** Short, non-secret description: `scope sign for key 0xa1b2…c3d4 operation ATTESTATION`. */
function describeRequest(request: AccessRequest): string {
  let text = `scope ${request.scope}`;
  if (request.pubkey !== undefined) text += ` for key ${abbreviateKey(request.pubkey)}`;
  if (request.operation !== undefined) text += ` operation ${request.operation}`;
  return text;
}

function abbreviateKey(pubkey: string): string {
  const key = pubkey.toLowerCase();
  return key.length > 14 ? `${key.slice(0, 6)}…${key.slice(-4)}` : key;
}
