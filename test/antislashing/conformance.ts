/**
 * The behaviour every SlashingStore backend must show, as one bun:test suite. Call it from a
 * backend's test file:
 *
 *   slashingConformanceSuite("sqlite", () => openSqliteStore(tempPath(), { create: true }), {
 *     strategy: "complete",
 *     prunes: true,
 *     stages: true,
 *   });
 *
 * `open` must return a NEW, EMPTY store on every call (a fresh file, database, or table); each test
 * opens its own and closes it afterwards. Expectations differ by strategy only where EIP-3076 lets
 * them differ (rules.ts documents both rule sets and the reason each refusal reports).
 *
 * Contract details pinned here (all backends):
 *   - The first genesis validators root a store sees (check or import, even an import with no
 *     validators) is stored; any other is refused: Decision reason genesis_validators_root_mismatch
 *     on checks, SlashingImportError on imports, and nothing is written.
 *   - An import is all or nothing: a source that fails part way leaves no record behind.
 *   - ImportReport counts what the interchange contained: `data` entries, blocks, attestations.
 *   - Exporting a store that has no genesis validators root rejects. Unknown pubkeys are omitted
 *     from a selective export (or exported with no records).
 *   - Minimal stores keep the root of a watermark only for messages they signed themselves; imported
 *     roots are dropped (the interchange tests' minimal flags forbid re-signing imported messages).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { bytesToHex } from "../../src/antislashing/encoding";
import type {
  Decision,
  RefusalReason,
  SlashingStore,
  StagedDecision,
} from "../../src/antislashing/store";
import { SlashingImportError } from "../../src/antislashing/store";
import { watermarkConformance } from "./conformance-watermarks";
import {
  block,
  exported,
  failingInterchange,
  GVR_A,
  GVR_B,
  iAtt,
  iBlock,
  interchange,
  pubkey,
  root,
  vote,
  ZERO_ROOT,
} from "./support";

/**
 * What a backend declares it does, and the suite holds it to: what it declares is tested, what it
 * does not declare must be absent (a store without `prune` declares `prunes: false`, and the
 * suite checks that it has none rather than skipping the prune tests when it is missing).
 */
export interface SlashingCapabilities {
  /** The EIP-3076 rules it applies; "none" (noop) refuses and keeps nothing. */
  readonly strategy: "complete" | "minimal" | "none";
  /** `prune(epochs)`: drops history older than the newest epochs (complete stores only). */
  readonly prunes: boolean;
  /** `stageBlock` / `stageAttestation`: decides at the commit, durable once on disk. */
  readonly stages: boolean;
}

function expectRefused(decision: Decision, reason: RefusalReason): void {
  expect(decision).toMatchObject({ outcome: "refused", reason });
  if (decision.outcome === "refused") {
    expect(typeof decision.detail).toBe("string");
    expect(decision.detail.length).toBeGreaterThan(0);
  }
}

function expectOutcome(decision: Decision, outcome: "new" | "same_data"): void {
  expect(decision).toEqual({ outcome });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** The store's prune, which a store declaring `prunes` must have. */
function pruneOf(
  store: SlashingStore,
): (epochs: bigint) => ReturnType<NonNullable<SlashingStore["prune"]>> {
  const prune = store.prune;
  if (prune === undefined)
    throw new Error(`the ${store.backend} store declares prunes but has no prune`);
  return (epochs) => prune.call(store, epochs);
}

export function slashingConformanceSuite(
  name: string,
  open: () => Promise<SlashingStore>,
  options: SlashingCapabilities,
): void {
  const complete = options.strategy === "complete";
  const pick = <T>(ifComplete: T, ifMinimal: T): T => (complete ? ifComplete : ifMinimal);

  describe(`${name}: slashing protection conformance (${options.strategy})`, () => {
    let store: SlashingStore;
    const V1 = pubkey(1);
    const V2 = pubkey(2);
    const V3 = pubkey(3);

    beforeEach(async () => {
      store = await open();
    });

    afterEach(async () => {
      await store.close().catch(() => {});
    });

    describe("capabilities", () => {
      test("declares its strategy", () => {
        expect(store.strategy).toBe(options.strategy);
      });

      test(options.prunes ? "prunes history" : "has no prune", () => {
        expect(typeof store.prune).toBe(options.prunes ? "function" : "undefined");
        // EIP-3076: only a complete history can be pruned soundly (SlashingStore.prune).
        if (options.prunes) expect(options.strategy).toBe("complete");
      });

      test(options.stages ? "stages its checks" : "does not stage its checks", () => {
        const expected = options.stages ? "function" : "undefined";
        expect(typeof store.stageBlock).toBe(expected);
        expect(typeof store.stageAttestation).toBe(expected);
      });
    });

    describe("health", () => {
      test("ping resolves on an open store", async () => {
        await store.ping();
      });

      test("a write probe succeeds on an open store and changes nothing", async () => {
        await store.probeWrite();
        expect(await store.storedGenesisValidatorsRoot()).toBeNull();
        expect(await rejection(store.exportInterchange())).toBeInstanceOf(Error);
        if (options.strategy === "none") return;
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 10, root("b", 10))), "new");
        const before = await exported(store);
        await store.probeWrite();
        expect(await exported(store)).toEqual(before);
      });

      test("location names where the records live", () => {
        expect(store.location.length).toBeGreaterThan(0);
      });

      test("close resolves, is idempotent, and the store is unusable afterwards", async () => {
        await store.close();
        await store.close();
        expect(await rejection(store.ping())).toBeInstanceOf(Error);
        expect(
          await rejection(store.checkAndInsertBlock(GVR_A, block(V1, 1, root("b", 1)))),
        ).toBeInstanceOf(Error);
        expect(await rejection(store.probeWrite())).toBeInstanceOf(Error);
        expect(await rejection(store.storedGenesisValidatorsRoot())).toBeInstanceOf(Error);
      });
    });

    if (options.strategy === "none") {
      test("refuses nothing and keeps nothing", async () => {
        for (const signingRoot of [root("b", 1), root("b", 2)]) {
          expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 10, signingRoot)), "new");
        }
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 5, root("a", 1, 5))),
          "new",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 2, 3, root("a", 2, 3))),
          "new",
        );
        expect((await exported(store)).size).toBe(0);
      });
      return;
    }

    describe("genesis validators root", () => {
      test("the first root is stored; another is refused for blocks and attestations, writing nothing", async () => {
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 10, root("b", 10))), "new");
        expectRefused(
          await store.checkAndInsertBlock(GVR_B, block(V2, 5, root("b", 5))),
          "genesis_validators_root_mismatch",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_B, vote(V2, 1, 2, root("a", 1, 2))),
          "genesis_validators_root_mismatch",
        );
        // The refused messages were not recorded: V2 can still sign below them.
        expect((await exported(store)).has(V2)).toBe(false);
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V2, 4, root("b", 4))), "new");
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V2, 0, 1, root("a", 0, 1))),
          "new",
        );
        const exportedSource = await store.exportInterchange();
        expect(exportedSource.metadata).toEqual({
          interchange_format_version: "5",
          genesis_validators_root: bytesToHex(GVR_A),
        });
      });

      test("an interchange for another chain is refused before anything is written", async () => {
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 10, root("b", 10))), "new");
        const foreign = interchange(GVR_B, [
          { pubkey: V2, blocks: [iBlock(100)], attestations: [iAtt(10, 11)] },
        ]);
        const error = await rejection(store.importInterchange(foreign));
        expect(error).toBeInstanceOf(SlashingImportError);
        expect([...(await exported(store)).keys()]).toEqual([V1]);
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V2, 1, root("b", 1))), "new");
      });

      test("an import, even with no validators, fixes the root of an empty store", async () => {
        await store.importInterchange(interchange(GVR_B, []));
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 1, root("b", 1))),
          "genesis_validators_root_mismatch",
        );
        expectOutcome(await store.checkAndInsertBlock(GVR_B, block(V1, 1, root("b", 1))), "new");
        expect((await store.exportInterchange()).metadata.genesis_validators_root).toBe(
          bytesToHex(GVR_B),
        );
      });

      test("exporting a store that never saw a root rejects", async () => {
        expect(await rejection(store.exportInterchange())).toBeInstanceOf(Error);
      });

      test("binding records the root once: a second bind, or another root, keeps the first", async () => {
        expect(await store.storedGenesisValidatorsRoot()).toBeNull();
        expect(bytesToHex(await store.bindGenesisValidatorsRoot(GVR_A))).toBe(bytesToHex(GVR_A));
        expect(bytesToHex((await store.storedGenesisValidatorsRoot()) ?? ZERO_ROOT)).toBe(
          bytesToHex(GVR_A),
        );
        expect(bytesToHex(await store.bindGenesisValidatorsRoot(GVR_A))).toBe(bytesToHex(GVR_A));
        // Another chain's root is not recorded: the stored one comes back, and it still rules.
        expect(bytesToHex(await store.bindGenesisValidatorsRoot(GVR_B))).toBe(bytesToHex(GVR_A));
        expectRefused(
          await store.checkAndInsertBlock(GVR_B, block(V1, 1, root("b", 1))),
          "genesis_validators_root_mismatch",
        );
        const foreign = interchange(GVR_B, [{ pubkey: V2, blocks: [iBlock(5)], attestations: [] }]);
        expect(await rejection(store.importInterchange(foreign))).toBeInstanceOf(
          SlashingImportError,
        );
        // A bound store exports its root with no validators.
        const empty = await store.exportInterchange();
        expect(empty.metadata.genesis_validators_root).toBe(bytesToHex(GVR_A));
        expect((await exported(store)).size).toBe(0);
      });

      test("the first check or import records the root it came with", async () => {
        expectOutcome(await store.checkAndInsertBlock(GVR_B, block(V1, 10, root("b", 10))), "new");
        expect(bytesToHex((await store.storedGenesisValidatorsRoot()) ?? ZERO_ROOT)).toBe(
          bytesToHex(GVR_B),
        );
      });
    });

    describe("refusal reasons", () => {
      test("double_block_proposal: another root at a signed slot", async () => {
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 10, root("x"))), "new");
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 10, root("y"))),
          "double_block_proposal",
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 10, ZERO_ROOT)),
          "double_block_proposal",
        );
      });

      test("block_slot_below_low_watermark: at or below the lowest (imported) slot", async () => {
        await store.importInterchange(
          interchange(GVR_A, [
            { pubkey: V1, blocks: [iBlock(10, root("imported", 10))], attestations: [] },
          ]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 9, root("b", 9))),
          "block_slot_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 0, root("b", 0))),
          "block_slot_below_low_watermark",
        );
        // Re-signing the imported block: a repeat for complete stores; minimal ones drop imported roots.
        const repeat = await store.checkAndInsertBlock(GVR_A, block(V1, 10, root("imported", 10)));
        if (complete) expectOutcome(repeat, "same_data");
        else expectRefused(repeat, "double_block_proposal");
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 20, root("b", 20))), "new");
        // Between the low watermark and the newest block: only the complete strategy can tell.
        const between = await store.checkAndInsertBlock(GVR_A, block(V1, 15, root("b", 15)));
        if (complete) expectOutcome(between, "new");
        else expectRefused(between, "block_slot_below_low_watermark");
      });

      test("double_vote: another attestation for a signed target", async () => {
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, root("x"))),
          "new",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, root("y"))),
          "double_vote",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 0, 2, root("z"))),
          "double_vote",
        );
      });

      test("surrounding_vote: the new vote surrounds a signed one", async () => {
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 3, 4, root("a", 3, 4))),
          "new",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 2, 5, root("a", 2, 5))),
          pick("surrounding_vote", "attestation_source_below_low_watermark"),
        );
      });

      test("surrounded_vote: a signed vote surrounds the new one", async () => {
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 2, 5, root("a", 2, 5))),
          "new",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 3, 4, root("a", 3, 4))),
          pick("surrounded_vote", "attestation_target_below_low_watermark"),
        );
      });

      test("source_after_target: never signable, even on an empty store", async () => {
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 5, 4, root("a", 5, 4))),
          "source_after_target",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 0, 1, root("a", 0, 1))),
          "new",
        );
      });

      test("attestation_source_below_low_watermark", async () => {
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [iAtt(5, 10)] }]),
        );
        // complete: below the lowest source and surrounding nothing; minimal: below the highest source.
        const [s, t] = complete ? [4, 8] : [4, 11];
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, s, t, root("a", s, t))),
          "attestation_source_below_low_watermark",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 5, 11, root("a", 5, 11))),
          "new",
        );
      });

      test("attestation_target_below_low_watermark", async () => {
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [iAtt(5, 10)] }]),
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 5, 9, root("a", 5, 9))),
          "attestation_target_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 5, 5, root("a", 5, 5))),
          "attestation_target_below_low_watermark",
        );
      });

      test("an imported history refuses what conflicts with it", async () => {
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [iBlock(10)], attestations: [iAtt(5, 10)] }]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 9, root("b", 9))),
          "block_slot_below_low_watermark",
        );
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 11, root("b", 11))), "new");
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 4, 12, root("a", 4, 12))),
          pick("surrounding_vote", "attestation_source_below_low_watermark"),
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 5, 12, root("a", 5, 12))),
          "new",
        );
      });
    });

    describe("repeats", () => {
      test("re-signing the same block (same slot and root) is allowed and recorded once", async () => {
        const r = root("b", 7);
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 7, r)), "new");
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 7, r)), "same_data");
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 7, r)), "same_data");
        expect((await exported(store)).get(V1)?.blocks).toEqual([`7@${bytesToHex(r)}`]);
      });

      test("re-signing the same attestation (same epochs and root) is allowed and recorded once", async () => {
        const r = root("a", 1, 2);
        expectOutcome(await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, r)), "new");
        expectOutcome(await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, r)), "same_data");
        expect((await exported(store)).get(V1)?.attestations).toEqual([`1->2@${bytesToHex(r)}`]);
      });

      test("a zero signing root is an ordinary root", async () => {
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, ZERO_ROOT)),
          "new",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, root("other"))),
          "double_vote",
        );
        if (complete) {
          expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 3, ZERO_ROOT)), "new");
          expectOutcome(
            await store.checkAndInsertBlock(GVR_A, block(V1, 3, ZERO_ROOT)),
            "same_data",
          );
        }
      });

      test("an older message is re-signable only under the complete strategy", async () => {
        const b5 = root("b", 5);
        const a12 = root("a", 1, 2);
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 5, b5)), "new");
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 6, root("b", 6))), "new");
        expectOutcome(await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, a12)), "new");
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 2, 3, root("a", 2, 3))),
          "new",
        );
        const oldBlock = await store.checkAndInsertBlock(GVR_A, block(V1, 5, b5));
        const oldVote = await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, a12));
        if (complete) {
          expectOutcome(oldBlock, "same_data");
          expectOutcome(oldVote, "same_data");
        } else {
          expectRefused(oldBlock, "block_slot_below_low_watermark");
          expectRefused(oldVote, "attestation_target_below_low_watermark");
        }
      });

      test("an imported record without a signing root never matches", async () => {
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [iBlock(10)], attestations: [iAtt(3, 4)] }]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 10, root("b", 10))),
          "double_block_proposal",
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 10, ZERO_ROOT)),
          "double_block_proposal",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 3, 4, root("a", 3, 4))),
          "double_vote",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 3, 4, ZERO_ROOT)),
          "double_vote",
        );
      });

      test("a slot or target holding several imported records repeats only if every one matches", async () => {
        const rb = root("b", 10);
        const ra = root("a", 3, 4);
        // Both orders, so that a backend cannot pass by looking at the first or last record only.
        await store.importInterchange(
          interchange(GVR_A, [
            {
              pubkey: V1,
              blocks: [iBlock(10, rb), iBlock(10)],
              attestations: [iAtt(3, 4, ra), iAtt(3, 4)],
            },
            {
              pubkey: V2,
              blocks: [iBlock(10), iBlock(10, rb)],
              attestations: [iAtt(3, 4), iAtt(3, 4, ra)],
            },
            {
              pubkey: V3,
              blocks: [iBlock(10, rb), iBlock(10, root("other"))],
              attestations: [iAtt(2, 4, ra), iAtt(3, 4, ra)],
            },
          ]),
        );
        for (const pk of [V1, V2, V3]) {
          expectRefused(
            await store.checkAndInsertBlock(GVR_A, block(pk, 10, rb)),
            "double_block_proposal",
          );
          expectRefused(
            await store.checkAndInsertAttestation(GVR_A, vote(pk, 3, 4, ra)),
            "double_vote",
          );
        }
      });

      test("an imported record with a root is re-signable only under the complete strategy", async () => {
        const rb = root("b", 10);
        const ra = root("a", 3, 4);
        await store.importInterchange(
          interchange(GVR_A, [
            { pubkey: V1, blocks: [iBlock(10, rb)], attestations: [iAtt(3, 4, ra)] },
          ]),
        );
        const b = await store.checkAndInsertBlock(GVR_A, block(V1, 10, rb));
        const a = await store.checkAndInsertAttestation(GVR_A, vote(V1, 3, 4, ra));
        if (complete) {
          expectOutcome(b, "same_data");
          expectOutcome(a, "same_data");
        } else {
          expectRefused(b, "double_block_proposal");
          expectRefused(a, "double_vote");
        }
      });
    });

    test("validators are independent", async () => {
      expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 5, root(1, "b", 5))), "new");
      expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V2, 5, root(2, "b", 5))), "new");
      expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V3, 4, root(3, "b", 4))), "new");
      expectOutcome(
        await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, root(1, "a"))),
        "new",
      );
      expectOutcome(
        await store.checkAndInsertAttestation(GVR_A, vote(V2, 1, 2, root(2, "a"))),
        "new",
      );
      expectOutcome(
        await store.checkAndInsertAttestation(GVR_A, vote(V3, 0, 3, root(3, "a"))),
        "new",
      );
      expectRefused(
        await store.checkAndInsertBlock(GVR_A, block(V2, 5, root(1, "b", 5))),
        "double_block_proposal",
      );
      expect([...(await exported(store)).keys()]).toEqual([V1, V2, V3].sort());
    });

    describe("interchange", () => {
      const history = () => [
        {
          pubkey: V1,
          blocks: [iBlock(10, root(1, 10)), iBlock(12), iBlock(30, root(1, 30))],
          attestations: [iAtt(1, 2, root(1, 1, 2)), iAtt(2, 3), iAtt(3, 9, root(1, 3, 9))],
        },
        {
          pubkey: V2,
          blocks: [iBlock(5)],
          attestations: [iAtt(0, 0), iAtt(7, 8, root(2, 7, 8))],
        },
        { pubkey: V3, blocks: [iBlock(99n, root(3, 99))], attestations: [] },
      ];

      test("the import report counts the interchange's entries and records", async () => {
        const report = await store.importInterchange(interchange(GVR_A, history()));
        expect(report).toEqual({ validators: 3, blocks: 5, attestations: 5 });
      });

      test("import → export round trip", async () => {
        await store.importInterchange(interchange(GVR_A, history()));
        const out = await exported(store);
        if (complete) {
          // Every record comes back (roots and missing roots included).
          expect(out.get(V1)).toEqual({
            blocks: [`10@${bytesToHex(root(1, 10))}`, "12@-", `30@${bytesToHex(root(1, 30))}`],
            attestations: [
              `1->2@${bytesToHex(root(1, 1, 2))}`,
              "2->3@-",
              `3->9@${bytesToHex(root(1, 3, 9))}`,
            ],
          });
          expect(out.get(V2)).toEqual({
            blocks: ["5@-"],
            attestations: ["0->0@-", `7->8@${bytesToHex(root(2, 7, 8))}`],
          });
          expect(out.get(V3)).toEqual({
            blocks: [`99@${bytesToHex(root(3, 99))}`],
            attestations: [],
          });
        } else {
          // Watermarks: highest slot; highest source and target; imported roots dropped.
          expect(out.get(V1)).toEqual({ blocks: ["30@-"], attestations: ["3->9@-"] });
          expect(out.get(V2)).toEqual({ blocks: ["5@-"], attestations: ["7->8@-"] });
          expect(out.get(V3)).toEqual({ blocks: ["99@-"], attestations: [] });
        }
        expect(out.size).toBe(3);
        // What is signed afterwards is exported too, with its root.
        const r = root(1, "b", 31);
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 31, r)), "new");
        const after = await exported(store, [V1]);
        expect(after.get(V1)?.blocks).toContain(`31@${bytesToHex(r)}`);
        if (!complete) expect(after.get(V1)?.blocks).toEqual([`31@${bytesToHex(r)}`]);
      });

      test("an export re-imported into an empty store protects the same way", async () => {
        await store.importInterchange(interchange(GVR_A, history()));
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 9, 10, root(1, 9, 10))),
          "new",
        );
        const first = await exported(store);
        const other = await open();
        try {
          await other.importInterchange(await store.exportInterchange());
          // A minimal store drops imported roots.
          const dropRoot = (record: string) => record.replace(/@.*/, "@-");
          const expected = complete
            ? first
            : new Map(
                [...first].map(([pk, recs]) => [
                  pk,
                  {
                    blocks: recs.blocks.map(dropRoot),
                    attestations: recs.attestations.map(dropRoot),
                  },
                ]),
              );
          expect(await exported(other)).toEqual(expected);
          expectRefused(
            await other.checkAndInsertBlock(GVR_A, block(V1, 12, root("b", 12))),
            pick("double_block_proposal", "block_slot_below_low_watermark"),
          );
          expectRefused(
            await other.checkAndInsertAttestation(GVR_A, vote(V1, 9, 10, root("different"))),
            "double_vote",
          );
        } finally {
          await other.close();
        }
      });

      test("re-importing the same interchange changes nothing", async () => {
        await store.importInterchange(interchange(GVR_A, history()));
        const once = await exported(store);
        await store.importInterchange(interchange(GVR_A, history()));
        expect(await exported(store)).toEqual(once);
      });

      test("export of selected pubkeys", async () => {
        await store.importInterchange(interchange(GVR_A, history()));
        const some = await exported(store, [V3, V1]);
        expect([...some.keys()]).toEqual([V1, V3].sort());
        const unknown = await exported(store, [pubkey(404)]);
        expect(unknown.size).toBe(0);
        expect((await exported(store, [])).size).toBe(0);
        expect((await exported(store)).size).toBe(3);
      });

      test("a failing import writes nothing", async () => {
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V3, 1, root("b", 1))), "new");
        const source = failingInterchange(
          GVR_A,
          [{ pubkey: V1, blocks: [iBlock(100)], attestations: [iAtt(50, 60)] }],
          new SlashingImportError("$.data[1].pubkey: broken on purpose"),
        );
        expect(await rejection(store.importInterchange(source))).toBeInstanceOf(
          SlashingImportError,
        );
        expect([...(await exported(store)).keys()]).toEqual([V3]);
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V1, 1, root("b", 1))), "new");
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 1, 2, root("a", 1, 2))),
          "new",
        );
      });
    });

    describe("concurrency", () => {
      test("200 concurrent conflicting attestations for one target: exactly one is new", async () => {
        const votes = Array.from({ length: 200 }, (_, i) =>
          vote(V1, 49, 50, root("same-target", i % 20)),
        );
        const decisions = await Promise.all(
          votes.map((v) => store.checkAndInsertAttestation(GVR_A, v)),
        );
        const winners = decisions.flatMap((d, i) => (d.outcome === "new" ? [i] : []));
        expect(winners.length).toBe(1);
        const winner = winners[0] ?? -1;
        decisions.forEach((d, i) => {
          if (i === winner) return;
          if (i % 20 === winner % 20) expectOutcome(d, "same_data");
          else expectRefused(d, "double_vote");
        });
        expect((await exported(store)).get(V1)?.attestations).toEqual([
          `49->50@${bytesToHex(root("same-target", winner % 20))}`,
        ]);
      });

      test("200 concurrent mutually surrounding attestations: exactly one is new", async () => {
        const votes = Array.from({ length: 200 }, (_, i) =>
          vote(V2, 200 - i, 201 + i, root("nest", i)),
        );
        const decisions = await Promise.all(
          votes.map((v) => store.checkAndInsertAttestation(GVR_A, v)),
        );
        expect(decisions.filter((d) => d.outcome === "new").length).toBe(1);
        expect(decisions.filter((d) => d.outcome === "refused").length).toBe(199);
        expect((await exported(store)).get(V2)?.attestations.length).toBe(1);
      });

      test("200 concurrent blocks for one slot: exactly one is new", async () => {
        const proposals = Array.from({ length: 200 }, (_, i) =>
          block(V3, 64, root("slot-64", i % 10)),
        );
        const decisions = await Promise.all(
          proposals.map((p) => store.checkAndInsertBlock(GVR_A, p)),
        );
        const winners = decisions.flatMap((d, i) => (d.outcome === "new" ? [i] : []));
        expect(winners.length).toBe(1);
        const winner = winners[0] ?? -1;
        decisions.forEach((d, i) => {
          if (i === winner) return;
          if (i % 10 === winner % 10) expectOutcome(d, "same_data");
          else expectRefused(d, "double_block_proposal");
        });
      });
    });

    describe("floors (imported low watermarks without records)", () => {
      const FLOORS = { blockSlot: 99n, sourceEpoch: 10n, targetEpoch: 14n };

      /**
       * For a validator imported with FLOORS, a block at 200 and a vote (20, 30): complete stores
       * sign between the floor and the oldest record, since the import vouched for everything
       * above the floor (as Web3Signer keeps every record above its low watermark); minimal ones
       * keep the highest record as the watermark.
       */
      async function expectGapSignable(pk: string): Promise<void> {
        const gapBlock = await store.checkAndInsertBlock(GVR_A, block(pk, 150, root("b", 150)));
        const gapVote = await store.checkAndInsertAttestation(
          GVR_A,
          vote(pk, 12, 16, root("a", 12, 16)),
        );
        if (complete) {
          expectOutcome(gapBlock, "new");
          expectOutcome(gapVote, "new");
        } else {
          expectRefused(gapBlock, "block_slot_below_low_watermark");
          expectRefused(gapVote, "attestation_target_below_low_watermark");
        }
      }

      test("refuse at or below themselves, as the lowest record would, and nothing above", async () => {
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [], floors: FLOORS }]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 50, root("b", 50))),
          "block_slot_below_low_watermark",
        );
        // At the floor: nothing is recorded there, yet it is refused (minimal: the root is unknown).
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 99, root("b", 99))),
          pick("block_slot_below_low_watermark", "double_block_proposal"),
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 9, 20, root("a", 9, 20))),
          "attestation_source_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 10, 14, root("a", 10, 14))),
          pick("attestation_target_below_low_watermark", "double_vote"),
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 11, 13, root("a", 11, 13))),
          "attestation_target_below_low_watermark",
        );
        expectOutcome(
          await store.checkAndInsertBlock(GVR_A, block(V1, 100, root("b", 100))),
          "new",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 10, 15, root("a", 10, 15))),
          "new",
        );
        // Another validator has no floors.
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V2, 1, root("b", 1))), "new");
      });

      test("a refusal the floor causes says floor (complete) or signed-or-imported (minimal)", async () => {
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [], floors: FLOORS }]),
        );
        const detail = (decision: Decision) => {
          expect(decision.outcome).toBe("refused");
          return decision.outcome === "refused" ? decision.detail : "";
        };
        const byFloor = [
          detail(await store.checkAndInsertBlock(GVR_A, block(V1, 50, root("b", 50)))),
          detail(await store.checkAndInsertAttestation(GVR_A, vote(V1, 9, 20, root("a", 9, 20)))),
          detail(await store.checkAndInsertAttestation(GVR_A, vote(V1, 11, 13, root("a", 11, 13)))),
        ];
        // A record that refuses: V2 signed slot 200 and source 20 → target 30.
        expectOutcome(
          await store.checkAndInsertBlock(GVR_A, block(V2, 200, root("b", 200))),
          "new",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V2, 20, 30, root("a", 20, 30))),
          "new",
        );
        const byRecord = [
          detail(await store.checkAndInsertBlock(GVR_A, block(V2, 150, root("b", 150)))),
          detail(await store.checkAndInsertAttestation(GVR_A, vote(V2, 19, 25, root("a", 19, 25)))),
        ];
        if (complete) {
          expect(byFloor).toEqual([
            expect.stringMatching(/^slot 50 is at or below the validator's block slot floor 99 /),
            expect.stringMatching(
              /^source epoch 9 is below the validator's source epoch floor 10 /,
            ),
            expect.stringMatching(
              /^target epoch 13 is at or below the validator's target epoch floor 14 /,
            ),
          ]);
          for (const text of byFloor) expect(text).not.toContain("recorded");
          expect(byRecord).toEqual([
            "slot 150 is at or below the lowest recorded block slot 200",
            "source epoch 19 is below the lowest recorded source epoch 20",
          ]);
        } else {
          // Minimal: one watermark folds what was signed and what was imported.
          expect(byFloor).toEqual([
            expect.stringMatching(
              /^slot 50 is below the highest block slot signed or imported, 99 /,
            ),
            expect.stringMatching(
              /^source epoch 9 is below the highest source epoch signed or imported, 10 /,
            ),
            expect.stringMatching(
              /^target epoch 13 is below the highest target epoch signed or imported, 14 /,
            ),
          ]);
          expect(byRecord[0]).toStartWith(
            "slot 150 is below the highest block slot signed or imported, 200",
          );
        }
      });

      test("raise the watermark above older records; below a record above the floor, complete stores sign", async () => {
        await store.importInterchange(
          interchange(GVR_A, [
            {
              pubkey: V1,
              blocks: [iBlock(50, root(1, 50))],
              attestations: [iAtt(3, 5, root(1, 3, 5))],
              floors: FLOORS,
            },
            {
              pubkey: V2,
              blocks: [iBlock(200, root(2, 200))],
              attestations: [iAtt(20, 30, root(2, 20, 30))],
              floors: FLOORS,
            },
          ]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 60, root("b", 60))),
          "block_slot_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 11, 12, root("a", 11, 12))),
          "attestation_target_below_low_watermark",
        );
        // Ahead of every record (source 3, target 5), yet below the source floor.
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 9, 20, root("a", 9, 20))),
          "attestation_source_below_low_watermark",
        );
        await expectGapSignable(V2);
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V2, 99, root("b", 99))),
          "block_slot_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V2, 9, 40, root("a", 9, 40))),
          pick("surrounding_vote", "attestation_source_below_low_watermark"),
        );
        expectOutcome(
          await store.checkAndInsertBlock(GVR_A, block(V2, 201, root("b", 201))),
          "new",
        );
        // The records stay exported as they were; floors are no records (minimal: watermarks).
        const out = await exported(store);
        if (complete) {
          expect(out.get(V1)).toEqual({
            blocks: [`50@${bytesToHex(root(1, 50))}`],
            attestations: [`3->5@${bytesToHex(root(1, 3, 5))}`],
          });
        } else {
          expect(out.get(V1)).toEqual({ blocks: ["99@-"], attestations: ["10->14@-"] });
        }
      });

      test("only rise, and ride with their import: a refused or failing import raises none", async () => {
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [], floors: FLOORS }]),
        );
        const lower = { blockSlot: 5n, sourceEpoch: 1n, targetEpoch: 2n };
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [], floors: lower }]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 50, root("b", 50))),
          "block_slot_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 11, 13, root("a", 11, 13))),
          "attestation_target_below_low_watermark",
        );
        const high = { blockSlot: 1000n, sourceEpoch: 500n, targetEpoch: 500n };
        const failing = failingInterchange(
          GVR_A,
          [{ pubkey: V3, blocks: [], attestations: [], floors: high }],
          new SlashingImportError("$.data[1]: broken on purpose"),
        );
        expect(await rejection(store.importInterchange(failing))).toBeInstanceOf(
          SlashingImportError,
        );
        const foreign = interchange(GVR_B, [
          { pubkey: V2, blocks: [], attestations: [], floors: high },
        ]);
        expect(await rejection(store.importInterchange(foreign))).toBeInstanceOf(
          SlashingImportError,
        );
        for (const pk of [V2, V3]) {
          expectOutcome(
            await store.checkAndInsertBlock(GVR_A, block(pk, 10, root("b", 10))),
            "new",
          );
          expectOutcome(
            await store.checkAndInsertAttestation(GVR_A, vote(pk, 1, 2, root("a", 1, 2))),
            "new",
          );
        }
      });

      test("never lower the watermark a validator already had from its records", async () => {
        expectOutcome(
          await store.checkAndInsertBlock(GVR_A, block(V1, 300, root("b", 300))),
          "new",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 30, 31, root("a", 30, 31))),
          "new",
        );
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [], floors: FLOORS }]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V1, 200, root("b", 200))),
          "block_slot_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 20, 25, root("a", 20, 25))),
          pick("attestation_source_below_low_watermark", "attestation_target_below_low_watermark"),
        );
        expectOutcome(
          await store.checkAndInsertBlock(GVR_A, block(V1, 301, root("b", 301))),
          "new",
        );
      });

      test("records imported later without floors hold the floor at their oldest (EIP-3076 2, 4, 5)", async () => {
        const withFloors = (pk: typeof V1) => ({
          pubkey: pk,
          blocks: [iBlock(200, root(pk, 200))],
          attestations: [iAtt(20, 30, root(pk, 20, 30))],
          floors: FLOORS,
        });
        await store.importInterchange(interchange(GVR_A, [withFloors(V2), withFloors(V3)]));
        // V3's later import: another signer's records, which vouch for nothing below them.
        await store.importInterchange(
          interchange(GVR_A, [{ pubkey: V3, blocks: [iBlock(400)], attestations: [iAtt(40, 41)] }]),
        );
        await expectGapSignable(V2);
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V3, 150, root("b", 150))),
          "block_slot_below_low_watermark",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V3, 12, 16, root("a", 12, 16))),
          pick("attestation_source_below_low_watermark", "attestation_target_below_low_watermark"),
        );
        // Between the two imports' records V3 signs as it did before (EIP-3076 allows it).
        const between = await store.checkAndInsertBlock(GVR_A, block(V3, 300, root("b", 300)));
        if (complete) expectOutcome(between, "new");
        else expectRefused(between, "block_slot_below_low_watermark");
      });

      test("a target, a source or a block floor alone refuses only its own side", async () => {
        await store.importInterchange(
          interchange(GVR_A, [
            { pubkey: V1, blocks: [], attestations: [], floors: { targetEpoch: 14n } },
            { pubkey: V2, blocks: [], attestations: [], floors: { sourceEpoch: 10n } },
            { pubkey: V3, blocks: [], attestations: [], floors: { blockSlot: 20n } },
          ]),
        );
        expectRefused(
          await store.checkAndInsertBlock(GVR_A, block(V3, 19, root("b", 19))),
          "block_slot_below_low_watermark",
        );
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V3, 21, root("b", 21))), "new");
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V3, 0, 1, root("a", 0, 1))),
          "new",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 0, 13, root("a", 0, 13))),
          "attestation_target_below_low_watermark",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V1, 0, 15, root("a", 0, 15))),
          "new",
        );
        expectRefused(
          await store.checkAndInsertAttestation(GVR_A, vote(V2, 9, 30, root("a", 9, 30))),
          "attestation_source_below_low_watermark",
        );
        expectOutcome(
          await store.checkAndInsertAttestation(GVR_A, vote(V2, 10, 10, root("a", 10, 10))),
          "new",
        );
        expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V2, 0, root("b", 0))), "new");
      });
    });

    if (options.stages) {
      describe("staged checks", () => {
        test("decide as the unstaged checks do, and become durable", async () => {
          const stageBlock = store.stageBlock?.bind(store);
          const stageAttestation = store.stageAttestation?.bind(store);
          if (stageBlock === undefined || stageAttestation === undefined) {
            throw new Error(`the ${store.backend} store declares stages but does not stage`);
          }
          const decided = async (staged: Promise<StagedDecision>): Promise<Decision> => {
            const { decision, durable } = await staged;
            await durable;
            return decision;
          };
          expectOutcome(await decided(stageBlock(GVR_A, block(V1, 10, root("b", 10)))), "new");
          expectOutcome(
            await decided(stageBlock(GVR_A, block(V1, 10, root("b", 10)))),
            "same_data",
          );
          expectRefused(
            await decided(stageBlock(GVR_A, block(V1, 10, root("other", 10)))),
            "double_block_proposal",
          );
          expectOutcome(
            await decided(stageAttestation(GVR_A, vote(V1, 2, 3, root("a", 2, 3)))),
            "new",
          );
          expectRefused(
            await decided(stageAttestation(GVR_A, vote(V1, 1, 4, root("a", 1, 4)))),
            "surrounding_vote",
          );
          expectRefused(
            await decided(stageBlock(GVR_B, block(V2, 1, root("b", 1)))),
            "genesis_validators_root_mismatch",
          );
          // Staged and unstaged checks share one history.
          expectOutcome(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 2, 3, root("a", 2, 3))),
            "same_data",
          );
          const out = await exported(store);
          expect(out.get(V1)?.blocks).toEqual([`10@${bytesToHex(root("b", 10))}`]);
          expect(out.get(V1)?.attestations.length).toBe(1);
          expect(out.has(V2)).toBe(false);
        });
      });
    }

    if (options.prunes) {
      describe("prune", () => {
        test("keeps the newest epochs per validator and refuses below what is kept", async () => {
          const prune = pruneOf(store);
          for (let t = 1; t <= 20; t++) {
            expectOutcome(
              await store.checkAndInsertAttestation(GVR_A, vote(V1, t - 1, t, root("a", t))),
              "new",
            );
            expectOutcome(
              await store.checkAndInsertBlock(GVR_A, block(V1, 32 * t, root("b", t))),
              "new",
            );
          }
          expectOutcome(await store.checkAndInsertBlock(GVR_A, block(V2, 3, root(2, "b"))), "new");
          const removed = await prune(5n);
          expect(removed).toEqual({ blocks: 15, attestations: 15 });
          const out = await exported(store);
          expect(out.get(V1)?.attestations.length).toBe(5);
          expect(out.get(V1)?.blocks.length).toBe(5);
          expect(out.get(V2)?.blocks).toEqual([`3@${bytesToHex(root(2, "b"))}`]);
          // What was pruned is now below the low watermarks.
          expectRefused(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 15, 15, root("a", 15, 15))),
            "attestation_target_below_low_watermark",
          );
          expectRefused(
            await store.checkAndInsertBlock(GVR_A, block(V1, 32 * 15, root("b", 15))),
            "block_slot_below_low_watermark",
          );
          expectOutcome(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 16, 17, root("a", 17))),
            "same_data",
          );
          expect(await prune(5n)).toEqual({ blocks: 0, attestations: 0 });
        });

        test("never makes a slashable imported history less protective", async () => {
          const prune = pruneOf(store);
          // (1, 60) surrounds (30, 31): pruning (30, 31) alone would let (20, 70) through.
          await store.importInterchange(
            interchange(GVR_A, [
              { pubkey: V1, blocks: [], attestations: [iAtt(1, 60), iAtt(30, 31)] },
            ]),
          );
          await prune(10n);
          expectRefused(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 20, 70, root("a", 20, 70))),
            "surrounding_vote",
          );
        });

        test("re-importing pruned history does not re-open what was pruned", async () => {
          const prune = pruneOf(store);
          const older = () =>
            interchange(GVR_A, [
              { pubkey: V1, blocks: [iBlock(100)], attestations: [iAtt(9, 10)] },
            ]);
          await store.importInterchange(older());
          for (let t = 11; t <= 20; t++) {
            expectOutcome(
              await store.checkAndInsertAttestation(GVR_A, vote(V1, t - 1, t, root("a", t))),
              "new",
            );
          }
          for (const slot of [101, 200, 300]) {
            expectOutcome(
              await store.checkAndInsertBlock(GVR_A, block(V1, slot, root("b", slot))),
              "new",
            );
          }
          await prune(2n);
          // The report still counts what the file contained.
          expect(await store.importInterchange(older())).toEqual({
            validators: 1,
            blocks: 1,
            attestations: 1,
          });
          expectRefused(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 10, 11, root("other", 11))),
            "attestation_source_below_low_watermark",
          );
          expectRefused(
            await store.checkAndInsertBlock(GVR_A, block(V1, 101, root("other", 101))),
            "block_slot_below_low_watermark",
          );
          expectOutcome(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 20, 21, root("a", 21))),
            "new",
          );
        });

        test("an imported attestation below the pruning floor that kept history surrounds still protects", async () => {
          const prune = pruneOf(store);
          for (let t = 1; t <= 5; t++) {
            expectOutcome(
              await store.checkAndInsertAttestation(GVR_A, vote(V1, t - 1, t, root("a", t))),
              "new",
            );
          }
          for (const t of [15, 16]) {
            expectOutcome(
              await store.checkAndInsertAttestation(GVR_A, vote(V1, 5, t, root("a", t))),
              "new",
            );
          }
          expect((await prune(2n)).attestations).toBe(5); // keeps (5, 15) and (5, 16)
          // Signed elsewhere, below the floor (15) and surrounded by (5, 15): slashable data, and
          // the kept history does not stand in for it, so it must be stored.
          await store.importInterchange(
            interchange(GVR_A, [{ pubkey: V1, blocks: [], attestations: [iAtt(7, 8)] }]),
          );
          expectRefused(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 6, 17, root("a", 6, 17))),
            "surrounding_vote",
          );
          expectRefused(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 3, 4, root("other", 4))),
            "attestation_source_below_low_watermark",
          );
          expectOutcome(
            await store.checkAndInsertAttestation(GVR_A, vote(V1, 7, 17, root("a", 7, 17))),
            "new",
          );
        });

        test("rejects fewer than one epoch", async () => {
          const prune = pruneOf(store);
          expect(await rejection(prune(0n))).toBeInstanceOf(RangeError);
        });
      });
    }
  });
  watermarkConformance(name, open, options.strategy);
}
