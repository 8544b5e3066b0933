import type { BlsBackend } from "../bls/backend";
import { commitBoostHandler, startCommitBoostListener } from "../commit-boost/http";
import { AuthFailureLimiter } from "../commit-boost/limiter";
import { commitBoostMetrics } from "../commit-boost/metrics";
import { proxyKek } from "../commit-boost/proxy-seal";
import type { ProxyStore } from "../commit-boost/proxy-store";
import {
  type CommitBoostModule,
  CommitBoostService,
  type ProxySealing,
} from "../commit-boost/service";
import { loadCommitBoostTls } from "../commit-boost/tls";
import { commitBoostChainId } from "../config/commit-boost";
import { ConfigProblemsError } from "../config/problems";
import type { Config } from "../config/schema";
import { resolveSecret } from "../config/validate";
import type { ServerTls } from "../http/tls";
import type { KeyService } from "../keys/key-service";
import type { KeyStore } from "../keys/key-store";
import { hostAllowlist } from "../net/host";
import type { Logger } from "../observability/log";
import type { SignerMetrics } from "../observability/metrics";
import type { Tracer } from "../observability/tracing";
import type { SealService } from "../seal/service";
import type { CanaryCounter } from "../signing/canary";
import type { NetworkConstants } from "../signing/network";
import { fromHex } from "../wire/hex";
import { openListener } from "./listeners";

export interface CommitBoostWiring {
  readonly service: CommitBoostService;
  readonly url: string;
  stop(): Promise<void>;
}

type Env = Record<string, string | undefined>;

function secret(value: string, env: Env): string {
  const resolved = resolveSecret(value, env);
  if (!resolved.ok) throw new Error(`environment variable ${resolved.variable} is not set`);
  return resolved.value;
}

/** `commit_boost.tls` read and checked (ConfigProblemsError), when the listener is on. */
export function commitBoostTls(config: Config): ServerTls | undefined {
  const { enabled, tls } = config.commit_boost;
  if (!enabled || !tls) return undefined;
  const loaded = loadCommitBoostTls(tls);
  if (!loaded.ok) throw new ConfigProblemsError(loaded.problems);
  return loaded.tls;
}

/** The proxy store `commit_boost.proxy_store` names, else a table in signer_state's database. */
async function openProxyStore(config: Config, logger: Logger): Promise<ProxyStore> {
  const settings = config.commit_boost.proxy_store ?? config.signer_state;
  if (settings?.backend === "sqlite") {
    const { openSqliteProxyStore } = await import("../commit-boost/store/sqlite");
    return openSqliteProxyStore(settings.path ?? "./signer_state.sqlite");
  }
  if (settings?.backend === "postgres") {
    const { openPostgresProxyStore } = await import("../commit-boost/store/postgres");
    return openPostgresProxyStore({
      url: settings.url ?? "",
      poolSize: settings.pool_size,
      forceIpv4: settings.force_ipv4,
      logger,
    });
  }
  if (settings?.backend === "dynamodb") {
    const { openDynamoProxyStore } = await import("../commit-boost/store/dynamodb");
    const { createDynamoClient } = await import("../storage/dynamodb/client");
    return openDynamoProxyStore(createDynamoClient(), settings.table ?? "");
  }
  // config check refuses this (commit_boost.proxy_store); a guard for a changed configuration.
  throw new Error("commit_boost.proxy_store: a database is required");
}

/**
 * The Commit-Boost signer API (docs/commit-boost.md), when `commit_boost.enabled`: its proxy
 * store, its own listener, and the hook that deletes a key's proxies with the key.
 */
export async function wireCommitBoost(
  config: Config,
  deps: {
    keys: KeyStore;
    keyService: KeyService;
    bls: BlsBackend;
    network: NetworkConstants;
    env: Env;
    seal?: SealService;
    /** commit_boost.tls as commitBoostTls read it, before anything started. */
    tls: ServerTls | undefined;
    metrics: SignerMetrics;
    /** Counts signatures of canary keys (`canary_keys`), on this listener as on the signing API. */
    canaryCounter: CanaryCounter;
    tracer: Tracer;
    logger: Logger;
  },
): Promise<CommitBoostWiring | undefined> {
  const cb = config.commit_boost;
  if (!cb.enabled) return undefined;
  const log = deps.logger.child("commit_boost");
  const { tls } = deps;
  const chainId = commitBoostChainId(config, deps.network);
  if (chainId === undefined) throw new Error("commit_boost.chain_id: the network gives none");
  const { seal } = deps;
  // Proxies are sealed as their consensus key is protected: the master key on a stateful
  // signer, else the consensus key itself (docs/commit-boost.md, proxy keys).
  const sealing: ProxySealing = seal
    ? {
        by: "master-key",
        kek: () => {
          const master = seal.currentMasterKey();
          return master ? proxyKek(master) : undefined;
        },
      }
    : { by: "consensus-key" };
  const modules = new Map<string, CommitBoostModule>(
    cb.modules.map((m) => [
      m.id,
      {
        signingId: fromHex(m.signing_id.toLowerCase()),
        ...(m.pubkeys && { pubkeys: new Set(m.pubkeys.map((k) => k.toLowerCase())) }),
      },
    ]),
  );
  const secrets = new Map(cb.modules.map((m) => [m.id, secret(m.jwt_secret, deps.env)]));
  const canaries = new Set(config.canary_keys.map((key) => key.toLowerCase()));
  const store = await openProxyStore(config, log);
  try {
    const service = new CommitBoostService({
      keys: deps.keys,
      bls: deps.bls,
      store,
      sealing,
      chain: { chainId, genesisForkVersion: deps.network.genesisForkVersion },
      modules,
      maxProxiesPerKey: cb.max_proxies_per_key,
      logger: log,
      onConsensusSignature: (pubkey, what) => {
        if (!canaries.has(pubkey)) return;
        deps.canaryCounter.increment();
        log.warn("canary key signed", { pubkey, operation: `commit_boost ${what}` });
      },
    });
    const limiter = new AuthFailureLimiter({
      limit: cb.jwt_auth_fail_limit,
      windowMs: cb.jwt_auth_fail_window_seconds * 1000,
      blockMs: cb.jwt_auth_block_seconds * 1000,
    });
    const handle = commitBoostHandler({
      service,
      secrets,
      limiter,
      hostAllowlist: hostAllowlist(cb.host_allowlist, cb.listen_address),
      observer: commitBoostMetrics(deps.metrics.registry, limiter),
      tracer: deps.tracer,
      logger: log,
    });
    const listener = openListener("commit_boost", cb.listen_address, cb.listen_port, () =>
      startCommitBoostListener({
        hostname: cb.listen_address,
        port: cb.listen_port,
        ...(tls ? { tls } : {}),
        handle,
      }),
    );
    // Awaited by the delete: its answer comes once the proxies are gone from the store.
    deps.keyService.onKeyDeleted(async (pubkey) => {
      try {
        await service.deleteProxiesOf(pubkey);
      } catch (error) {
        // They can no longer sign (their consensus key is gone) but stay stored: say so.
        log.error("could not delete the proxies of a deleted key", {
          consensus: pubkey,
          error: String(error),
        });
      }
    });
    log.info("commit-boost signer API listening", {
      url: listener.url,
      chain_id: chainId.toString(),
      modules: cb.modules.map((m) => m.id).join(","),
      proxy_store: store.backend,
      proxies_sealed_by: seal ? "signer_state master key" : "consensus key",
    });
    return {
      service,
      url: listener.url,
      async stop() {
        await listener.stop();
        service.forgetOpened();
        await store.close();
      },
    };
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
}
