// The signer_state contract (src/state/store.ts), run against every backend: sqlite.test.ts,
// postgres.test.ts, dynamodb.test.ts. `storage()` must make new, empty storage (a file, a schema,
// a table) on every call and return how to open a store on it; the backend declares whether two
// stores opened there share it, and the suite holds it to that either way.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { hashToken, newToken } from "../../src/auth/tokens";
import type { Policy, Rule } from "../../src/auth/types";
import { MAX_SEAL_BODY_BYTES, SealBodyError, TokenConflictError } from "../../src/state/codec";
import type { SignerStateStore, TokenRecord } from "../../src/state/store";

const KEY_A = `0x${"a1".repeat(48)}`;
const KEY_B = `0x${"b2".repeat(48)}`;

/**
 * A seal-record-like JSON text of about `bytes` UTF-8 bytes (never more), with non-ASCII text and
 * deliberate formatting (spacing, key order) that must survive the round trip byte for byte.
 */
export function sealBody(tag: string, bytes = 2_000): string {
  const operator = (i: number) =>
    `{"id": "operator-${i}",  "wrap": "age:Grüße-東京-🔐", "wrappedShare": "${"QUJD".repeat(40)}"}`;
  const head = `{ "tag": ${JSON.stringify(tag)},\n  "z": 1, "a": "ü\\u00e9",\n  "operators": [`;
  const parts: string[] = [];
  let size = Buffer.byteLength(head) + 4;
  for (let i = 1; ; i++) {
    const next = Buffer.byteLength(operator(i)) + 2;
    if (size + next > bytes && parts.length > 0) break;
    parts.push(operator(i));
    size += next;
  }
  return `${head}${parts.join(", ")}] }\n`;
}

/** The body of the one write of a race that returned true (the caller checked there is one). */
export function winnerOf(bodies: readonly string[], results: readonly boolean[]): string {
  const winner = bodies[results.indexOf(true)];
  if (winner === undefined) throw new Error("no writer won the race");
  return winner;
}

/** A 64-hex-digit SHA-256, as the store expects (never a token value). */
export const hashOf = (seed: string): string => createHash("sha256").update(seed).digest("hex");

export function tokenRecord(seed: string, fields: Partial<TokenRecord> = {}): TokenRecord {
  return {
    accessor: `acc-${seed}`,
    hash: hashOf(seed),
    kind: "client",
    policies: ["signers"],
    cidrs: ["10.0.0.0/8", "2001:db8::/32"],
    createdAt: 1_700_000_000_000,
    expiresAt: 1_800_000_000_000,
    ...fields,
  };
}

/** A record without `expiresAt` at all (not even as undefined). */
export function managementRecord(seed: string, createdAt = 1_700_000_000_000): TokenRecord {
  return {
    accessor: `acc-${seed}`,
    hash: hashOf(seed),
    kind: "management",
    policies: [],
    cidrs: [],
    createdAt,
  };
}

/** Opens a store on one storage; every call opens another store on the same one. */
export type StateOpener = () => Promise<SignerStateStore>;

export interface SignerStateCapabilities {
  /**
   * Stores opened on one storage (several signer processes on one file, database or table) see
   * each other's writes, and consume and the seal's compare-and-set hold across them. False for
   * an in-memory database, which each store has to itself.
   */
  readonly shared: boolean;
}

export function signerStateConformanceSuite(
  name: string,
  storage: () => Promise<StateOpener>,
  capabilities: SignerStateCapabilities,
): void {
  describe(`signer_state conformance: ${name}`, () => {
    const opened: SignerStateStore[] = [];
    const track = async (store: Promise<SignerStateStore>): Promise<SignerStateStore> => {
      opened.push(await store);
      return store;
    };
    const fresh = async (): Promise<SignerStateStore> => track((await storage())());
    /** Two stores on one new storage, as two signer processes would open them. */
    const twoOnOneStorage = async (): Promise<[SignerStateStore, SignerStateStore]> => {
      const open = await storage();
      return [await track(open()), await track(open())];
    };
    afterAll(async () => {
      await Promise.all(opened.map((s) => s.close().catch(() => {})));
    });

    test("a fresh store is empty and answers ping", async () => {
      const store = await fresh();
      expect(["sqlite", "postgres", "dynamodb"]).toContain(store.backend);
      await store.ping();
      expect(await store.listPolicies()).toEqual([]);
      expect(await store.listTokens()).toEqual([]);
      expect(await store.getPolicy("nope")).toBeUndefined();
      expect(await store.findToken(hashOf("nope"))).toBeUndefined();
    });

    describe("policies", () => {
      const allow: Policy = { name: "signers", rules: [{ effect: "allow", scopes: ["sign"] }] };

      test("create, create again → false and unchanged", async () => {
        const store = await fresh();
        expect(await store.createPolicy(allow)).toBe(true);
        expect(await store.createPolicy({ name: "signers", rules: [{ effect: "deny" }] })).toBe(
          false,
        );
        expect(await store.getPolicy("signers")).toStrictEqual(allow);
        expect(await store.listPolicies()).toStrictEqual([allow]);
      });

      test("update of a missing policy → false and nothing created", async () => {
        const store = await fresh();
        expect(await store.updatePolicy(allow)).toBe(false);
        expect(await store.getPolicy("signers")).toBeUndefined();
        expect(await store.listPolicies()).toEqual([]);
      });

      test("update replaces the rules entirely", async () => {
        const store = await fresh();
        await store.createPolicy({
          name: "p",
          rules: [
            { effect: "allow", scopes: ["sign"], keys: [KEY_A] },
            { effect: "deny", operations: ["VOLUNTARY_EXIT"] },
          ],
        });
        const replaced: Policy = { name: "p", rules: [{ effect: "allow", scopes: ["list_keys"] }] };
        expect(await store.updatePolicy(replaced)).toBe(true);
        expect(await store.getPolicy("p")).toStrictEqual(replaced);
        const emptied: Policy = { name: "p", rules: [] };
        expect(await store.updatePolicy(emptied)).toBe(true);
        expect(await store.getPolicy("p")).toStrictEqual(emptied);
      });

      test("list is sorted by name (code point order), whatever the insertion order", async () => {
        const store = await fresh();
        const names = ["b", "a_1", "B", "a", "a-1", "aa", "Z9", "0"];
        for (const n of names) {
          expect(await store.createPolicy({ name: n, rules: [{ effect: "allow" }] })).toBe(true);
        }
        const listed = (await store.listPolicies()).map((p) => p.name);
        expect(listed).toEqual(["0", "B", "Z9", "a", "a-1", "a_1", "aa", "b"]);
      });

      test("delete: true once, then false; gone from get and list", async () => {
        const store = await fresh();
        await store.createPolicy(allow);
        await store.createPolicy({ name: "other", rules: [] });
        expect(await store.deletePolicy("signers")).toBe(true);
        expect(await store.deletePolicy("signers")).toBe(false);
        expect(await store.deletePolicy("never-was")).toBe(false);
        expect(await store.getPolicy("signers")).toBeUndefined();
        expect((await store.listPolicies()).map((p) => p.name)).toEqual(["other"]);
        // The name is free again.
        expect(await store.createPolicy(allow)).toBe(true);
      });

      test("rules round-trip exactly: optional fields absent stay absent, empty stay empty", async () => {
        const store = await fresh();
        const rules: Rule[] = [
          { effect: "allow" },
          { effect: "deny", scopes: [] },
          {
            effect: "allow",
            scopes: ["sign", "public_keys", "signer_status"],
            keys: [KEY_A, KEY_B],
            operations: ["ATTESTATION", "BLOCK_V2"],
          },
          { effect: "deny", keys: [KEY_B] },
          { effect: "allow", operations: [] },
          { effect: "deny", scopes: ["delete_keys"], operations: ["VOLUNTARY_EXIT"] },
        ];
        const policy: Policy = { name: "everything", rules };
        await store.createPolicy(policy);
        const back = await store.getPolicy("everything");
        expect(back).toStrictEqual(policy);
        const [first, second] = back?.rules ?? [];
        expect(first === undefined ? [] : Object.keys(first)).toEqual(["effect"]);
        expect(second?.scopes).toEqual([]);
        expect(second !== undefined && "keys" in second).toBe(false);
        expect(await store.listPolicies()).toStrictEqual([policy]);
      });

      test("a field set to undefined is stored as absent", async () => {
        const store = await fresh();
        await store.createPolicy({
          name: "u",
          rules: [{ effect: "allow", scopes: undefined, keys: [KEY_A], operations: undefined }],
        });
        const rule = (await store.getPolicy("u"))?.rules[0];
        expect(rule).toStrictEqual({ effect: "allow", keys: [KEY_A] });
        expect(rule !== undefined && "scopes" in rule).toBe(false);
      });

      test("malformed policies are refused and nothing is written", async () => {
        const store = await fresh();
        const bad = [
          { name: "", rules: [] },
          { name: "x", rules: [{ effect: "maybe" }] },
          { name: "x", rules: [{ effect: "allow", scopes: ["no_such_scope"] }] },
          { name: "x", rules: [{ effect: "allow", operations: ["NOT_AN_OP"] }] },
          { name: "x", rules: "not an array" },
        ] as unknown as Policy[];
        for (const policy of bad) {
          await expect(store.createPolicy(policy)).rejects.toThrow(TypeError);
        }
        expect(await store.listPolicies()).toEqual([]);
      });

      test("of concurrent creates of one name exactly one succeeds", async () => {
        const store = await fresh();
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.createPolicy({
              name: "race",
              rules: [{ effect: "allow", keys: [`0x${String(i).padStart(96, "0")}`] }],
            }),
          ),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.listPolicies()).toHaveLength(1);
      });
    });

    describe("tokens", () => {
      test("create, find (exactly the record), unknown hash → undefined", async () => {
        const store = await fresh();
        const client = tokenRecord("one");
        const management = managementRecord("root");
        await store.createToken(client);
        await store.createToken(management);
        expect(await store.findToken(client.hash)).toStrictEqual(client);
        const found = await store.findToken(management.hash);
        expect(found).toStrictEqual(management);
        expect(found !== undefined && "expiresAt" in found).toBe(false);
        expect(await store.findToken(hashOf("other"))).toBeUndefined();
      });

      test("all kinds, empty and non-empty lists round-trip", async () => {
        const store = await fresh();
        const records = [
          tokenRecord("c", { policies: [], cidrs: [] }),
          tokenRecord("s", { kind: "setup", policies: [], cidrs: [], createdAt: 1 }),
          tokenRecord("m", { kind: "management", policies: ["a", "b"], cidrs: [] }),
          tokenRecord("v6", { cidrs: ["::1/128"], policies: ["x", "y", "z"], expiresAt: 0 }),
        ];
        for (const r of records) await store.createToken(r);
        for (const r of records) expect(await store.findToken(r.hash)).toStrictEqual(r);
      });

      test("list is sorted by creation time", async () => {
        const store = await fresh();
        const t3 = tokenRecord("t3", { createdAt: 3000 });
        const t1 = tokenRecord("t1", { createdAt: 1000 });
        const t2 = managementRecord("t2", 2000);
        const t4 = tokenRecord("t4", { createdAt: 1_800_000_000_000 });
        for (const r of [t3, t1, t4, t2]) await store.createToken(r);
        expect(await store.listTokens()).toStrictEqual([t1, t2, t3, t4]);
      });

      test("revoke: true once, then find → undefined and revoke → false", async () => {
        const store = await fresh();
        const keep = tokenRecord("keep");
        const gone = tokenRecord("gone");
        await store.createToken(keep);
        await store.createToken(gone);
        expect(await store.revokeToken(gone.accessor)).toBe(true);
        expect(await store.findToken(gone.hash)).toBeUndefined();
        expect(await store.revokeToken(gone.accessor)).toBe(false);
        expect(await store.revokeToken("acc-never-was")).toBe(false);
        expect(await store.consumeToken(gone.hash)).toBeUndefined();
        expect(await store.listTokens()).toStrictEqual([keep]);
        expect(await store.findToken(keep.hash)).toStrictEqual(keep);
      });

      test("duplicate accessor or hash is rejected and changes nothing", async () => {
        const store = await fresh();
        const original = tokenRecord("orig");
        await store.createToken(original);
        const sameAccessor = tokenRecord("other-hash", { accessor: original.accessor });
        const sameHash = tokenRecord("orig", { accessor: "acc-other" });
        await expect(store.createToken(sameAccessor)).rejects.toThrow(TokenConflictError);
        await expect(store.createToken(sameHash)).rejects.toThrow(TokenConflictError);
        await expect(store.createToken(original)).rejects.toThrow(TokenConflictError);
        expect(await store.listTokens()).toStrictEqual([original]);
        expect(await store.findToken(sameAccessor.hash)).toBeUndefined();
        expect(await store.revokeToken("acc-other")).toBe(false);
        expect(await store.findToken(original.hash)).toStrictEqual(original);
        // What the refused tokens did not take is still free.
        const later = tokenRecord("later", { accessor: "acc-other" });
        await store.createToken(later);
        expect(await store.findToken(later.hash)).toStrictEqual(later);
        // The accessor of a revoked token is free again too.
        expect(await store.revokeToken(original.accessor)).toBe(true);
        const reuse = tokenRecord("reuse", { accessor: original.accessor });
        await store.createToken(reuse);
        expect(await store.revokeToken(original.accessor)).toBe(true);
        expect(await store.listTokens()).toStrictEqual([later]);
      });

      test("malformed token records are refused and nothing is written", async () => {
        const store = await fresh();
        const bad: TokenRecord[] = [
          tokenRecord("a", { hash: "ABC" }),
          tokenRecord("b", { hash: hashOf("b").toUpperCase() }),
          tokenRecord("c", { accessor: "" }),
          tokenRecord("d", { kind: "root" as TokenRecord["kind"] }),
          tokenRecord("e", { createdAt: Number.NaN }),
          tokenRecord("f", { expiresAt: 1.5 }),
          tokenRecord("g", { kind: "management", cidrs: ["10.0.0.0/8"] }),
        ];
        for (const record of bad) {
          await expect(store.createToken(record)).rejects.toThrow(TypeError);
        }
        expect(await store.listTokens()).toEqual([]);
      });

      test("expiry cleanup removes only tokens expired at or before now", async () => {
        const store = await fresh();
        const now = 1_750_000_000_000;
        const past = tokenRecord("past", { expiresAt: now - 1, createdAt: 1 });
        const exact = tokenRecord("exact", { expiresAt: now, createdAt: 2 });
        const future = tokenRecord("future", { expiresAt: now + 1, createdAt: 3 });
        const never = managementRecord("never", 4);
        for (const r of [past, exact, future, never]) await store.createToken(r);
        expect(await store.deleteExpiredTokens(now)).toBe(2);
        expect(await store.listTokens()).toStrictEqual([future, never]);
        expect(await store.findToken(past.hash)).toBeUndefined();
        expect(await store.revokeToken(exact.accessor)).toBe(false);
        expect(await store.deleteExpiredTokens(now)).toBe(0);
        expect(await store.deleteExpiredTokens(Number.MAX_SAFE_INTEGER)).toBe(1);
        expect(await store.listTokens()).toStrictEqual([never]);
        // An accessor freed by expiry can be used again.
        await store.createToken(tokenRecord("again", { accessor: past.accessor }));
      });

      test("consumeToken: returns the record once, then it is gone", async () => {
        const store = await fresh();
        const setup = tokenRecord("setup", { kind: "setup", policies: [], cidrs: [] });
        await store.createToken(setup);
        expect(await store.consumeToken(hashOf("unknown"))).toBeUndefined();
        expect(await store.consumeToken(setup.hash)).toStrictEqual(setup);
        expect(await store.consumeToken(setup.hash)).toBeUndefined();
        expect(await store.findToken(setup.hash)).toBeUndefined();
        expect(await store.revokeToken(setup.accessor)).toBe(false);
        expect(await store.listTokens()).toEqual([]);
        // Accessor and hash are both free again.
        await store.createToken(setup);
        expect(await store.findToken(setup.hash)).toStrictEqual(setup);
      });

      test("consumeToken under concurrency: 20 parallel consumers, exactly one gets it", async () => {
        const store = await fresh();
        for (let round = 0; round < 3; round++) {
          const record = tokenRecord(`race-${round}`, { kind: "setup", cidrs: [] });
          await store.createToken(record);
          const results = await Promise.all(
            Array.from({ length: 20 }, () => store.consumeToken(record.hash)),
          );
          const winners = results.filter((r) => r !== undefined);
          expect(winners).toHaveLength(1);
          expect(winners[0]).toStrictEqual(record);
        }
        expect(await store.listTokens()).toEqual([]);
      });

      test("consume and revoke racing on one token: exactly one of them takes it", async () => {
        const store = await fresh();
        const record = tokenRecord("contended");
        await store.createToken(record);
        const [consumed, revoked] = await Promise.all([
          store.consumeToken(record.hash),
          store.revokeToken(record.accessor),
        ]);
        expect((consumed === undefined ? 0 : 1) + (revoked ? 1 : 0)).toBe(1);
        expect(await store.listTokens()).toEqual([]);
      });
    });

    describe("seal record", () => {
      test("absent → undefined; a replace of an absent record → false, still absent", async () => {
        const store = await fresh();
        expect(await store.getSeal()).toBeUndefined();
        expect(await store.putSeal(sealBody("x"), 1)).toBe(false);
        expect(await store.getSeal()).toBeUndefined();
      });

      test("create → version 1 and the body back byte for byte; create again → false, unchanged", async () => {
        const store = await fresh();
        const body = sealBody("first");
        expect(await store.putSeal(body, undefined)).toBe(true);
        expect(await store.getSeal()).toStrictEqual({ body, version: 1 });
        expect(await store.putSeal(sealBody("second"), undefined)).toBe(false);
        expect(await store.getSeal()).toStrictEqual({ body, version: 1 });
      });

      test("a ~150 KB body with non-ASCII text round-trips exactly", async () => {
        const store = await fresh();
        const body = sealBody("big", 150_000);
        expect(Buffer.byteLength(body)).toBeGreaterThan(140_000);
        expect(body).toContain("東京-🔐");
        expect(await store.putSeal(body, undefined)).toBe(true);
        const back = await store.getSeal();
        expect(back?.version).toBe(1);
        expect(back?.body === body).toBe(true);
        const replaced = sealBody("big-2", 150_000);
        expect(await store.putSeal(replaced, 1)).toBe(true);
        expect((await store.getSeal())?.body === replaced).toBe(true);
      });

      test("a body of exactly MAX_SEAL_BODY_BYTES is accepted (the limit is the same everywhere)", async () => {
        const store = await fresh();
        const body = `"${"é".repeat((MAX_SEAL_BODY_BYTES - 2) / 2)}"`;
        expect(Buffer.byteLength(body)).toBe(MAX_SEAL_BODY_BYTES);
        expect(await store.putSeal(body, undefined)).toBe(true);
        expect((await store.getSeal())?.body === body).toBe(true);
      });

      test("replace: right version → +1; stale or future version → false, unchanged", async () => {
        const store = await fresh();
        const v1 = sealBody("v1");
        const v2 = sealBody("v2");
        const v3 = sealBody("v3");
        await store.putSeal(v1, undefined);
        expect(await store.putSeal(v2, 1)).toBe(true);
        expect(await store.getSeal()).toStrictEqual({ body: v2, version: 2 });
        expect(await store.putSeal(sealBody("stale"), 1)).toBe(false);
        expect(await store.putSeal(sealBody("future"), 3)).toBe(false);
        expect(await store.putSeal(sealBody("create"), undefined)).toBe(false);
        expect(await store.getSeal()).toStrictEqual({ body: v2, version: 2 });
        expect(await store.putSeal(v3, 2)).toBe(true);
        expect(await store.getSeal()).toStrictEqual({ body: v3, version: 3 });
        // The same body again is still a new version.
        expect(await store.putSeal(v3, 3)).toBe(true);
        expect(await store.getSeal()).toStrictEqual({ body: v3, version: 4 });
      });

      test("10 concurrent replaces with the same version: exactly one wins, and its body is stored", async () => {
        const store = await fresh();
        await store.putSeal(sealBody("base"), undefined);
        for (let round = 1; round <= 3; round++) {
          const bodies = Array.from({ length: 10 }, (_, i) => sealBody(`r${round}-w${i}`));
          const results = await Promise.all(bodies.map((b) => store.putSeal(b, round)));
          expect(results.filter(Boolean)).toHaveLength(1);
          const winner = winnerOf(bodies, results);
          expect(await store.getSeal()).toStrictEqual({ body: winner, version: round + 1 });
        }
      });

      test("10 concurrent creates: exactly one wins, and its body is stored", async () => {
        const store = await fresh();
        const bodies = Array.from({ length: 10 }, (_, i) => sealBody(`c${i}`));
        const results = await Promise.all(bodies.map((b) => store.putSeal(b, undefined)));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.getSeal()).toStrictEqual({
          body: winnerOf(bodies, results),
          version: 1,
        });
      });

      test("oversize and non-JSON bodies are refused before writing; nothing changes", async () => {
        const store = await fresh();
        const refused = [
          `"${"a".repeat(MAX_SEAL_BODY_BYTES - 1)}"`, // one byte over
          `"${"é".repeat(MAX_SEAL_BODY_BYTES / 2)}"`, // under the limit in characters, over in bytes
          "",
          " ",
          "{",
          "{a: 1}",
          "{'a': 1}",
          "[1,]",
          "undefined",
          "NaN",
          '{"a": 1} trailing',
          '"\ud800"', // a lone surrogate: JSON.parse takes it, UTF-8 cannot hold it
          42 as unknown as string,
        ];
        for (const body of refused) {
          await expect(store.putSeal(body, undefined)).rejects.toThrow(SealBodyError);
        }
        expect(await store.getSeal()).toBeUndefined();
        const kept = sealBody("kept");
        await store.putSeal(kept, undefined);
        for (const body of refused) {
          await expect(store.putSeal(body, 1)).rejects.toThrow(SealBodyError);
        }
        await expect(store.putSeal(`"${"a".repeat(MAX_SEAL_BODY_BYTES)}"`, 1)).rejects.toThrow(
          `${MAX_SEAL_BODY_BYTES} bytes`,
        );
        await expect(store.putSeal("{", 1)).rejects.toThrow(/not valid JSON/);
        expect(await store.getSeal()).toStrictEqual({ body: kept, version: 1 });
      });

      test("an expectedVersion that no record can have is a caller error", async () => {
        const store = await fresh();
        await store.putSeal(sealBody("v1"), undefined);
        for (const version of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
          await expect(store.putSeal(sealBody("bad"), version)).rejects.toThrow(TypeError);
        }
        expect((await store.getSeal())?.version).toBe(1);
      });

      test("the seal record and policies/tokens do not disturb each other", async () => {
        const store = await fresh();
        const policy: Policy = { name: "seal", rules: [{ effect: "allow" }] };
        const token = tokenRecord("seal", { expiresAt: 5 });
        const management = managementRecord("root", 1_700_000_000_001);
        await store.createPolicy(policy);
        await store.createToken(token);
        const body = sealBody("state");
        await store.putSeal(body, undefined);
        await store.createToken(management);
        expect(await store.listPolicies()).toStrictEqual([policy]);
        expect(await store.listTokens()).toStrictEqual([token, management]);
        expect(await store.getPolicy("seal")).toStrictEqual(policy);
        expect(await store.deleteExpiredTokens(10)).toBe(1);
        expect(await store.consumeToken(management.hash)).toStrictEqual(management);
        expect(await store.deletePolicy("seal")).toBe(true);
        expect(await store.listPolicies()).toEqual([]);
        expect(await store.listTokens()).toEqual([]);
        expect(await store.getSeal()).toStrictEqual({ body, version: 1 });
        expect(await store.putSeal(body, 1)).toBe(true);
        expect(await store.listPolicies()).toEqual([]);
        expect(await store.listTokens()).toEqual([]);
      });

      test("a closed store refuses seal reads and writes", async () => {
        const store = await fresh();
        await store.putSeal(sealBody("x"), undefined);
        await store.close();
        await expect(store.getSeal()).rejects.toThrow(/closed/);
        await expect(store.putSeal(sealBody("y"), 1)).rejects.toThrow(/closed/);
      });
    });

    test("no token value is ever needed or stored: only its hash", async () => {
      const store = await fresh();
      const issued = newToken();
      expect(issued.hash).toBe(hashToken(issued.token));
      const record = tokenRecord("ignored", { accessor: issued.accessor, hash: issued.hash });
      await store.createToken(record);
      // Everything the API gives back carries the hash, never the value.
      const seen = JSON.stringify([
        await store.findToken(hashToken(issued.token)),
        await store.listTokens(),
      ]);
      expect(seen).toContain(issued.hash);
      expect(seen).not.toContain(issued.token);
      expect(seen).not.toContain(issued.token.slice(4));
      // A token value passed where a hash belongs is refused, so it cannot end up stored.
      await expect(
        store.createToken(tokenRecord("x", { accessor: "acc-x", hash: issued.token })),
      ).rejects.toThrow(TypeError);
      expect(await store.findToken(issued.token)).toBeUndefined();
      expect(await store.consumeToken(hashToken(issued.token))).toStrictEqual(record);
    });

    test("close: idempotent, and the store refuses work afterwards", async () => {
      const store = await fresh();
      await store.createPolicy({ name: "p", rules: [] });
      await store.close();
      await store.close();
      await expect(store.ping()).rejects.toThrow(/closed/);
      await expect(store.getPolicy("p")).rejects.toThrow(/closed/);
      await expect(store.createToken(tokenRecord("late"))).rejects.toThrow(/closed/);
    });

    if (!capabilities.shared) {
      test("stores opened on one storage do not share it (declared)", async () => {
        const [a, b] = await twoOnOneStorage();
        expect(await a.createPolicy({ name: "p", rules: [] })).toBe(true);
        expect(await b.getPolicy("p")).toBeUndefined();
        expect(await b.putSeal("[]", undefined)).toBe(true);
        expect(await a.getSeal()).toBeUndefined();
      });
      return;
    }

    describe("two stores on one storage (declared shared)", () => {
      test("see each other's writes; consume is exactly-once across them", async () => {
        const [a, b] = await twoOnOneStorage();
        expect(await a.createPolicy({ name: "p", rules: [{ effect: "allow" }] })).toBe(true);
        expect(await b.createPolicy({ name: "p", rules: [] })).toBe(false);
        expect(await b.getPolicy("p")).toStrictEqual({ name: "p", rules: [{ effect: "allow" }] });
        expect(await b.updatePolicy({ name: "p", rules: [{ effect: "deny" }] })).toBe(true);
        expect(await a.getPolicy("p")).toStrictEqual({ name: "p", rules: [{ effect: "deny" }] });

        const record = tokenRecord("cross", { kind: "setup", cidrs: [] });
        await a.createToken(record);
        expect(await b.findToken(record.hash)).toStrictEqual(record);
        await expect(b.createToken(record)).rejects.toThrow(/already exists/);
        for (let round = 0; round < 3; round++) {
          const r = tokenRecord(`cross-${round}`, { kind: "setup", cidrs: [] });
          await (round % 2 === 0 ? a : b).createToken(r);
          const results = await Promise.all(
            Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).consumeToken(r.hash)),
          );
          expect(results.filter((x) => x !== undefined)).toEqual([r]);
        }
        expect(await b.revokeToken(record.accessor)).toBe(true);
        expect(await a.findToken(record.hash)).toBeUndefined();
      });

      test("the seal's compare-and-set holds across them (no lost update)", async () => {
        const [a, b] = await twoOnOneStorage();
        // Concurrent creates from both stores: exactly one wins, and its body is stored.
        const created = Array.from({ length: 10 }, (_, i) => sealBody(`c${i}`));
        const creates = await Promise.all(
          created.map((body, i) => (i % 2 ? a : b).putSeal(body, undefined)),
        );
        expect(creates.filter(Boolean)).toHaveLength(1);
        expect(await b.getSeal()).toStrictEqual({ body: winnerOf(created, creates), version: 1 });
        // The same expected version from both stores at once: exactly one replaces it.
        const replaced = Array.from({ length: 10 }, (_, i) => sealBody(`w${i}`));
        const replaces = await Promise.all(
          replaced.map((body, i) => (i % 2 ? a : b).putSeal(body, 1)),
        );
        expect(replaces.filter(Boolean)).toHaveLength(1);
        expect(await a.getSeal()).toStrictEqual({
          body: winnerOf(replaced, replaces),
          version: 2,
        });
        // Read-modify-write loops interleaved across both stores: every increment lands once.
        expect(await a.putSeal("[]", 2)).toBe(true);
        const increment = async (store: SignerStateStore, tag: string): Promise<void> => {
          for (;;) {
            const slot = await store.getSeal();
            if (slot === undefined) throw new Error("seal record vanished");
            const next = JSON.stringify([...(JSON.parse(slot.body) as string[]), tag]);
            if (await store.putSeal(next, slot.version)) return;
          }
        };
        const tags = Array.from({ length: 16 }, (_, i) => `t${i}`);
        await Promise.all(tags.map((tag, i) => increment(i % 2 ? a : b, tag)));
        const final = await b.getSeal();
        expect(final?.version).toBe(3 + tags.length);
        expect((JSON.parse(final?.body ?? "[]") as string[]).sort()).toEqual([...tags].sort());
      });
    });
  });
}
