import { describe, expect, test } from "bun:test";
import { errorOf } from "../../test/support/errors";
import { keyAccess, type Principal } from "./authenticator";
import { scopeReachable } from "./policy";
import type { Policy } from "./types";

const A = `0x${"aa".repeat(48)}`;
const B = `0x${"bb".repeat(48)}`;
const as = (...rules: Policy["rules"]): Principal => ({
  kind: "policies",
  label: "test",
  policies: [{ name: "p", rules }],
});

describe("scopeReachable: whether a key route can be reached at all", () => {
  test("a grant for every key, or for some keys, reaches it; none, or one denied for all, does not", () => {
    const reach = (rules: Policy["rules"]) => scopeReachable([{ name: "p", rules }], "delete_keys");
    expect(reach([{ effect: "allow", scopes: ["delete_keys"] }])).toBe(true);
    expect(reach([{ effect: "allow", scopes: ["delete_keys"], keys: [A] }])).toBe(true);
    expect(reach([{ effect: "allow", keys: [A] }])).toBe(true);
    expect(reach([{ effect: "allow", scopes: ["list_keys"] }])).toBe(false);
    expect(reach([{ effect: "allow", scopes: ["delete_keys"], operations: ["ATTESTATION"] }])).toBe(
      false,
    );
    expect(
      reach([
        { effect: "allow", scopes: ["delete_keys"], keys: [A] },
        { effect: "deny", scopes: ["delete_keys"] },
      ]),
    ).toBe(false);
  });
});

describe("keyAccess: a key the caller may not list, it may not act on", () => {
  test("the route's scope and the listing scope must both allow the key", () => {
    const access = keyAccess(
      as(
        { effect: "allow", scopes: ["list_keys", "delete_keys"] },
        { effect: "deny", scopes: ["list_keys"], keys: [B] },
      ),
      "delete_keys",
      "list_keys",
    );
    expect(access.refusal(A)).toBeUndefined();
    expect(access.refusal(B)).toBe('scope list_keys: denied by policy "p" rule 2');
  });

  test("the listing route checks its own scope once", () => {
    const access = keyAccess(
      as({ effect: "allow", scopes: ["list_keys"], keys: [A] }),
      "list_keys",
      "list_keys",
    );
    expect(access.refusal(A)).toBeUndefined();
    expect(access.refusal(B)).toBe(`no policy allows scope list_keys for key 0xbbbb…bbbb`);
  });

  test("no grant for the scope at all: 403 before any key is looked at", async () => {
    const refused = await errorOf(
      (async () =>
        keyAccess(as({ effect: "allow", scopes: ["sign"] }), "delete_keys", "list_keys"))(),
    );
    expect(refused.code).toBe("forbidden");
    expect(refused.message).toBe("no policy allows scope delete_keys");
  });

  test("an unrestricted caller (no auth, the management token) may act on every key", () => {
    const access = keyAccess(
      { kind: "unrestricted", management: false },
      "delete_keys",
      "list_keys",
    );
    expect(access.refusal(B)).toBeUndefined();
  });
});
