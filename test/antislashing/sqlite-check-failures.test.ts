// A sqlite check that fails at each point of its transaction records nothing of itself, and the
// other checks of its batch are kept (or, when SQLite undoes the whole transaction, all of them
// fail together). The sign path's checks take their savepoint only before a write that more work
// follows (group-commit.ts, "lazy"), and remember validator ids only once committed
// (validator-ids.ts): an id remembered from a row that was rolled back would be handed to the
// next new validator, and one validator's history would be read for another.
//
// The failures are injected with triggers, made through a second connection on the same file.
import { Database } from "bun:sqlite";
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import type { SlashingStore } from "../../src/antislashing/store";
import { TempDir } from "../support/cli";
import { block, GVR_A, GVR_B, pubkey, root, vote } from "./support";

const dir = new TempDir();
let counter = 0;
afterAll(() => dir.remove());

let store: SlashingStore;
let side: Database;
beforeEach(async () => {
  const path = join(dir.path, `failures-${++counter}.sqlite`);
  store = await openSqliteStore(path, { create: true });
  side = new Database(path, { safeIntegers: true });
});
afterEach(async () => {
  side.close();
  await store.close();
});

const A = pubkey(1);
const B = pubkey(2);
const C = pubkey(3);
const D = pubkey(4);
const POISON = root("poison");
const POISON_HEX = Buffer.from(POISON).toString("hex");

/** A trigger that makes inserts into `table` fail: ABORT (the statement) or ROLLBACK (all). */
function failInserts(table: string, raise: "ABORT" | "ROLLBACK", when = "1"): void {
  side.run(
    `CREATE TRIGGER fail_${table} BEFORE INSERT ON ${table} WHEN ${when}
       BEGIN SELECT RAISE(${raise}, 'injected failure: ${table}'); END`,
  );
}
const heal = (table: string) => side.run(`DROP TRIGGER fail_${table}`);

/** Every attestation record, with the pubkey its validator id names. */
function attestationRows(): { pubkey: string; target: bigint }[] {
  return (
    side
      .query(
        `SELECT v.pubkey AS pubkey, a.target_epoch AS target FROM signed_attestations a
           JOIN validators v ON v.id = a.validator_id ORDER BY v.pubkey, a.target_epoch`,
      )
      .all() as { pubkey: string; target: bigint }[]
  ).map((row) => ({ pubkey: row.pubkey, target: row.target + 2n ** 63n }));
}
const validators = () =>
  (side.query("SELECT pubkey FROM validators ORDER BY id").all() as { pubkey: string }[]).map(
    (row) => row.pubkey,
  );

const attest = (pk: string, source: number, target: number, signingRoot: Uint8Array) =>
  store.checkAndInsertAttestation(GVR_A, vote(pk, source, target, signingRoot));
async function expectNew(pk: string, source: number, target: number, signingRoot: Uint8Array) {
  expect(await attest(pk, source, target, signingRoot)).toEqual({ outcome: "new" });
}

describe("sqlite: a check failing at each point of its transaction", () => {
  test("the first check: the validator's insert fails after the genesis root's", async () => {
    failInserts("validators", "ABORT");
    await expect(attest(A, 1, 2, root("a"))).rejects.toThrow(/injected failure: validators/);
    // The root this check stored went with it: another network's root may still bind the file.
    expect(await store.storedGenesisValidatorsRoot()).toBeNull();
    expect(validators()).toEqual([]);
    heal("validators");
    expect(await store.checkAndInsertAttestation(GVR_B, vote(A, 1, 2, root("a")))).toEqual({
      outcome: "new",
    });
    expect(await store.storedGenesisValidatorsRoot()).toEqual(GVR_B);
  });

  test("a new validator: the record's insert fails after the validator's; its id is not reused for it", async () => {
    await expectNew(C, 1, 2, root("c"));
    failInserts("signed_attestations", "ABORT");
    await expect(attest(A, 9, 10, root("a"))).rejects.toThrow(/injected failure/);
    failInserts("signed_blocks", "ABORT");
    await expect(store.checkAndInsertBlock(GVR_A, block(D, 10, root("d")))).rejects.toThrow(
      /injected failure/,
    );
    expect(validators()).toEqual([C]);
    heal("signed_attestations");
    heal("signed_blocks");
    // B now gets the row id A's rolled-back row had. A must not read B's history as its own.
    await expectNew(B, 9, 10, root("b"));
    await expectNew(A, 9, 10, root("a"));
    expect(await attest(A, 9, 10, root("a2"))).toMatchObject({
      outcome: "refused",
      reason: "double_vote",
    });
    expect(await attest(B, 9, 10, root("b"))).toEqual({
      outcome: "same_data",
    });
    expect(await store.checkAndInsertBlock(GVR_A, block(D, 10, root("d")))).toEqual({
      outcome: "new",
    });
    expect(attestationRows()).toEqual([
      { pubkey: A, target: 10n },
      { pubkey: B, target: 10n },
      { pubkey: C, target: 2n },
    ]);
  });

  test("a known validator's record fails alone: the rest of its batch commits", async () => {
    for (const pk of [A, B, C]) {
      await expectNew(pk, 1, 2, root(pk));
    }
    failInserts("signed_attestations", "ABORT", `NEW.signing_root = X'${POISON_HEX}'`);
    // Staged together: one batch, one transaction.
    const outcomes = await Promise.allSettled([
      attest(A, 2, 3, root("a3")),
      attest(B, 2, 3, POISON),
      attest(C, 2, 3, root("c3")),
      attest(D, 2, 3, root("d3")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    heal("signed_attestations");
    expect(attestationRows()).toEqual([
      { pubkey: A, target: 2n },
      { pubkey: A, target: 3n },
      { pubkey: B, target: 2n },
      { pubkey: C, target: 2n },
      { pubkey: C, target: 3n },
      { pubkey: D, target: 3n },
    ]);
    await expectNew(B, 2, 3, root("b3"));
  });

  test("SQLite undoing the whole transaction fails the whole batch, and forgets the ids it saw", async () => {
    await expectNew(A, 1, 2, root("a"));
    failInserts("signed_attestations", "ROLLBACK", `NEW.signing_root = X'${POISON_HEX}'`);
    const outcomes = await Promise.allSettled([
      attest(B, 1, 2, root("b")), // new validator B
      attest(A, 2, 3, POISON), // one statement, no savepoint
      attest(C, 1, 2, root("c")), // would run outside it
      attest(A, 3, 4, root("a4")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
    heal("signed_attestations");
    expect(validators()).toEqual([A]);
    expect(attestationRows()).toEqual([{ pubkey: A, target: 2n }]);
    // D now gets the id B had in the batch undone: B must not take D's records for its own.
    await expectNew(D, 5, 6, root("d"));
    await expectNew(B, 5, 6, root("b"));
    await expectNew(A, 2, 3, root("a3"));
    expect(attestationRows()).toEqual(
      [
        { pubkey: A, target: 2n },
        { pubkey: A, target: 3n },
        { pubkey: D, target: 6n },
        { pubkey: B, target: 6n },
      ].sort((x, y) =>
        x.pubkey < y.pubkey ? -1 : x.pubkey > y.pubkey ? 1 : Number(x.target - y.target),
      ),
    );
  });
});
