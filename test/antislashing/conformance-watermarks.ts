/**
 * The database-wide watermarks of `sigil slashing watermark-repair` (src/antislashing/watermarks.ts),
 * as every backend must apply them: part of the conformance suite (conformance.ts calls it with
 * the same `open`), in a file of its own to keep that one readable.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { Decision, RefusalReason, SlashingStore } from "../../src/antislashing/store";
import { block, GVR_A, iAtt, iBlock, interchange, pubkey, root, vote } from "./support";

function reasonOf(decision: Decision): RefusalReason | "new" | "same_data" {
  return decision.outcome === "refused" ? decision.reason : decision.outcome;
}

export function watermarkConformance(
  name: string,
  open: () => Promise<SlashingStore>,
  strategy: "complete" | "minimal" | "none",
): void {
  describe(`${name}: database watermarks (watermark-repair)`, () => {
    let store: SlashingStore;
    const V1 = pubkey(1);
    const V2 = pubkey(2);
    const blockAt = async (pk: string, slot: number) =>
      reasonOf(await store.checkAndInsertBlock(GVR_A, block(pk, slot, root("b", pk, slot))));
    const voteAt = async (pk: string, s: number, t: number) =>
      reasonOf(await store.checkAndInsertAttestation(GVR_A, vote(pk, s, t, root("a", pk, s, t))));

    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close().catch(() => {});
    });

    test("a new database has none", async () => {
      expect(await store.databaseWatermarks()).toEqual({});
    });

    if (strategy === "none") {
      test("noop keeps none and refuses to set any", async () => {
        const change = store.changeWatermarks({ kind: "set_high", high: { epoch: 9n, slot: 9n } });
        await expect(change).rejects.toThrow("keeps no watermarks");
        expect(await store.databaseWatermarks()).toEqual({});
        expect(await blockAt(V1, 100)).toBe("new");
      });
      return;
    }

    test("high watermark: no block at or above its slot, no vote at or above its epoch", async () => {
      const high = { epoch: 10n, slot: 320n };
      expect(await store.changeWatermarks({ kind: "set_high", high })).toEqual({ high });
      expect(await store.databaseWatermarks()).toEqual({ high });
      expect(await blockAt(V1, 319)).toBe("new");
      expect(await blockAt(V1, 320)).toBe("block_slot_at_or_above_high_watermark");
      expect(await blockAt(V1, 10_000)).toBe("block_slot_at_or_above_high_watermark");
      expect(await voteAt(V1, 8, 9)).toBe("new");
      expect(await voteAt(V1, 9, 10)).toBe("attestation_at_or_above_high_watermark");
      expect(await voteAt(V1, 10, 11)).toBe("attestation_at_or_above_high_watermark");
      // A validator the database has never seen is bound as well.
      expect(await blockAt(V2, 320)).toBe("block_slot_at_or_above_high_watermark");
      expect(await voteAt(V2, 9, 12)).toBe("attestation_at_or_above_high_watermark");
      expect(await voteAt(V2, 8, 9)).toBe("new");
    });

    test("a source after its target is source_after_target, whatever the bounds", async () => {
      await store.changeWatermarks({ kind: "set_high", high: { epoch: 10n, slot: 320n } });
      await store.changeWatermarks({ kind: "raise_low", low: { epoch: 5n, slot: 160n } });
      expect(await voteAt(V1, 11, 9)).toBe("source_after_target");
      expect(await voteAt(V1, 6, 4)).toBe("source_after_target");
    });

    test("a refusal by the high watermark records nothing; removing it signs again", async () => {
      await store.changeWatermarks({ kind: "set_high", high: { epoch: 10n, slot: 320n } });
      expect(await voteAt(V1, 9, 11)).toBe("attestation_at_or_above_high_watermark");
      expect(await blockAt(V1, 330)).toBe("block_slot_at_or_above_high_watermark");
      expect(await store.changeWatermarks({ kind: "remove_high" })).toEqual({});
      expect(await store.databaseWatermarks()).toEqual({});
      // Nothing was recorded by the refusals: these are new, not repeats or conflicts.
      expect(await voteAt(V1, 9, 11)).toBe("new");
      expect(await blockAt(V1, 330)).toBe("new");
    });

    test("the high watermark refuses even a repeat of a recorded message", async () => {
      const signingRoot = root("repeat");
      await store.checkAndInsertBlock(GVR_A, block(V1, 400, signingRoot));
      await store.changeWatermarks({ kind: "set_high", high: { epoch: 12n, slot: 384n } });
      expect(reasonOf(await store.checkAndInsertBlock(GVR_A, block(V1, 400, signingRoot)))).toBe(
        "block_slot_at_or_above_high_watermark",
      );
    });

    test("low watermark: nothing below it, from it on signable, for every validator", async () => {
      await store.checkAndInsertBlock(GVR_A, block(V1, 100, root("old")));
      const low = { epoch: 5n, slot: 160n };
      expect(await store.changeWatermarks({ kind: "raise_low", low })).toEqual({ low });
      expect(await blockAt(V1, 159)).toBe("block_slot_below_low_watermark");
      expect(await blockAt(V2, 0)).toBe("block_slot_below_low_watermark");
      expect(await blockAt(V2, 160)).toBe("new");
      expect(await voteAt(V2, 4, 5)).toBe("attestation_source_below_low_watermark");
      expect(await voteAt(V2, 5, 6)).toBe("new");
      expect(await voteAt(V1, 3, 9)).toBe("attestation_source_below_low_watermark");
      expect(await voteAt(V1, 5, 5)).toBe("new");
    });

    test("a low watermark only rises, slot and epoch each on its own", async () => {
      await store.changeWatermarks({ kind: "raise_low", low: { epoch: 5n, slot: 160n } });
      const after = await store.changeWatermarks({
        kind: "raise_low",
        low: { epoch: 3n, slot: 200n },
      });
      expect(after).toEqual({ low: { epoch: 5n, slot: 200n } });
      expect(await store.databaseWatermarks()).toEqual(after);
      expect(await blockAt(V1, 199)).toBe("block_slot_below_low_watermark");
      expect(await voteAt(V1, 4, 6)).toBe("attestation_source_below_low_watermark");
    });

    test("an import cannot undo it; the history rules still apply above it", async () => {
      await store.changeWatermarks({ kind: "raise_low", low: { epoch: 5n, slot: 160n } });
      await store.changeWatermarks({ kind: "set_high", high: { epoch: 50n, slot: 1600n } });
      await store.importInterchange(
        interchange(GVR_A, [
          { pubkey: V1, blocks: [iBlock(10), iBlock(200)], attestations: [iAtt(1, 2), iAtt(6, 8)] },
        ]),
      );
      expect(await store.databaseWatermarks()).toEqual({
        low: { epoch: 5n, slot: 160n },
        high: { epoch: 50n, slot: 1600n },
      });
      expect(await blockAt(V1, 150)).toBe("block_slot_below_low_watermark");
      expect(await blockAt(V1, 200)).toBe("double_block_proposal");
      expect(await voteAt(V1, 6, 8)).toBe("double_vote");
      expect(await voteAt(V1, 7, 9)).toBe("new");
      expect(await blockAt(V1, 1600)).toBe("block_slot_at_or_above_high_watermark");
    });
  });
}
