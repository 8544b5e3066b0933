import { afterEach, describe, expect, test } from "bun:test";
import { testLogger } from "../../test/support/log-capture";
import { oracleDomain, oracleSigningRoot } from "../../test/support/oracle";
import type { BlsBackend, BlsSecretKey } from "../bls/backend";
import { createBlstBackend } from "../bls/blst";
import { createNobleBackend } from "../bls/noble";
import { SigilError } from "../errors";
import { KeyStore } from "../keys/key-store";
import { fromHex, toHex } from "../wire/hex";
import { consensusSealKey, openProxySecret, proxyKek } from "./proxy-seal";
import type { ProxyRecord, ProxyStore } from "./proxy-store";
import { type CommitBoostModule, CommitBoostService, type ProxySealing } from "./service";
import { openSqliteProxyStore } from "./store/sqlite";

const bls = createBlstBackend();
const CONSENSUS_SECRET = fromHex(`0x${"11".repeat(32)}`);
const consensus = bls.importSecretKey(CONSENSUS_SECRET);
const other = bls.importSecretKey(fromHex(`0x${"22".repeat(32)}`));
const GENESIS_FORK_VERSION = "0x10000910";
const MODULE = "alpha";
const ROOT = new Uint8Array(32).fill(7);
const logLines: string[] = [];
const logger = testLogger("warn", logLines);

const stores: ProxyStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function setup(
  options: {
    sealing?: ProxySealing;
    store?: ProxyStore;
    modules?: Record<string, CommitBoostModule>;
    /** The backend and consensus keys of this instance (default blst, `consensus`). */
    bls?: BlsBackend;
    keys?: BlsSecretKey[];
  } = {},
) {
  const store = options.store ?? (await openSqliteProxyStore(":memory:"));
  stores.push(store);
  const keys = new KeyStore();
  for (const key of options.keys ?? [consensus])
    keys.add({ pubkey: key.pubkey, key, source: "filesystem", readonly: false });
  const service = new CommitBoostService({
    keys,
    bls: options.bls ?? bls,
    store,
    sealing: options.sealing ?? { by: "consensus-key" },
    chain: { chainId: 560048n, genesisForkVersion: fromHex(GENESIS_FORK_VERSION) },
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
  test("master key: while sealed (no key-encryption key) no proxy is made or opened", async () => {
    let open = true;
    const kek = proxyKek(new TextEncoder().encode("k".repeat(32)));
    const { service } = await setup({
      sealing: { by: "master-key", kek: () => (open ? kek : undefined) },
    });
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

  test("master key: another master key, or a sealed secret moved to another row, does not open", async () => {
    const master = (fill: string) => proxyKek(new TextEncoder().encode(fill.repeat(32)));
    const sealing = (fill: string): ProxySealing => ({ by: "master-key", kek: () => master(fill) });
    const { service, store } = await setup({ sealing: sealing("k") });
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "ecdsa");
    const { service: stranger } = await setup({
      store: await openSharedCopy(store),
      sealing: sealing("x"),
    });
    expect(await code(sign(stranger, proxy, "ecdsa"))).toBe("proxy_key_unusable");
    const { service: twin } = await setup({
      store: await openSharedCopy(store),
      sealing: sealing("k"),
    });
    expect(await code(sign(twin, proxy, "ecdsa"))).toBe("resolved");
    const record = await store.get(proxy);
    if (!record) throw new Error("stored proxy missing");
    const moved = { ...record, proxy: `0x${"ee".repeat(20)}` };
    await store.put(moved);
    expect(await code(sign(service, moved.proxy, "ecdsa"))).toBe("proxy_key_unusable");
  });

  test("consensus key: a second instance loading the same key opens the proxies, with another BLS backend too", async () => {
    const { service, store } = await setup();
    const blsProxy = (await service.generateProxy(MODULE, consensus.pubkey, "bls")).proxy;
    const ecdsaProxy = (await service.generateProxy(MODULE, consensus.pubkey, "ecdsa")).proxy;
    const noble = createNobleBackend();
    const { service: twin } = await setup({
      store: await openSharedCopy(store),
      bls: noble,
      keys: [noble.importSecretKey(CONSENSUS_SECRET)],
    });
    for (const [proxy, scheme] of [
      [blsProxy, "bls"],
      [ecdsaProxy, "ecdsa"],
    ] as const) {
      const here = await sign(service, proxy, scheme);
      const there = await sign(twin, proxy, scheme);
      expect(toHex(there.signature)).toBe(toHex(here.signature));
    }
    // Nothing but the key: an instance without it neither lists nor opens them.
    const { service: stranger } = await setup({
      store: await openSharedCopy(store),
      keys: [other],
    });
    expect(await code(sign(stranger, blsProxy))).toBe("unknown_pubkey");
    expect((await stranger.getPubkeys(MODULE))[0]?.proxyBls).toEqual([]);
  });

  test("consensus key: a row moved to another consensus key or module does not open", async () => {
    const { service, store } = await setup({ keys: [consensus, other] });
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "ecdsa");
    const record = await store.get(proxy);
    if (!record) throw new Error("stored proxy missing");
    for (const edit of [{ consensus: other.pubkey }, { module: "beta" }]) {
      const { service: fresh, store: tampered } = await setup({ keys: [consensus, other] });
      await tampered.put({ ...record, ...edit });
      const moduleId = edit.module ?? MODULE;
      const asModule = { module: moduleId, key: proxy, objectRoot: ROOT, nonce: 1n };
      expect(await code(fresh.signProxy("ecdsa", asModule))).toBe("proxy_key_unusable");
    }
    // The instance that opened it before the row moved does not keep using it either.
    await store.deleteByConsensus(consensus.pubkey);
    await store.put({ ...record, consensus: other.pubkey });
    expect(await code(sign(service, proxy, "ecdsa"))).toBe("proxy_key_unusable");
  });

  test("consensus key: the database and every signature a request gets open nothing", async () => {
    const { service, store } = await setup();
    const { proxy, signature: delegation } = await service.generateProxy(
      MODULE,
      consensus.pubkey,
      "bls",
    );
    const record = (await store.get(proxy)) as ProxyRecord;
    const opensWith = (signature: Uint8Array) => {
      try {
        openProxySecret(consensusSealKey(signature, record), record, record.sealed);
        return true;
      } catch {
        return false;
      }
    };
    // What the row and the API hand out: the delegation, a signature of the tag as object root.
    const tag = new TextEncoder().encode("sigil commit-boost proxy seal v1");
    const requested = await service.signConsensus({
      module: MODULE,
      key: consensus.pubkey,
      objectRoot: tag,
      nonce: 0n,
    });
    expect(opensWith(fromHex(delegation))).toBe(false);
    expect(opensWith(requested.signature)).toBe(false);
    expect(opensWith(bls.sign(other, sealRootOracle()))).toBe(false);
    // Positive control: the documented message, computed by @lodestar/types, signed by the key.
    expect(opensWith(bls.sign(consensus, sealRootOracle()))).toBe(true);
  });

  test("a proxy sealed under the master key does not open on a signer without signer_state", async () => {
    const kek = proxyKek(new TextEncoder().encode("k".repeat(32)));
    const { service, store } = await setup({ sealing: { by: "master-key", kek: () => kek } });
    const { proxy } = await service.generateProxy(MODULE, consensus.pubkey, "bls");
    const { service: stateless } = await setup({ store: await openSharedCopy(store) });
    expect(await code(sign(stateless, proxy))).toBe("proxy_key_unusable");
    // The module is told what it cannot use; the operator's log says why.
    const logged = logLines.filter((line) => line.includes(proxy)).at(-1) ?? "";
    expect(logged).toContain("commit-boost proxy cannot be opened");
    expect(logged).toContain("sealed under the signer_state master key");
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

/** The sealing message of docs/commit-boost.md: "sgPS" domain, genesis fork version, zero root. */
function sealRootOracle(): Uint8Array {
  const tag = new TextEncoder().encode("sigil commit-boost proxy seal v1");
  return oracleSigningRoot(
    tag,
    oracleDomain("0x73675053", GENESIS_FORK_VERSION, `0x${"00".repeat(32)}`),
  );
}

/** The same records in a second store (what another instance on the database sees). */
async function openSharedCopy(store: ProxyStore): Promise<ProxyStore> {
  const copy = await openSqliteProxyStore(":memory:");
  for (const record of await store.listByModule(MODULE)) await copy.put(record);
  return copy;
}
