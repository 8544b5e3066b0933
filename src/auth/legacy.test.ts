import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SIGNING_OPERATIONS, type SigningOperation } from "../wire/operations";
import { type LegacyPolicyFields, legacyPolicyRules } from "./legacy";
import { evaluate } from "./policy";
import { LEGACY_SCOPES, SCOPES, type Scope } from "./scopes";
import type { AccessRequest } from "./types";

const K1 = `0x${"a1".repeat(48)}`;
const K2 = `0x${"b2".repeat(48)}`;
const K3 = `0x${"c3".repeat(48)}`;
const upper = (key: string) => `0x${key.slice(2).toUpperCase()}`;

const NON_SIGN_LEGACY = LEGACY_SCOPES.filter((scope) => scope !== "sign");

function decide(fields: LegacyPolicyFields, request: AccessRequest) {
  return evaluate([{ name: "legacy", rules: legacyPolicyRules(fields) }], request);
}
const allows = (fields: LegacyPolicyFields, request: AccessRequest) =>
  decide(fields, request).allowed;
const sign = (pubkey: string, operation: SigningOperation): AccessRequest => ({
  scope: "sign",
  pubkey,
  operation,
});

describe("legacyPolicyRules: rule shapes", () => {
  test("no fields: every legacy scope, sign for every key and operation", () => {
    expect(legacyPolicyRules({})).toEqual([
      { effect: "allow", scopes: NON_SIGN_LEGACY },
      { effect: "allow", scopes: ["sign"] },
    ]);
  });

  test("all sign fields: key list, operation list, lower-cased keys", () => {
    expect(
      legacyPolicyRules({
        allowed_scopes: ["sign", "public_keys"],
        allowed_keys: [upper(K1), K2],
        allowed_signing_operations: ["ATTESTATION", "BLOCK_V2"],
      }),
    ).toEqual([
      { effect: "allow", scopes: ["public_keys"] },
      {
        effect: "allow",
        scopes: ["sign"],
        keys: [K1, K2],
        operations: ["ATTESTATION", "BLOCK_V2"],
      },
    ]);
  });

  test("denied signing operations become a deny rule on sign", () => {
    expect(legacyPolicyRules({ denied_signing_operations: ["VOLUNTARY_EXIT"] })).toEqual([
      { effect: "allow", scopes: NON_SIGN_LEGACY },
      { effect: "allow", scopes: ["sign"] },
      { effect: "deny", scopes: ["sign"], operations: ["VOLUNTARY_EXIT"] },
    ]);
  });

  test("sign not allowed: no sign rule at all", () => {
    expect(legacyPolicyRules({ denied_scopes: ["sign"], allowed_keys: [K1] })).toEqual([
      { effect: "allow", scopes: NON_SIGN_LEGACY },
    ]);
  });

  test("the rules never mention signer_status", () => {
    for (const fields of [{}, { denied_scopes: [] }, { denied_scopes: ["list_keys"] }]) {
      for (const rule of legacyPolicyRules(fields)) {
        expect(rule.scopes).not.toContain("signer_status");
      }
    }
  });

  test("names outside the legacy lists grant nothing", () => {
    expect(legacyPolicyRules({ allowed_scopes: ["signer_status", "bogus"] })).toEqual([]);
    expect(legacyPolicyRules({ allowed_signing_operations: ["BOGUS"] })).toEqual([
      { effect: "allow", scopes: NON_SIGN_LEGACY },
      { effect: "allow", scopes: ["sign"], operations: [] },
    ]);
    expect(legacyPolicyRules({ denied_signing_operations: ["BOGUS"] })).toEqual([
      { effect: "allow", scopes: NON_SIGN_LEGACY },
      { effect: "allow", scopes: ["sign"] },
    ]);
  });

  test("an auth_policies entry (with its token) is accepted as is", () => {
    // The config's own type is checked against this function where app/auth.ts calls it.
    const entry = {
      token: "0123456789abcdef-token",
      allowed_scopes: ["list_keys"],
    };
    expect(legacyPolicyRules(entry)).toEqual([{ effect: "allow", scopes: ["list_keys"] }]);
  });
});

describe("legacyPolicyRules: decisions", () => {
  test("omitting both scope lists allows every legacy scope, not signer_status", () => {
    for (const scope of NON_SIGN_LEGACY) expect(allows({}, { scope })).toBe(true);
    expect(allows({}, sign(K3, "VOLUNTARY_EXIT"))).toBe(true);
    expect(decide({}, { scope: "signer_status" })).toEqual({
      allowed: false,
      reason: "no policy allows scope signer_status",
    });
  });

  test("allowed_scopes allows only those", () => {
    const fields = { allowed_scopes: ["public_keys", "list_keys"] };
    expect(allows(fields, { scope: "public_keys" })).toBe(true);
    expect(allows(fields, { scope: "list_keys" })).toBe(true);
    for (const scope of SCOPES.filter((s) => s !== "public_keys" && s !== "list_keys")) {
      expect(allows(fields, { scope, pubkey: K1, operation: "ATTESTATION" })).toBe(false);
    }
  });

  test("denied_scopes denies those and allows the other legacy scopes", () => {
    const fields = { denied_scopes: ["sign", "delete_keys"] };
    expect(allows(fields, sign(K1, "ATTESTATION"))).toBe(false);
    expect(allows(fields, { scope: "delete_keys" })).toBe(false);
    expect(allows(fields, { scope: "import_keystores" })).toBe(true);
    expect(allows(fields, { scope: "signer_keys_list" })).toBe(true);
    expect(allows(fields, { scope: "signer_status" })).toBe(false);
  });

  test("allowed_keys restricts sign only", () => {
    const fields = { allowed_keys: [K1] };
    expect(allows(fields, sign(K1, "ATTESTATION"))).toBe(true);
    expect(allows(fields, sign(upper(K1), "ATTESTATION"))).toBe(true);
    expect(decide(fields, sign(K2, "ATTESTATION"))).toEqual({
      allowed: false,
      reason: "no policy allows scope sign for key 0xb2b2…b2b2 operation ATTESTATION",
    });
    expect(allows(fields, { scope: "public_keys", pubkey: K2 })).toBe(true);
    expect(allows(fields, { scope: "delete_keys", pubkey: K2 })).toBe(true);
  });

  test("upper-case allowed_keys match", () => {
    expect(allows({ allowed_keys: [upper(K2)] }, sign(K2, "BLOCK_V2"))).toBe(true);
  });

  test("an empty allowed_keys signs with no key", () => {
    expect(allows({ allowed_keys: [] }, sign(K1, "ATTESTATION"))).toBe(false);
    expect(allows({ allowed_keys: [] }, { scope: "list_keys" })).toBe(true);
  });

  test("allowed_signing_operations allows sign only for those", () => {
    const fields = { allowed_signing_operations: ["ATTESTATION", "AGGREGATION_SLOT"] };
    for (const op of SIGNING_OPERATIONS) {
      expect(allows(fields, sign(K1, op))).toBe(op === "ATTESTATION" || op === "AGGREGATION_SLOT");
    }
    expect(allows(fields, { scope: "list_keys" })).toBe(true);
  });

  test("denied_signing_operations denies those", () => {
    const fields = { denied_signing_operations: ["VOLUNTARY_EXIT"] };
    for (const op of SIGNING_OPERATIONS) {
      expect(allows(fields, sign(K2, op))).toBe(op !== "VOLUNTARY_EXIT");
    }
    expect(decide(fields, sign(K2, "VOLUNTARY_EXIT"))).toEqual({
      allowed: false,
      reason: 'denied by policy "legacy" rule 3',
    });
  });

  test("sign needs key AND operation allowed", () => {
    const fields = { allowed_keys: [K1], allowed_signing_operations: ["BLOCK_V2"] };
    expect(allows(fields, sign(K1, "BLOCK_V2"))).toBe(true);
    expect(allows(fields, sign(K1, "ATTESTATION"))).toBe(false);
    expect(allows(fields, sign(K2, "BLOCK_V2"))).toBe(false);
    const denying = { allowed_keys: [K1], denied_signing_operations: ["BLOCK_V2"] };
    expect(allows(denying, sign(K1, "ATTESTATION"))).toBe(true);
    expect(allows(denying, sign(K1, "BLOCK_V2"))).toBe(false);
    expect(allows(denying, sign(K2, "ATTESTATION"))).toBe(false);
  });

  test("unauthenticated_policy shape: a read-only anonymous policy", () => {
    const anonymous: LegacyPolicyFields = { allowed_scopes: ["public_keys"] };
    expect(allows(anonymous, { scope: "public_keys" })).toBe(true);
    expect(allows(anonymous, sign(K1, "ATTESTATION"))).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// Reference model: a direct reading of the spec's "Legacy policy map", independent of the rules.

function referenceAllows(policy: LegacyPolicyFields, request: AccessRequest): boolean {
  // Scopes. "Omitting both allowed_scopes and denied_scopes allows all routes" — the legacy
  // scope list, which has no signer_status.
  const isLegacyScope = request.scope !== "signer_status";
  let scopeAllowed: boolean;
  if (policy.allowed_scopes) scopeAllowed = policy.allowed_scopes.includes(request.scope);
  else if (policy.denied_scopes)
    scopeAllowed = isLegacyScope && !policy.denied_scopes.includes(request.scope);
  else scopeAllowed = isLegacyScope;
  if (!scopeAllowed) return false;
  // Keys and operations are about signing only.
  if (request.scope !== "sign") return true;
  // "Omitted means all loaded keys (sign scope only)."
  let keyAllowed = true;
  if (policy.allowed_keys) {
    const key = request.pubkey?.toLowerCase();
    keyAllowed = policy.allowed_keys.some((k) => k.toLowerCase() === key);
  }
  // "Omitting both signing-operation lists allows all operations."
  let operationAllowed = true;
  const operation = request.operation;
  if (policy.allowed_signing_operations) {
    operationAllowed =
      operation !== undefined && policy.allowed_signing_operations.includes(operation);
  } else if (policy.denied_signing_operations && operation !== undefined) {
    operationAllowed = !policy.denied_signing_operations.includes(operation);
  }
  return keyAllowed && operationAllowed;
}

const KEY_POOL = [K1, K2, K3];
const keyArb = fc
  .tuple(fc.constantFrom(...KEY_POOL), fc.boolean())
  .map(([key, up]) => (up ? upper(key) : key));

/** Valid configs only: at most one list of each allowed/denied pair (startup rejects both). */
const legacyArb: fc.Arbitrary<LegacyPolicyFields> = fc
  .record({
    scopes: fc.option(fc.tuple(fc.boolean(), fc.subarray([...LEGACY_SCOPES] as string[])), {
      nil: undefined,
    }),
    keys: fc.option(fc.uniqueArray(keyArb, { maxLength: 3 }), { nil: undefined }),
    operations: fc.option(
      fc.tuple(fc.boolean(), fc.subarray([...SIGNING_OPERATIONS] as string[])),
      { nil: undefined },
    ),
  })
  .map(({ scopes, keys, operations }) => {
    const fields: {
      allowed_scopes?: string[];
      denied_scopes?: string[];
      allowed_keys?: string[];
      allowed_signing_operations?: string[];
      denied_signing_operations?: string[];
    } = {};
    if (scopes) fields[scopes[0] ? "allowed_scopes" : "denied_scopes"] = scopes[1];
    if (keys) fields.allowed_keys = keys;
    if (operations) {
      fields[operations[0] ? "allowed_signing_operations" : "denied_signing_operations"] =
        operations[1];
    }
    return fields;
  });

const requestArb: fc.Arbitrary<AccessRequest> = fc.record(
  {
    scope: fc.constantFrom<Scope>(...SCOPES),
    pubkey: keyArb,
    operation: fc.constantFrom<SigningOperation>(...SIGNING_OPERATIONS),
  },
  { requiredKeys: ["scope"] },
);

describe("legacyPolicyRules: reference model", () => {
  test("evaluating the translated rules equals the direct reading of the legacy fields", () => {
    fc.assert(
      fc.property(legacyArb, requestArb, (fields, request) => {
        expect(allows(fields, request)).toBe(referenceAllows(fields, request));
      }),
      { numRuns: 5000 },
    );
  });

  test("the same on sign requests with a full key and operation (the common case)", () => {
    fc.assert(
      fc.property(legacyArb, keyArb, fc.constantFrom(...SIGNING_OPERATIONS), (fields, key, op) => {
        expect(allows(fields, sign(key, op))).toBe(referenceAllows(fields, sign(key, op)));
      }),
      { numRuns: 3000 },
    );
  });
});
