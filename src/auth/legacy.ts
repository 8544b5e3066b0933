/**
 * Translation of a legacy config-file policy (an `auth_policies` entry, or `unauthenticated_policy`:
 * the same fields minus token) into rules for the one evaluator (policy.ts).
 *
 * Legacy semantics (spec, "Legacy policy map"):
 *   - scopes: allowed_scopes set → only those; denied_scopes set → the legacy scope list minus
 *     those; neither → the whole legacy scope list (which has no signer_status);
 *   - allowed_keys restricts the sign scope only; omitted → every key;
 *   - operations concern the sign scope only: allowed_signing_operations set → only those;
 *     denied_signing_operations set → all but those; neither → all;
 *   - sign needs the scope, the key and the operation allowed.
 * A request that lacks a dimension (no pubkey / no operation) follows the evaluator: an allow
 * list needs a listed value, a deny list refuses only what it names.
 *
 * Names the legacy scope list or the operation list does not know (startup validation rejects
 * them) are dropped, so they grant nothing.
 */
import { isSigningOperation } from "../wire/operations";
import { LEGACY_SCOPES, type Scope } from "./scopes";
import type { Rule } from "./types";

/** A legacy policy as plain lists of names, whatever file or variable it was read from. */
export interface LegacyPolicyFields {
  readonly allowed_keys?: readonly string[];
  readonly allowed_scopes?: readonly string[];
  readonly denied_scopes?: readonly string[];
  readonly allowed_signing_operations?: readonly string[];
  readonly denied_signing_operations?: readonly string[];
}

export function legacyPolicyRules(policy: LegacyPolicyFields): Rule[] {
  const scopes = legacyAllowedScopes(policy);
  const rules: Rule[] = [];

  const others = scopes.filter((scope) => scope !== "sign");
  if (others.length > 0) rules.push({ effect: "allow", scopes: others });

  if (scopes.includes("sign")) {
    const keys = policy.allowed_keys?.map((key) => key.toLowerCase());
    const operations = policy.allowed_signing_operations?.filter(isSigningOperation);
    rules.push({
      effect: "allow",
      scopes: ["sign"],
      ...(keys !== undefined && { keys }),
      ...(operations !== undefined && { operations }),
    });

    const denied = (policy.denied_signing_operations ?? []).filter(isSigningOperation);
    if (denied.length > 0) rules.push({ effect: "deny", scopes: ["sign"], operations: denied });
  }
  return rules;
}

function legacyAllowedScopes(policy: LegacyPolicyFields): Scope[] {
  const allowed = policy.allowed_scopes;
  if (allowed !== undefined) return LEGACY_SCOPES.filter((scope) => allowed.includes(scope));
  const denied = policy.denied_scopes ?? [];
  return LEGACY_SCOPES.filter((scope) => !denied.includes(scope));
}
