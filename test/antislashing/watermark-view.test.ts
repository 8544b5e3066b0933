// The signer's view of the database-wide watermarks (src/app/watermarks.ts): a start-up line when
// a bound is set, the endpoint's body read from the database on each call, and the copy the
// gauges read; and 503 when the database cannot answer.
import { expect, test } from "bun:test";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { watchWatermarks } from "../../src/app/watermarks";
import { SigilError } from "../../src/errors";
import { testLogger } from "../support/log-capture";

test("a bound set before start-up is logged; the body and the copy follow the database", async () => {
  const store = await openSqliteStore(":memory:", { create: true });
  const high = { epoch: 7n, slot: 224n };
  await store.changeWatermarks({ kind: "set_high", high });
  const lines: string[] = [];
  const view = watchWatermarks(store, testLogger("info", lines));
  try {
    expect(await view.highWatermark()).toEqual({ epoch: "7", slot: "224" });
    expect(view.current()).toEqual({ high });
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({
        msg: "slashing protection database watermarks (sigil slashing watermark-repair)",
        low: "none",
        high: "epoch 7, slot 224",
      }),
    );
    await store.changeWatermarks({ kind: "remove_high" });
    expect(await view.highWatermark()).toEqual({});
    expect(view.current()).toEqual({});
  } finally {
    view.stop();
    await store.close();
  }
});

test("nothing set: no line; a database that cannot answer is 503 slashing_db_unavailable", async () => {
  const store = await openSqliteStore(":memory:", { create: true });
  const lines: string[] = [];
  const view = watchWatermarks(store, testLogger("info", lines));
  try {
    expect(await view.highWatermark()).toEqual({});
    expect(lines.filter((l) => l.includes("watermark-repair"))).toEqual([]);
    await store.close();
    const error = await view.highWatermark().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SigilError);
    expect((error as SigilError).code).toBe("slashing_db_unavailable");
  } finally {
    view.stop();
  }
});
