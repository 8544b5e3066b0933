import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SIGNING_OPERATIONS, type SigningOperation } from "../wire/operations";
import { evaluate, filterAllowedKeys, routeAllowed } from "./policy";
import { SCOPES, type Scope } from "./scopes";
import type { AccessRequest, Policy, Rule } from "./types";

const K1 = `0x${"a1".repeat(48)}`;
const K2 = `0x${"b2".repeat(48)}`;
const K3 = `0x${"c3".repeat(48)}`;
const upper = (key: string) => `0x${key.slice(2).toUpperCase()}`;

const policy = (name: string, ...rules: Rule[]): Policy => ({ name, rules });

// The spec's three example policy shapes ("Policy", example policy shapes).
const VALIDATOR_CLIENT = policy(
  "vc",
  { effect: "allow", scopes: ["sign", "public_keys"], keys: [K1, K2] },
  { effect: "deny", operations: ["VOLUNTARY_EXIT"] },
);
const MONITORING = policy("monitoring", {
  effect: "allow",
  scopes: ["public_keys", "list_keys", "signer_status"],
});
const EXIT_OPERATOR = policy("exit", {
  effect: "allow",
  scopes: ["sign"],
  operations: ["VOLUNTARY_EXIT"],
});

interface Case {
  readonly name: string;
  readonly policies: readonly Policy[];
  readonly request: AccessRequest;
  /** true, or the exact refusal reason. */
  readonly expect: true | string;
}

const sign = (pubkey: string, operation: SigningOperation): AccessRequest => ({
  scope: "sign",
  pubkey,
  operation,
});
const NO_ALLOW_K1_ATTESTATION =
  "no policy allows scope sign for key 0xa1a1…a1a1 operation ATTESTATION";

const RULE_CASES: Case[] = [
  // Rule 1: deny-by-default.
  {
    name: "no policies: denied",
    policies: [],
    request: sign(K1, "ATTESTATION"),
    expect: NO_ALLOW_K1_ATTESTATION,
  },
  {
    name: "a policy without rules: denied",
    policies: [policy("empty")],
    request: { scope: "list_keys" },
    expect: "no policy allows scope list_keys",
  },
  {
    name: "only deny rules, none matching: still denied",
    policies: [policy("d", { effect: "deny", scopes: ["delete_keys"] })],
    request: { scope: "list_keys" },
    expect: "no policy allows scope list_keys",
  },
  // Rule 1: explicit allow needed on scope, key and operation.
  {
    name: "allow on another scope does not grant",
    policies: [policy("p", { effect: "allow", scopes: ["sign"] })],
    request: { scope: "list_keys" },
    expect: "no policy allows scope list_keys",
  },
  {
    name: "allow on another key does not grant",
    policies: [policy("p", { effect: "allow", scopes: ["sign"], keys: [K1] })],
    request: sign(K2, "ATTESTATION"),
    expect: "no policy allows scope sign for key 0xb2b2…b2b2 operation ATTESTATION",
  },
  {
    name: "allow on another operation does not grant",
    policies: [policy("p", { effect: "allow", scopes: ["sign"], operations: ["ATTESTATION"] })],
    request: sign(K1, "BLOCK_V2"),
    expect: "no policy allows scope sign for key 0xa1a1…a1a1 operation BLOCK_V2",
  },
  {
    name: "allow naming scope, key and operation grants exactly that",
    policies: [
      policy("p", {
        effect: "allow",
        scopes: ["sign"],
        keys: [K1],
        operations: ["ATTESTATION"],
      }),
    ],
    request: sign(K1, "ATTESTATION"),
    expect: true,
  },
  {
    name: "a rule restricting nothing matches everything",
    policies: [policy("all", { effect: "allow" })],
    request: sign(K3, "VOLUNTARY_EXIT"),
    expect: true,
  },
  {
    name: "an empty list restricts to nothing: never matches",
    policies: [policy("p", { effect: "allow", scopes: [] })],
    request: { scope: "sign" },
    expect: "no policy allows scope sign",
  },
  {
    name: "an empty deny list refuses nothing",
    policies: [policy("p", { effect: "allow" }, { effect: "deny", keys: [] })],
    request: sign(K1, "ATTESTATION"),
    expect: true,
  },
  // Deny wins within a policy.
  {
    name: "deny after allow wins",
    policies: [policy("p", { effect: "allow" }, { effect: "deny", scopes: ["sign"] })],
    request: sign(K1, "ATTESTATION"),
    expect: 'denied by policy "p" rule 2',
  },
  {
    name: "deny before allow wins",
    policies: [policy("p", { effect: "deny", keys: [K1] }, { effect: "allow" })],
    request: sign(K1, "ATTESTATION"),
    expect: 'denied by policy "p" rule 1',
  },
  {
    name: "a deny that does not match does not refuse",
    policies: [policy("p", { effect: "allow" }, { effect: "deny", keys: [K2] })],
    request: sign(K1, "ATTESTATION"),
    expect: true,
  },
  // Deny wins across several policies.
  {
    name: "deny in a later policy beats allow in an earlier one",
    policies: [
      policy("grant", { effect: "allow" }),
      policy("block", { effect: "deny", operations: ["VOLUNTARY_EXIT"] }),
    ],
    request: sign(K1, "VOLUNTARY_EXIT"),
    expect: 'denied by policy "block" rule 1',
  },
  {
    name: "deny in an earlier policy beats allow in a later one",
    policies: [
      policy("block", { effect: "deny", operations: ["VOLUNTARY_EXIT"] }),
      policy("grant", { effect: "allow" }),
    ],
    request: sign(K1, "VOLUNTARY_EXIT"),
    expect: 'denied by policy "block" rule 1',
  },
  {
    name: "allow from one policy, nothing from another: allowed",
    policies: [policy("none"), policy("grant", { effect: "allow", scopes: ["list_keys"] })],
    request: { scope: "list_keys" },
    expect: true,
  },
  // Dimensions absent from the request.
  {
    name: "key-restricted allow does not grant a request without a key",
    policies: [policy("p", { effect: "allow", scopes: ["public_keys"], keys: [K1] })],
    request: { scope: "public_keys" },
    expect: "no policy allows scope public_keys",
  },
  {
    name: "key-restricted deny does not refuse a request without a key",
    policies: [policy("p", { effect: "allow" }, { effect: "deny", keys: [K1] })],
    request: { scope: "list_keys" },
    expect: true,
  },
  {
    name: "operation-restricted allow does not grant a request without an operation",
    policies: [policy("p", { effect: "allow", operations: ["ATTESTATION"] })],
    request: { scope: "sign", pubkey: K1 },
    expect: "no policy allows scope sign for key 0xa1a1…a1a1",
  },
  {
    name: "operation-restricted deny does not refuse a request without an operation",
    policies: [policy("p", { effect: "allow" }, { effect: "deny", operations: ["BLOCK_V2"] })],
    request: { scope: "sign", pubkey: K1 },
    expect: true,
  },
  // Key case-insensitivity.
  {
    name: "upper-case rule key matches lower-case request key",
    policies: [policy("p", { effect: "allow", keys: [upper(K1)] })],
    request: sign(K1, "ATTESTATION"),
    expect: true,
  },
  {
    name: "lower-case rule key matches upper-case request key",
    policies: [policy("p", { effect: "allow", keys: [K1] })],
    request: sign(upper(K1), "ATTESTATION"),
    expect: true,
  },
  {
    name: "upper-case deny key refuses lower-case request key",
    policies: [policy("p", { effect: "allow" }, { effect: "deny", keys: [upper(K2)] })],
    request: sign(K2, "ATTESTATION"),
    expect: 'denied by policy "p" rule 2',
  },
  {
    name: "the refusal reason abbreviates the key, lower-cased",
    policies: [],
    request: sign(upper(K1), "ATTESTATION"),
    expect: NO_ALLOW_K1_ATTESTATION,
  },
];

const OTHER_SCOPES = (except: readonly Scope[]) => SCOPES.filter((s) => !except.includes(s));
const OPS_BUT_EXIT = SIGNING_OPERATIONS.filter((op) => op !== "VOLUNTARY_EXIT");

const EXAMPLE_CASES: Case[] = [
  // Validator client.
  ...OPS_BUT_EXIT.flatMap((op): Case[] => [
    {
      name: `vc: sign ${op} with K1`,
      policies: [VALIDATOR_CLIENT],
      request: sign(K1, op),
      expect: true,
    },
    {
      name: `vc: sign ${op} with K2`,
      policies: [VALIDATOR_CLIENT],
      request: sign(K2, op),
      expect: true,
    },
    {
      name: `vc: sign ${op} with unlisted K3`,
      policies: [VALIDATOR_CLIENT],
      request: sign(K3, op),
      expect: `no policy allows scope sign for key 0xc3c3…c3c3 operation ${op}`,
    },
  ]),
  {
    name: "vc: VOLUNTARY_EXIT refused for a listed key",
    policies: [VALIDATOR_CLIENT],
    request: sign(K1, "VOLUNTARY_EXIT"),
    expect: 'denied by policy "vc" rule 2',
  },
  {
    name: "vc: VOLUNTARY_EXIT refused for an unlisted key (deny wins)",
    policies: [VALIDATOR_CLIENT],
    request: sign(K3, "VOLUNTARY_EXIT"),
    expect: 'denied by policy "vc" rule 2',
  },
  {
    name: "vc: public_keys for a listed key",
    policies: [VALIDATOR_CLIENT],
    request: { scope: "public_keys", pubkey: K2 },
    expect: true,
  },
  {
    name: "vc: public_keys for an unlisted key",
    policies: [VALIDATOR_CLIENT],
    request: { scope: "public_keys", pubkey: K3 },
    expect: "no policy allows scope public_keys for key 0xc3c3…c3c3",
  },
  ...OTHER_SCOPES(["sign", "public_keys"]).map(
    (scope): Case => ({
      name: `vc: ${scope} refused`,
      policies: [VALIDATOR_CLIENT],
      request: { scope, pubkey: K1 },
      expect: `no policy allows scope ${scope} for key 0xa1a1…a1a1`,
    }),
  ),
  // Monitoring.
  ...(["public_keys", "list_keys", "signer_status"] as const).flatMap((scope): Case[] => [
    { name: `monitoring: ${scope}`, policies: [MONITORING], request: { scope }, expect: true },
    {
      name: `monitoring: ${scope} with any key`,
      policies: [MONITORING],
      request: { scope, pubkey: K3 },
      expect: true,
    },
  ]),
  ...OTHER_SCOPES(["public_keys", "list_keys", "signer_status"]).map(
    (scope): Case => ({
      name: `monitoring: ${scope} refused`,
      policies: [MONITORING],
      request: { scope },
      expect: `no policy allows scope ${scope}`,
    }),
  ),
  {
    name: "monitoring: sign refused",
    policies: [MONITORING],
    request: sign(K1, "ATTESTATION"),
    expect: NO_ALLOW_K1_ATTESTATION,
  },
  // Exit operator.
  ...[K1, K2, K3].map(
    (key): Case => ({
      name: `exit: VOLUNTARY_EXIT with ${key.slice(0, 6)}`,
      policies: [EXIT_OPERATOR],
      request: sign(key, "VOLUNTARY_EXIT"),
      expect: true,
    }),
  ),
  ...OPS_BUT_EXIT.map(
    (op): Case => ({
      name: `exit: ${op} refused`,
      policies: [EXIT_OPERATOR],
      request: sign(K1, op),
      expect: `no policy allows scope sign for key 0xa1a1…a1a1 operation ${op}`,
    }),
  ),
  {
    name: "exit: sign without an operation refused",
    policies: [EXIT_OPERATOR],
    request: { scope: "sign", pubkey: K1 },
    expect: "no policy allows scope sign for key 0xa1a1…a1a1",
  },
  ...OTHER_SCOPES(["sign"]).map(
    (scope): Case => ({
      name: `exit: ${scope} refused`,
      policies: [EXIT_OPERATOR],
      request: { scope },
      expect: `no policy allows scope ${scope}`,
    }),
  ),
  // Several example policies on one token.
  {
    name: "vc + exit: the vc deny on VOLUNTARY_EXIT beats the exit allow",
    policies: [EXIT_OPERATOR, VALIDATOR_CLIENT],
    request: sign(K1, "VOLUNTARY_EXIT"),
    expect: 'denied by policy "vc" rule 2',
  },
  {
    name: "vc + monitoring: list_keys from monitoring",
    policies: [VALIDATOR_CLIENT, MONITORING],
    request: { scope: "list_keys" },
    expect: true,
  },
  {
    name: "vc + monitoring: public_keys for any key from monitoring",
    policies: [VALIDATOR_CLIENT, MONITORING],
    request: { scope: "public_keys", pubkey: K3 },
    expect: true,
  },
  {
    name: "vc + monitoring: sign with an unlisted key still refused",
    policies: [VALIDATOR_CLIENT, MONITORING],
    request: sign(K3, "ATTESTATION"),
    expect: "no policy allows scope sign for key 0xc3c3…c3c3 operation ATTESTATION",
  },
];

function runCases(cases: readonly Case[]) {
  for (const c of cases) {
    test(c.name, () => {
      const decision = evaluate(c.policies, c.request);
      if (c.expect === true) expect(decision).toEqual({ allowed: true });
      else expect(decision).toEqual({ allowed: false, reason: c.expect });
    });
  }
}

describe("evaluate: spec Authentication rules", () => runCases(RULE_CASES));
describe("evaluate: spec example policies", () => runCases(EXAMPLE_CASES));

interface ListingCase {
  readonly name: string;
  readonly policies: readonly Policy[];
  readonly scope: Scope;
  readonly pubkeys: readonly string[];
  readonly keys: readonly string[];
  readonly route: boolean;
}

// Rule 9 (and 10): listings are evaluated per key and return only the allowed keys.
const LISTING_CASES: ListingCase[] = [
  {
    name: "vc: publicKeys lists only its bounded keys",
    policies: [VALIDATOR_CLIENT],
    scope: "public_keys",
    pubkeys: [K1, K2, K3],
    keys: [K1, K2],
    route: true,
  },
  {
    name: "vc: key-restricted grant reaches the listing even though the scope-only request is not allowed",
    policies: [VALIDATOR_CLIENT],
    scope: "public_keys",
    pubkeys: [K3, K2],
    keys: [K2],
    route: true,
  },
  {
    name: "vc: no listed key loaded → refused",
    policies: [VALIDATOR_CLIENT],
    scope: "public_keys",
    pubkeys: [K3],
    keys: [],
    route: false,
  },
  {
    name: "monitoring: publicKeys lists every key",
    policies: [MONITORING],
    scope: "public_keys",
    pubkeys: [K1, K2, K3],
    keys: [K1, K2, K3],
    route: true,
  },
  {
    name: "monitoring: an empty key set still reaches the listing",
    policies: [MONITORING],
    scope: "public_keys",
    pubkeys: [],
    keys: [],
    route: true,
  },
  {
    name: "exit: no public_keys grant → refused",
    policies: [EXIT_OPERATOR],
    scope: "public_keys",
    pubkeys: [K1, K2, K3],
    keys: [],
    route: false,
  },
  {
    name: "vc + monitoring: the union of grants",
    policies: [VALIDATOR_CLIENT, MONITORING],
    scope: "public_keys",
    pubkeys: [K3, K1],
    keys: [K3, K1],
    route: true,
  },
  {
    name: "a key-restricted deny removes that key only",
    policies: [
      policy(
        "p",
        { effect: "allow", scopes: ["public_keys"] },
        { effect: "deny", scopes: ["public_keys"], keys: [K2] },
      ),
    ],
    scope: "public_keys",
    pubkeys: [K1, K2, K3],
    keys: [K1, K3],
    route: true,
  },
  {
    name: "keys keep their original spelling and order",
    policies: [policy("p", { effect: "allow", keys: [K1, K3] })],
    scope: "public_keys",
    pubkeys: [upper(K3), K2, upper(K1)],
    keys: [upper(K3), upper(K1)],
    route: true,
  },
  {
    name: "signer_keys_list is its own scope (rule 10)",
    policies: [policy("inv", { effect: "allow", scopes: ["signer_keys_list"] })],
    scope: "signer_keys_list",
    pubkeys: [K1, K2],
    keys: [K1, K2],
    route: true,
  },
  {
    name: "signer_keys_list is not granted by public_keys",
    policies: [MONITORING],
    scope: "signer_keys_list",
    pubkeys: [K1],
    keys: [],
    route: false,
  },
];

describe("filterAllowedKeys / routeAllowed: listings (rule 9)", () => {
  for (const c of LISTING_CASES) {
    test(c.name, () => {
      expect(filterAllowedKeys(c.policies, c.scope, c.pubkeys)).toEqual([...c.keys]);
      expect(routeAllowed(c.policies, c.scope, c.pubkeys)).toBe(c.route);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Properties. Small pools so that rules and requests overlap often.

const KEY_POOL = [K1, K2, K3];
const SCOPE_POOL: readonly Scope[] = ["sign", "public_keys", "list_keys", "signer_status"];
const OP_POOL: readonly SigningOperation[] = ["ATTESTATION", "BLOCK_V2", "VOLUNTARY_EXIT"];

const keyArb = fc
  .tuple(fc.constantFrom(...KEY_POOL), fc.boolean())
  .map(([key, up]) => (up ? upper(key) : key));

const ruleArb: fc.Arbitrary<Rule> = fc.record(
  {
    effect: fc.constantFrom("allow" as const, "deny" as const),
    scopes: fc.subarray([...SCOPE_POOL]),
    keys: fc.uniqueArray(keyArb, { maxLength: 3 }),
    operations: fc.subarray([...OP_POOL]),
  },
  { requiredKeys: ["effect"] },
);
const allowArb = ruleArb.map((rule): Rule => ({ ...rule, effect: "allow" }));
const denyArb = ruleArb.map((rule): Rule => ({ ...rule, effect: "deny" }));

const policiesArb: fc.Arbitrary<Policy[]> = fc
  .array(fc.array(ruleArb, { maxLength: 5 }), { maxLength: 4 })
  .map((ruleLists) => ruleLists.map((rules, i) => ({ name: `p${i}`, rules })));

const requestArb: fc.Arbitrary<AccessRequest> = fc.record(
  {
    scope: fc.constantFrom(...SCOPE_POOL),
    pubkey: keyArb,
    operation: fc.constantFrom(...OP_POOL),
  },
  { requiredKeys: ["scope"] },
);

const allowed = (policies: readonly Policy[], request: AccessRequest) =>
  evaluate(policies, request).allowed;

/** Inserts `rule` into policy `at` (modulo) at rule position `pos`, or as a new policy. */
function addRule(policies: readonly Policy[], rule: Rule, at: number, pos: number): Policy[] {
  if (policies.length === 0 || at === policies.length) {
    return [...policies, policy("added", rule)];
  }
  const index = at % policies.length;
  return policies.map((p, i) => {
    if (i !== index) return p;
    const rules = [...p.rules];
    rules.splice(pos % (rules.length + 1), 0, rule);
    return { ...p, rules };
  });
}

/** Removes one rule with `effect` chosen by `pick` (modulo); unchanged when there is none. */
function removeRule(policies: readonly Policy[], effect: Rule["effect"], pick: number): Policy[] {
  const spots = policies.flatMap((p, i) =>
    p.rules.flatMap((r, j) => (r.effect === effect ? [[i, j] as const] : [])),
  );
  const spot = spots[pick % Math.max(spots.length, 1)];
  if (spot === undefined) return [...policies];
  const [pi, ri] = spot;
  return policies.map((p, i) =>
    i === pi ? { ...p, rules: p.rules.filter((_, j) => j !== ri) } : p,
  );
}

/** An independent reading of the rule in docs/architecture.md ("Auth"), for comparison. */
function referenceAllowed(policies: readonly Policy[], request: AccessRequest): boolean {
  const listed = <T>(list: readonly T[] | undefined, value: T | undefined, eq = Object.is) =>
    list === undefined || (value !== undefined && list.some((item) => eq(item, value)));
  const sameKey = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  const matching = policies
    .flatMap((p) => p.rules)
    .filter(
      (r) =>
        listed(r.scopes, request.scope) &&
        listed(r.keys, request.pubkey, sameKey) &&
        listed(r.operations, request.operation),
    );
  return matching.some((r) => r.effect === "allow") && !matching.some((r) => r.effect === "deny");
}

/** Fisher–Yates driven by a small deterministic PRNG (mulberry32), so fast-check can replay it. */
function seededShuffle(seed: number): <T>(items: readonly T[]) => T[] {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return <T>(items: readonly T[]): T[] => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      const a = out[i];
      const b = out[j];
      if (a === undefined || b === undefined) continue;
      out[i] = b;
      out[j] = a;
    }
    return out;
  };
}

const positions = fc.nat({ max: 20 });

describe("evaluate: properties", () => {
  test("matches an independent reading of the rule in docs/architecture.md (Auth)", () => {
    fc.assert(
      fc.property(policiesArb, requestArb, (policies, request) => {
        expect(allowed(policies, request)).toBe(referenceAllowed(policies, request));
      }),
      { numRuns: 2000 },
    );
  });

  test("adding a deny rule never grants access", () => {
    fc.assert(
      fc.property(
        policiesArb,
        denyArb,
        requestArb,
        positions,
        positions,
        (policies, rule, request, at, pos) => {
          fc.pre(!allowed(policies, request));
          expect(allowed(addRule(policies, rule, at % (policies.length + 1), pos), request)).toBe(
            false,
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  test("removing an allow rule never grants access", () => {
    fc.assert(
      fc.property(policiesArb, requestArb, positions, (policies, request, pick) => {
        fc.pre(!allowed(policies, request));
        expect(allowed(removeRule(policies, "allow", pick), request)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  // True with no exception: an allow rule only adds matches, and the set of matching denies is
  // unchanged. (Adding a *deny* rule, or a policy holding one, can remove access.)
  test("adding an allow rule never removes access", () => {
    fc.assert(
      fc.property(
        policiesArb,
        allowArb,
        requestArb,
        positions,
        positions,
        (policies, rule, request, at, pos) => {
          fc.pre(allowed(policies, request));
          expect(allowed(addRule(policies, rule, at % (policies.length + 1), pos), request)).toBe(
            true,
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  test("removing a deny rule never removes access", () => {
    fc.assert(
      fc.property(policiesArb, requestArb, positions, (policies, request, pick) => {
        fc.pre(allowed(policies, request));
        expect(allowed(removeRule(policies, "deny", pick), request)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  test("order-independent w.r.t. rules and policies", () => {
    fc.assert(
      fc.property(policiesArb, requestArb, fc.integer(), (policies, request, seed) => {
        const shuffle = seededShuffle(seed);
        const reordered = shuffle(policies).map((p) => ({ ...p, rules: shuffle(p.rules) }));
        expect(allowed(reordered, request)).toBe(allowed(policies, request));
      }),
      { numRuns: 2000 },
    );
  });

  test("policy boundaries do not matter: all rules in one policy decide the same", () => {
    fc.assert(
      fc.property(policiesArb, requestArb, (policies, request) => {
        const merged = [policy("merged", ...policies.flatMap((p) => p.rules))];
        expect(allowed(merged, request)).toBe(allowed(policies, request));
      }),
      { numRuns: 1000 },
    );
  });

  test("a deny reason names a deny rule that matches the request", () => {
    fc.assert(
      fc.property(policiesArb, requestArb, (policies, request) => {
        const decision = evaluate(policies, request);
        if (decision.allowed) return;
        const named = /^denied by policy "(.*)" rule (\d+)$/.exec(decision.reason);
        if (named === null) {
          expect(decision.reason.startsWith("no policy allows scope ")).toBe(true);
          return;
        }
        const [, name, number] = named;
        const rule = policies.find((p) => p.name === name)?.rules[Number(number) - 1];
        expect(rule?.effect).toBe("deny");
        if (rule)
          expect(referenceAllowed([policy("x", { effect: "allow" }, rule)], request)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  test("key case does not change the decision", () => {
    fc.assert(
      fc.property(policiesArb, requestArb, (policies, request) => {
        fc.pre(request.pubkey !== undefined);
        const key = request.pubkey ?? "";
        const lower = allowed(policies, { ...request, pubkey: key.toLowerCase() });
        expect(allowed(policies, { ...request, pubkey: upper(key) })).toBe(lower);
        expect(allowed(policies, request)).toBe(lower);
      }),
      { numRuns: 1000 },
    );
  });

  test("filterAllowedKeys and routeAllowed agree with evaluate", () => {
    fc.assert(
      fc.property(
        policiesArb,
        fc.constantFrom(...SCOPE_POOL),
        fc.array(keyArb, { maxLength: 4 }),
        (policies, scope, pubkeys) => {
          const kept = filterAllowedKeys(policies, scope, pubkeys);
          expect(kept).toEqual(pubkeys.filter((pubkey) => allowed(policies, { scope, pubkey })));
          expect(routeAllowed(policies, scope, pubkeys)).toBe(
            allowed(policies, { scope }) || kept.length > 0,
          );
        },
      ),
      { numRuns: 1000 },
    );
  });
});
