/**
 * The Gloas signing operations in access control: a policy can name each one to allow or deny
 * it, a rule that names no operation covers them, and a list of operations written before them
 * does not (docs/auth.md says so to operators).
 */
import { describe, expect, test } from "bun:test";
import { checkShape } from "../wire/check";
import type { SigningOperation } from "../wire/operations";
import { legacyPolicyRules } from "./legacy";
import { evaluate } from "./policy";
import { RulesSchema } from "./schema";
import type { Policy } from "./types";

const KEY = `0x${"a1".repeat(48)}`;
const GLOAS: SigningOperation[] = [
  "PAYLOAD_ATTESTATION_MESSAGE",
  "EXECUTION_PAYLOAD_ENVELOPE",
  "PROPOSER_PREFERENCES",
  "EXECUTION_PAYLOAD_BID",
  "BUILDER_REQUEST_AUTH",
];
const allowed = (policies: Policy[], operation: SigningOperation) =>
  evaluate(policies, { scope: "sign", pubkey: KEY, operation }).allowed;

describe("Gloas operations in policies", () => {
  test("a rule may name each of them; an alias is not an operation name", () => {
    const rules = [{ effect: "deny", operations: GLOAS }];
    expect(checkShape(RulesSchema, rules).ok).toBe(true);
    const alias = checkShape(RulesSchema, [
      { effect: "deny", operations: ["PAYLOAD_ATTESTATION"] },
    ]);
    expect(alias.ok).toBe(false);
  });

  test("a sign grant without operations covers them; a deny of one refuses only it", () => {
    const policies: Policy[] = [
      {
        name: "vc",
        rules: [
          { effect: "allow", scopes: ["sign"], keys: [KEY] },
          { effect: "deny", operations: ["EXECUTION_PAYLOAD_BID"] },
        ],
      },
    ];
    for (const operation of GLOAS) {
      expect(allowed(policies, operation), operation).toBe(operation !== "EXECUTION_PAYLOAD_BID");
    }
  });

  test("an operation list written before Gloas does not grant them until they are added", () => {
    const before: Policy[] = [
      {
        name: "old",
        rules: [{ effect: "allow", scopes: ["sign"], operations: ["ATTESTATION", "BLOCK_V2"] }],
      },
    ];
    for (const operation of GLOAS) expect(allowed(before, operation), operation).toBe(false);
    const legacy: Policy[] = [
      { name: "legacy", rules: legacyPolicyRules({ allowed_signing_operations: ["ATTESTATION"] }) },
    ];
    expect(allowed(legacy, "PAYLOAD_ATTESTATION_MESSAGE")).toBe(false);
    const legacyDeny: Policy[] = [
      {
        name: "legacy",
        rules: legacyPolicyRules({ denied_signing_operations: ["VOLUNTARY_EXIT"] }),
      },
    ];
    expect(allowed(legacyDeny, "PAYLOAD_ATTESTATION_MESSAGE")).toBe(true);
  });
});
