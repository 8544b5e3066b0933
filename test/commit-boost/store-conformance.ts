// The proxy store contract (src/commit-boost/proxy-store.ts), run against every backend:
// store-sqlite.test.ts, store-postgres.test.ts. `storage()` makes new, empty storage and returns
// how to open a store on it; two stores opened on one storage share it.
import { describe, expect, test } from "bun:test";
import type { ProxyRecord, ProxyStore } from "../../src/commit-boost/proxy-store";

const CONSENSUS_A = `0x${"a1".repeat(48)}`;
const CONSENSUS_B = `0x${"b2".repeat(48)}`;

export function proxyRecord(seed: number, fields: Partial<ProxyRecord> = {}): ProxyRecord {
  const hex = seed.toString(16).padStart(2, "0");
  const scheme = fields.scheme ?? "bls";
  return {
    proxy: scheme === "bls" ? `0x${hex.repeat(48)}` : `0x${hex.repeat(20)}`,
    scheme,
    consensus: CONSENSUS_A,
    module: "alpha",
    sealed: `sealed-${seed}`,
    delegationSignature: `0x${"cd".repeat(96)}`,
    createdAt: 1_700_000_000_000 + seed,
    ...fields,
  };
}

export function proxyStoreConformanceSuite(
  name: string,
  storage: () => Promise<() => Promise<ProxyStore>>,
): void {
  describe(`${name} proxy store`, () => {
    test("a record reads back exactly; an unknown proxy is undefined", async () => {
      const store = await (await storage())();
      const bls = proxyRecord(1);
      const ecdsa = proxyRecord(2, { scheme: "ecdsa" });
      await store.put(bls);
      await store.put(ecdsa);
      expect(await store.get(bls.proxy)).toEqual(bls);
      expect(await store.get(ecdsa.proxy)).toEqual(ecdsa);
      expect(await store.get(proxyRecord(3).proxy)).toBeUndefined();
      await store.close();
    });

    test("a proxy id is stored once: a second put is refused and changes nothing", async () => {
      const store = await (await storage())();
      await store.put(proxyRecord(1));
      await expect(store.put(proxyRecord(1, { module: "beta", sealed: "other" }))).rejects.toThrow(
        "already stored",
      );
      expect(await store.get(proxyRecord(1).proxy)).toEqual(proxyRecord(1));
      await store.close();
    });

    test("malformed records are refused before they are written", async () => {
      const store = await (await storage())();
      const bad: Partial<ProxyRecord>[] = [
        { proxy: `0x${"01".repeat(20)}` }, // an address under scheme bls
        { proxy: `0x${"AB".repeat(48)}` },
        { consensus: "0x1234" },
        { module: "" },
        { delegationSignature: "0x00" },
        { sealed: "" },
      ];
      for (const fields of bad) await expect(store.put(proxyRecord(9, fields))).rejects.toThrow();
      expect(await store.listByModule("alpha")).toEqual([]);
      await store.close();
    });

    test("listByModule: the module's proxies only, oldest first", async () => {
      const store = await (await storage())();
      await store.put(proxyRecord(3, { createdAt: 30 }));
      await store.put(proxyRecord(1, { createdAt: 10, scheme: "ecdsa" }));
      await store.put(proxyRecord(2, { createdAt: 20, module: "beta" }));
      expect((await store.listByModule("alpha")).map((r) => r.createdAt)).toEqual([10, 30]);
      expect((await store.listByModule("beta")).map((r) => r.proxy)).toEqual([
        proxyRecord(2).proxy,
      ]);
      expect(await store.listByModule("gamma")).toEqual([]);
      await store.close();
    });

    test("deleteByConsensus deletes every proxy of that key and only those", async () => {
      const store = await (await storage())();
      await store.put(proxyRecord(1));
      await store.put(proxyRecord(2, { scheme: "ecdsa" }));
      await store.put(proxyRecord(3, { consensus: CONSENSUS_B }));
      expect(await store.deleteByConsensus(CONSENSUS_A)).toBe(2);
      expect(await store.deleteByConsensus(CONSENSUS_A)).toBe(0);
      expect((await store.listByModule("alpha")).map((r) => r.consensus)).toEqual([CONSENSUS_B]);
      await store.close();
    });

    test("two stores on one storage see each other's writes", async () => {
      const open = await storage();
      const [one, two] = [await open(), await open()];
      await one.put(proxyRecord(5));
      expect(await two.get(proxyRecord(5).proxy)).toEqual(proxyRecord(5));
      expect(await two.deleteByConsensus(CONSENSUS_A)).toBe(1);
      expect(await one.get(proxyRecord(5).proxy)).toBeUndefined();
      await Promise.all([one.close(), two.close()]);
    });

    test("a closed store refuses every call", async () => {
      const store = await (await storage())();
      await store.close();
      await store.close();
      await expect(store.get(proxyRecord(1).proxy)).rejects.toThrow("closed");
    });
  });
}
