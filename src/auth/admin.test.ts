import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorOf } from "../../test/support/errors";
import { openSqliteState } from "../state/sqlite";
import type { SignerStateStore } from "../state/store";
import { AuthAdminService, parsePolicy } from "./admin";

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
    for (const rule of [
      { effect: "allow", scopes: [MEGABYTE] },
      { effect: "allow", operations: [MEGABYTE] },
      { effect: "allow", keys: [MEGABYTE] },
    ]) {
      let message = "";
      try {
        parsePolicy({ name: "p", rules: [rule] });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toContain('"xxxxxxxx');
      expect(message.length).toBeLessThan(200);
    }
  });

  test("an unknown policy or a bad CIDR in a token request", async () => {
    const unknown = await errorOf(admin.createToken({ policies: [MEGABYTE], ttl_seconds: 60 }));
    expect(unknown.code).toBe("invalid_request");
    expect(unknown.message.length).toBeLessThan(200);
    const cidr = await errorOf(
      admin.createToken({ policies: ["vc"], ttl_seconds: 60, token_bound_cidrs: [MEGABYTE] }),
    );
    expect(cidr.message).toStartWith('invalid CIDR "xxx');
    expect(cidr.message.length).toBeLessThan(200);
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
