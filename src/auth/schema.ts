import { FormatRegistry, type Static, type TLiteral, type TUnion, Type } from "@sinclair/typebox";
import { SIGNING_OPERATIONS } from "../wire/operations";
import { normalizePubkey, PubkeyText } from "../wire/pubkey";
import { parseCidr } from "./cidr";
import { SCOPES } from "./scopes";
import type { Policy, Rule } from "./types";

/**
 * The wire shapes of access control, one schema each: a policy rule, a policy, a token request.
 * The static_auth section of the config, the Auth API's routes, the signer_state codec and
 * `sigil operator auth` all check with these (through wire/check.ts), so a rule is accepted or
 * refused, and worded, the same wherever it comes from.
 */

/** docs/architecture.md ("Auth"): ttl_seconds is required, from 1 s to one year. */
export const MAX_TTL_SECONDS = 365 * 24 * 3600;
/** Every request reads a token's policies: keep that bounded. */
export const MAX_POLICIES_PER_TOKEN = 64;

/** A body that is not an object, as every request of the Auth API words it. */
const REQUEST = { problem: "request body must be a JSON object" } as const;

FormatRegistry.Set("cidr", (value) => parseCidr(value) !== undefined);

function names<const T extends readonly string[]>(values: T, problem: string) {
  // TypeBox cannot infer a union from a mapped array; the cast restores the literal types.
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    { problem },
  ) as unknown as TUnion<TLiteral<T[number]>[]>;
}

export const ScopeName = names(SCOPES, "unknown scope {value}");
export const OperationName = names(SIGNING_OPERATIONS, "unknown signing operation {value}");

/** One rule of a policy: an effect, and the dimensions it restricts; no other field. */
export const RuleSchema = Type.Object(
  {
    effect: Type.Union([Type.Literal("allow"), Type.Literal("deny")], {
      expected: '"allow" or "deny"',
    }),
    scopes: Type.Optional(Type.Array(ScopeName, { expected: "a list of scopes" })),
    keys: Type.Optional(Type.Array(PubkeyText, { expected: "a list of public keys" })),
    operations: Type.Optional(
      Type.Array(OperationName, { expected: "a list of signing operations" }),
    ),
  },
  {
    additionalProperties: false,
    expected: "an object: {effect, scopes?, keys?, operations?}",
  },
);

export const RulesSchema = Type.Array(RuleSchema, { expected: "a list of rules" });

/** A policy name as the Auth API takes it (it is also a path segment). */
export const PolicyName = Type.String({
  pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
  expected: "1-64 characters: letters, digits, '.', '_' or '-'",
});

/** POST /api/v1/signer/auth/policies. */
export const PolicyRequest = Type.Object({ name: PolicyName, rules: RulesSchema }, REQUEST);
/** PUT /api/v1/signer/auth/policies/{name}: the name is the path's. */
export const PolicyUpdateRequest = Type.Object({ rules: RulesSchema }, REQUEST);

/** A source CIDR a token is bound to (`10.0.0.0/8`, `2001:db8::/32`, or one address). */
export const CidrText = Type.String({ format: "cidr", problem: "invalid CIDR {value}" });
export const CidrList = Type.Array(CidrText, { expected: "a list of CIDRs" });

/** POST /api/v1/signer/auth/tokens. */
export const TokenRequest = Type.Object(
  {
    policies: Type.Array(Type.String(), {
      minItems: 1,
      maxItems: MAX_POLICIES_PER_TOKEN,
      uniqueItems: true,
      expected: `a non-empty list of distinct policy names, at most ${MAX_POLICIES_PER_TOKEN}`,
    }),
    ttl_seconds: Type.Integer({
      minimum: 1,
      maximum: MAX_TTL_SECONDS,
      expected: `an integer from 1 to ${MAX_TTL_SECONDS}`,
    }),
    token_bound_cidrs: Type.Optional(CidrList),
  },
  REQUEST,
);

export type RuleInput = Static<typeof RuleSchema>;
export type PolicyCommand = Static<typeof PolicyRequest>;
export type PolicyUpdateCommand = Static<typeof PolicyUpdateRequest>;
export type TokenCommand = Static<typeof TokenRequest>;

/**
 * A checked rule as policies hold it: its fields in the schema's order, public keys in lower
 * case, a dimension it does not name absent (an empty list stays an empty list).
 */
export function toRule(rule: RuleInput): Rule {
  return {
    effect: rule.effect,
    ...(rule.scopes === undefined ? {} : { scopes: [...rule.scopes] }),
    ...(rule.keys === undefined ? {} : { keys: rule.keys.map(normalizePubkey) }),
    ...(rule.operations === undefined ? {} : { operations: [...rule.operations] }),
  };
}

export function toPolicy(name: string, rules: readonly RuleInput[]): Policy {
  return { name, rules: rules.map(toRule) };
}
