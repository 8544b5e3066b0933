import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AuthAdminService } from "../../src/auth/admin";
import { PolicyRequest, TokenRequest } from "../../src/auth/schema";
import { openSqliteState } from "../../src/state/sqlite";
import type { SignerStateStore } from "../../src/state/store";
import { checkShape, describeProblem } from "../../src/wire/check";
import { errorOf } from "../support/errors";

const MEGABYTE = "x".repeat(1 << 20);
let store: SignerStateStore;
let admin: AuthAdminService;

beforeAll(async () => {
  store = await openSqliteState(":memory:");
  admin = new AuthAdminService(store);
  await admin.createPolicy({ name: "vc", rules: [{ effect: "allow", scopes: ["sign"] }] });
});
afterAll(() => store.close());

/** A refusal names the client's value in part: a megabyte-long value is not sent back whole. */
describe("refusals quote a client's long value in part", () => {
  test("an unknown scope, operation or key in a rule", () => {
    for (const [rule, where] of [
      [{ effect: "allow", scopes: [MEGABYTE] }, "rules[0].scopes[0]"],
      [{ effect: "allow", operations: [MEGABYTE] }, "rules[0].operations[0]"],
      [{ effect: "allow", keys: [MEGABYTE] }, "rules[0].keys[0]"],
    ] as const) {
      const checked = checkShape(PolicyRequest, { name: "p", rules: [rule] });
      if (checked.ok) throw new Error("a megabyte-long name was accepted");
      expect(checked.where).toBe(where);
      const message = describeProblem(checked);
      expect(message).toContain('"xxxxxxxx');
      expect(message.length).toBeLessThan(200);
    }
  });

  test("an unknown policy or a bad CIDR in a token request", async () => {
    const unknown = await errorOf(admin.createToken({ policies: [MEGABYTE], ttl_seconds: 60 }));
    expect(unknown.code).toBe("invalid_request");
    expect(unknown.message.length).toBeLessThan(200);
    const cidr = checkShape(TokenRequest, {
      policies: ["vc"],
      ttl_seconds: 60,
      token_bound_cidrs: [MEGABYTE],
    });
    if (cidr.ok) throw new Error("a megabyte-long CIDR was accepted");
    expect(cidr.where).toBe("token_bound_cidrs[0]");
    expect(cidr.problem).toStartWith('invalid CIDR "xxx');
    expect(cidr.problem.length).toBeLessThan(200);
  });

  test("an update naming a policy no policy can have is refused as a bad name", async () => {
    const refused = await errorOf(admin.updatePolicy("no spaces allowed", { rules: [] }));
    expect(refused.code).toBe("invalid_request");
    expect(refused.message).toStartWith("name: must be 1-64 characters");
  });

  test("an unknown policy name or token accessor from the path", async () => {
    for (const refusal of [
      await errorOf(admin.getPolicy(MEGABYTE)),
      await errorOf(admin.deletePolicy(MEGABYTE)),
      await errorOf(admin.revokeToken(MEGABYTE)),
    ]) {
      expect(["policy_not_found", "token_not_found"]).toContain(refusal.code);
      expect(refusal.message.length).toBeLessThan(200);
    }
  });

  test("a short value is quoted whole", async () => {
    expect((await errorOf(admin.getPolicy("nope"))).message).toBe('no policy named "nope"');
  });
});
