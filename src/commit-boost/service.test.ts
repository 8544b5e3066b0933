import { afterEach, describe, expect, test } from "bun:test";
import { testLogger } from "../../test/support/log-capture";
import { createBlstBackend } from "../bls/blst";
import { SigilError } from "../errors";
import { KeyStore } from "../keys/key-store";
import { fromHex } from "../wire/hex";
import { proxyKek } from "./proxy-seal";
import type { ProxyStore } from "./proxy-store";
import { type CommitBoostModule, CommitBoostService } from "./service";
import { openSqliteProxyStore } from "./store/sqlite";

const bls = createBlstBackend();
const consensus = bls.importSecretKey(fromHex(`0x${"11".repeat(32)}`));
const MODULE = "alpha";
const ROOT = new Uint8Array(32).fill(7);
const logger = testLogger("warn");

const stores: ProxyStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function setup(
  options: {
    kek?: () => Uint8Array | undefined;
    store?: ProxyStore;
    modules?: Record<string, CommitBoostModule>;
  } = {},
) {
  const store = options.store ?? (await openSqliteProxyStore(":memory:"));
  stores.push(store);
  const keys = new KeyStore();
  keys.add({ pubkey: consensus.pubkey, key: consensus, source: "filesystem", readonly: false });
  const kek = proxyKek(new TextEncoder().encode("k".repeat(32)));
  const service = new CommitBoostService({
    keys,
    bls,
    store,
    proxyKek: options.kek ?? (() => kek),
    chain: { chainId: 560048n, genesisForkVersion: fromHex("0x10000910") },
    maxProxiesPerKey: 3,
    modules: new Map([
      [MODULE, { signingId: new Uint8Array(32).fill(1) }],
      ["beta", { signingId: new Uint8Array(32).fill(2) }],
      ...Object.entries(options.modules ?? {}),
    ]),
    logger,
  });
  return { service, store, keys };
}

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "resolved";
  } catch (error) {
    return error instanceof SigilError ? error.code : (error as Error).name;
  }
}

const sign = (service: CommitBoostService, key: string, scheme: "bls" | "ecdsa" = "bls") =>
  service.signProxy(scheme, { module: MODULE, key, objectRoot: ROOT, nonce: 1n });

describe("CommitBoostService", () => {
  test("while sealed (no key-encryption key) no proxy is made or opened", async () => {
    let open = true;
    const kek = proxyKek(new TextEncoder().encode("k".repeat(32)));
    const { service } = await setup({ kek: () => (open ? kek : undefined) });
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "ecdsa");
    service.forgetOpened();
    open = false;
    expect(await code(sign(service, proxy, "ecdsa"))).toBe("sealed");
    expect(await code(service.generateProxy(MODULE, consensus.pubkey, "bls"))).toBe("sealed");
    open = true;
    expect(await code(sign(service, proxy, "ecdsa"))).toBe("resolved");
  });

  test("a proxy signs only while its consensus key is loaded", async () => {
    const { service, keys } = await setup();
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "bls");
    keys.remove(consensus.pubkey);
    expect(await code(sign(service, proxy))).toBe("unknown_pubkey");
    expect(
      await code(
        service.signConsensus({
          module: MODULE,
          key: consensus.pubkey,
          objectRoot: ROOT,
          nonce: 0n,
        }),
      ),
    ).toBe("unknown_pubkey");
  });

  test("deleteProxiesOf: the proxies are gone from the store and from memory", async () => {
    const { service, store } = await setup();
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "bls");
    expect(await code(sign(service, proxy))).toBe("resolved");
    expect(await service.deleteProxiesOf(consensus.pubkey)).toBe(1);
    expect(await store.get(proxy)).toBeUndefined();
    expect(await code(sign(service, proxy))).toBe("unknown_pubkey");
    expect((await service.getPubkeys(MODULE))[0]?.proxyBls).toEqual([]);
  });

  test("another instance's seal key, or a sealed secret moved to another row, does not open", async () => {
    const { service, store } = await setup();
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "ecdsa");
    const other = proxyKek(new TextEncoder().encode("x".repeat(32)));
    const { service: stranger } = await setup({
      store: await openSharedCopy(store),
      kek: () => other,
    });
    expect(await code(sign(stranger, proxy, "ecdsa"))).toBe("ProxySealError");
    const record = await store.get(proxy);
    if (!record) throw new Error("stored proxy missing");
    const moved = { ...record, proxy: `0x${"ee".repeat(20)}` };
    await store.put(moved);
    expect(await code(sign(service, moved.proxy, "ecdsa"))).toBe("ProxySealError");
  });

  test("a module holds at most maxProxiesPerKey proxies per consensus key", async () => {
    const { service } = await setup();
    for (const scheme of ["bls", "ecdsa", "bls"] as const)
      await service.generateProxy(MODULE, consensus.pubkey, scheme);
    expect(await code(service.generateProxy(MODULE, consensus.pubkey, "ecdsa"))).toBe(
      "invalid_request",
    );
    // Another module's count is its own.
    expect(await code(service.generateProxy("beta", consensus.pubkey, "ecdsa"))).toBe("resolved");
  });

  test("a module limited to some keys neither sees nor uses the others", async () => {
    const { service, keys } = await setup({
      modules: { gamma: { signingId: new Uint8Array(32).fill(3), pubkeys: new Set(["0xnone"]) } },
    });
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "bls");
    expect(keys.get(consensus.pubkey)).toBeDefined();
    expect(await service.getPubkeys("gamma")).toEqual([]);
    const asGamma = { module: "gamma", key: consensus.pubkey, objectRoot: ROOT, nonce: 1n };
    expect(await code(service.signConsensus(asGamma))).toBe("unknown_pubkey");
    expect(await code(service.generateProxy("gamma", consensus.pubkey, "bls"))).toBe(
      "unknown_pubkey",
    );
    expect(await code(service.signProxy("bls", { ...asGamma, key: proxy }))).toBe("unknown_pubkey");
  });

  test("a module sees and uses only its own proxies; the scheme must match", async () => {
    const { service } = await setup();
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "bls");
    expect((await service.getPubkeys("beta"))[0]?.proxyBls).toEqual([]);
    expect(
      await code(
        service.signProxy("bls", { module: "beta", key: proxy, objectRoot: ROOT, nonce: 1n }),
      ),
    ).toBe("unknown_pubkey");
    expect(await code(sign(service, proxy, "ecdsa"))).toBe("unknown_pubkey");
  });
});

/** The same records in a second store (what another instance on the database sees). */
async function openSharedCopy(store: ProxyStore): Promise<ProxyStore> {
  const copy = await openSqliteProxyStore(":memory:");
  for (const record of await store.listByModule(MODULE)) await copy.put(record);
  return copy;
}
