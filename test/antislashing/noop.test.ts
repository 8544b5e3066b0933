import { describe, expect, test } from "bun:test";
import { createNoopStore } from "../../src/antislashing/backends/noop/store";
import { bytesToHex } from "../../src/antislashing/encoding";
import { collectInterchange } from "../../src/antislashing/interchange";
import { slashingConformanceSuite } from "./conformance";
import { block, GVR_A, GVR_B, iAtt, iBlock, interchange, pubkey, root, vote } from "./support";

/** No protection: nothing to prune or stage; the shared suite checks just that, and its health. */
slashingConformanceSuite("noop", async () => createNoopStore(), {
  strategy: "none",
  prunes: false,
  stages: false,
});

describe("noop backend", () => {
  test("declares no protection", () => {
    const store = createNoopStore();
    expect(store.backend).toBe("noop");
    expect(store.strategy).toBe("none");
    expect(store.prune).toBeUndefined();
  });

  test("accepts everything, even slashable and cross-chain messages", async () => {
    const store = createNoopStore();
    const pk = pubkey(1);
    for (let i = 0; i < 3; i++) {
      expect(await store.checkAndInsertBlock(GVR_A, block(pk, 10, root("b", i)))).toEqual({
        outcome: "new",
      });
      expect(await store.checkAndInsertAttestation(GVR_A, vote(pk, 1, 5, root("a", i)))).toEqual({
        outcome: "new",
      });
    }
    expect(await store.checkAndInsertAttestation(GVR_A, vote(pk, 2, 3, root("inner")))).toEqual({
      outcome: "new",
    });
    expect(await store.checkAndInsertAttestation(GVR_A, vote(pk, 9, 3, root("backwards")))).toEqual(
      { outcome: "new" },
    );
    expect(await store.checkAndInsertBlock(GVR_B, block(pk, 10, root("other chain")))).toEqual({
      outcome: "new",
    });
  });

  test("still rejects malformed requests", async () => {
    const store = createNoopStore();
    await expect(
      store.checkAndInsertBlock(GVR_A, block("0xnope", 1, root("x"))),
    ).rejects.toBeInstanceOf(TypeError);
    await expect(
      store.checkAndInsertBlock(GVR_A, block(pubkey(1), -1, root("x"))),
    ).rejects.toBeInstanceOf(RangeError);
  });

  test("imports nothing and exports nothing", async () => {
    const store = createNoopStore();
    await expect(store.exportInterchange()).rejects.toBeInstanceOf(Error);
    const report = await store.importInterchange(
      interchange(GVR_A, [{ pubkey: pubkey(1), blocks: [iBlock(5)], attestations: [iAtt(1, 2)] }]),
    );
    expect(report).toEqual({ validators: 0, blocks: 0, attestations: 0 });
    const exported = await collectInterchange(await store.exportInterchange());
    expect(exported).toEqual({
      metadata: { interchange_format_version: "5", genesis_validators_root: bytesToHex(GVR_A) },
      validators: [],
    });
  });

  test("ping and close", async () => {
    const store = createNoopStore();
    await store.ping();
    await store.close();
    await store.close();
    await expect(store.ping()).rejects.toBeInstanceOf(Error);
  });
});
