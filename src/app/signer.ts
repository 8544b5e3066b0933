import { StoreGuard } from "../antislashing/guard";
import type { SlashingStore } from "../antislashing/store";
import { WriteHealth } from "../antislashing/write-health";
import type { BlsBackend } from "../bls/backend";
import { type BlsWorkerStats, createPooledBackend, defaultBlsWorkers } from "../bls/pool";
import { loadBlsBackend } from "../bls/select";
import { ConfigProblemsError } from "../config/problems";
import type { Config } from "../config/schema";
import { authenticateWith } from "../http/access";
import { createHttpApp } from "../http/app";
import { corsPolicy } from "../http/cors";
import { requestMeta } from "../http/request-meta";
import type { Route } from "../http/route";
import { authApiHandlers } from "../http/routes/auth-api";
import { healthHandlers } from "../http/routes/health";
import { reloadHandlers } from "../http/routes/reload";
import { sealHandlers } from "../http/routes/seal";
import { signerKeysHandlers } from "../http/routes/signer-keys";
import { signingHandlers } from "../http/routes/signing";
import { statusHandlers } from "../http/routes/status";
import { watermarkHandlers } from "../http/routes/watermarks";
import { type RunningHttpServer, startHttpServer } from "../http/server";
import { bindRoutes } from "../http/table";
import { loadServerTls, type ServerTls } from "../http/tls";
import { KeyInventory } from "../keys/inventory";
import { KeyStore } from "../keys/key-store";
import { hostAllowlist } from "../net/host";
import { type CheckResult, HealthRegistry } from "../observability/health";
import type { Logger } from "../observability/log";
import { createTracer, type Tracer } from "../observability/tracing";
import { CanaryMonitor } from "../signing/canary";
import { JobLimiter } from "../signing/limiter";
import { SigningService } from "../signing/service";
import { VERSION } from "../version";
import { wireAuth } from "./auth";
import type { CommitBoostWiring } from "./commit-boost";
import { wireKeyManager } from "./keymanager";
import { wireKeys } from "./keys";
import { openListener, probeListener } from "./listeners";
import { wireMetrics } from "./metrics";
import {
  configuredNetwork,
  futureBound,
  NOOP_WARNING,
  openSlashingStore,
  schedulePruning,
  slashingHealth,
} from "./slashing";
import { watchWatermarks } from "./watermarks";

export interface RunningSigner {
  readonly http: RunningHttpServer;
  /** Every route the signing listener serves, as declared (for inspection; tests walk it). */
  readonly routes: readonly Route[];
  /** Base URL of the metrics listener (GET /metrics). */
  readonly metricsUrl: string;
  /** Base URL of the Commit-Boost listener, when `commit_boost.enabled`. */
  readonly commitBoostUrl?: string;
  /** Re-reads the key sources in the background (SIGHUP; POST /reload does the same). */
  reloadKeys(trigger: string): void;
  /** Resolves once no key reload runs or waits. */
  keysReloaded(): Promise<void>;
  /** Graceful stop: no new requests, in-flight ones finish within the grace period, resources close. */
  stop(): Promise<{ forced: boolean }>;
}

export interface StartOptions {
  /**
   * `--init-slashing-protection`: create the slashing protection database when it is missing (and
   * bind one that records no chain). Without it a missing database stops start-up.
   */
  readonly initSlashingProtection?: boolean;
}

/** The composition root: the one place that knows which concrete parts make up a signer. */
export async function startSigner(
  config: Config,
  logger: Logger,
  env: Record<string, string | undefined> = process.env,
  options: StartOptions = {},
): Promise<RunningSigner> {
  const log = logger.child("app");
  // Files named by the configuration are checked before anything starts, like the rest of it.
  const tls = serverTls(config);
  // Commit-Boost (ECDSA, keccak, its stores) is loaded only when enabled, as cloud_kv is.
  const commitBoostModule = config.commit_boost.enabled
    ? await import("./commit-boost")
    : undefined;
  const cbTls = commitBoostModule?.commitBoostTls(config);
  // So are the ports: they are bound for real only once the keys have loaded.
  probeListener("server", config.server.listen_address, config.server.listen_port);
  probeListener("metrics", config.metrics.listen_address, config.metrics.listen_port);
  if (config.commit_boost.enabled)
    probeListener(
      "commit_boost",
      config.commit_boost.listen_address,
      config.commit_boost.listen_port,
    );
  if (config.antislashing.backend === "noop") log.warn(NOOP_WARNING);
  // The BLS worker threads start (each loads blst and signs the self-test) while this thread
  // opens the slashing database: neither waits for the other. Awaited below, before any key.
  const blsStarting = startBls(config, logger);
  blsStarting.catch(() => {}); // its failure is thrown where it is awaited
  let bls: RunningBls | undefined;
  let store: SlashingStore | undefined;
  let tracer: Tracer | undefined;
  try {
    // The database first: an unreachable one should fail start-up before slow keystore decryption.
    const opened = await openSlashingStore(config, logger, {
      access: "write",
      initialize: options.initSlashingProtection === true,
      sqliteCheckpoints: "background",
      sqliteThread: true,
    });
    store = opened.store;
    log.info("slashing protection", {
      backend: store.backend,
      strategy: store.strategy,
      database: store.location,
    });
    bls = await blsStarting;
    // Disabled: a no-op, and the OpenTelemetry SDK is never loaded.
    tracer = await createTracer(config.opentelemetry);
    if (tracer.enabled) log.info("tracing", { endpoint: config.opentelemetry.endpoint });
    return await startWithStore(config, logger, bls, store, tracer, env, { tls, cbTls });
  } catch (error) {
    await tracer?.shutdown().catch(() => {});
    await store?.close().catch(() => {});
    // A pool that started (or is still starting) stops too; one that failed has nothing to stop.
    await (bls ?? (await blsStarting.catch(() => undefined)))?.close();
    throw error;
  }
}

function serverTls(config: Config): ServerTls | undefined {
  if (!config.server.tls) return undefined;
  const loaded = loadServerTls(config.server.tls);
  if (!loaded.ok) throw new ConfigProblemsError(loaded.problems);
  return loaded.tls;
}

/** The BLS backend and how to release it (a worker pool's threads). */
interface RunningBls {
  backend: BlsBackend;
  /** Per worker thread; empty when signing on the main thread. */
  workerStats(): BlsWorkerStats[];
  close(): Promise<void>;
}

/** Signs in a worker pool unless `bls.workers` is 0. */
async function startBls(config: Config, logger: Logger): Promise<RunningBls> {
  const log = logger.child("app");
  const { backend, note } = await loadBlsBackend(config.bls.backend);
  if (note) log.warn(note);
  log.info("BLS backend", { backend: backend.name });
  const workers = config.bls.workers ?? defaultBlsWorkers();
  if (workers === 0) {
    log.info("BLS signing on the main thread (bls.workers is 0)");
    return { backend, workerStats: () => [], close: async () => {} };
  }
  const pool = await createPooledBackend(backend, {
    workers,
    backendName: backend.name,
    logger: logger.child("bls"),
  }).catch((error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${reason} (bls.workers: 0 signs on the main thread instead)`);
  });
  log.info("BLS worker pool", { workers, backend: backend.name });
  return { backend: pool, workerStats: () => pool.stats(), close: () => pool.close() };
}

async function startWithStore(
  config: Config,
  logger: Logger,
  running: RunningBls,
  store: SlashingStore,
  tracer: Tracer,
  env: Record<string, string | undefined>,
  { tls, cbTls }: { tls: ServerTls | undefined; cbTls: ServerTls | undefined },
): Promise<RunningSigner> {
  const log = logger.child("app");
  const bls = running.backend;
  const auth = await wireAuth(config, env, logger);
  log.info("auth", { mode: auth.authenticator.mode });
  const authenticate = authenticateWith(auth.authenticator);
  // A removed key leaves the BLS backend too (a pool wipes it in its worker).
  const keys = new KeyStore({ onRemove: (entry) => bls.forget?.(entry.key) });
  const network = configuredNetwork(config);
  const writes = new WriteHealth();
  const stopPruning = schedulePruning(store, config, logger);
  const watermarks = watchWatermarks(store, logger);
  const limiter = new JobLimiter({
    maxConcurrent: config.max_concurrent_signing_jobs,
    maxQueued: config.signing_queue_buffer_size,
  });
  const seal = auth.seal;
  const isUnsealed = () => seal?.isUnsealed() ?? true;
  const metrics = wireMetrics(config, {
    limiter,
    keys,
    logger,
    isUnsealed,
    slashingBackend: store.backend,
    slashingMaintenance: store.maintenance,
    watermarks: () => watermarks.current(),
    blsWorkers: running.workerStats,
    ...(seal && { seal }),
  });
  const health = new HealthRegistry();
  // A full queue means new signing requests are being turned away: not ready for more work.
  health.register("signing_queue", () => {
    const full =
      limiter.running >= config.max_concurrent_signing_jobs &&
      limiter.queued >= config.signing_queue_buffer_size;
    return {
      status: full ? "DOWN" : "UP",
      data: {
        running: limiter.running,
        queued: limiter.queued,
        queue_capacity: config.signing_queue_buffer_size,
      },
    };
  });

  // Loaded only with a seal: cloud_kv brings the AWS DynamoDB client (about 7 ms of start-up).
  const cloudKv = seal
    ? await (await import("./cloud-kv")).wireCloudKv(config, { seal, bls, logger })
    : undefined;
  // One bound for signing and for the history imports bring.
  const bound = futureBound(config, network, logger);
  const keySources = await wireKeys(config, {
    keys,
    bls,
    ...(bound ? { futureBound: bound } : {}),
    slashing: store,
    logger,
    others: cloudKv ? [cloudKv.source] : [],
    onLoad: (loaded) =>
      metrics.recordKeyLoadFailures(
        loaded.failures.map((f) => f.reason),
        loaded.source === "cloud_kv" ? "cloud_kv" : "filesystem",
      ),
  });
  if (keys.count() === 0)
    log.warn("no keys loaded: every sign request will get 404 unknown_pubkey");
  const cloudKvRoutes = cloudKv?.start(keySources.service);
  health.register("keys", () => keySources.health());
  // A sealed signer is alive (/upcheck) but not ready: it cannot sign until operators unseal it
  // (or, before that, initialize it: the state read here says which, and the gate words it so).
  if (seal) {
    health.register("seal", async (): Promise<CheckResult> => {
      const { state } = await seal.status();
      if (seal.isUnsealed()) return { status: "UP", data: { state: "unsealed" } };
      return { status: "DOWN", data: { state, message: seal.closedReason() } };
    });
  }
  health.register("slashing_protection", () => slashingHealth(store, writes));

  const signing = new SigningService({
    keys,
    bls,
    limiter,
    guard: new StoreGuard(store, logger.child("antislashing"), {
      ...(bound ? { futureBound: bound } : {}),
      writes,
    }),
    network,
    canaries: new CanaryMonitor(config.canary_keys, metrics.canaryCounter, logger.child("canary")),
    logger: logger.child("signing"),
    observer: metrics.observer,
    tracer,
  });
  const keyManager = wireKeyManager(config, {
    service: keySources.service,
    logger,
    authMode: auth.authenticator.mode,
  });
  const status = async () => ({
    version: VERSION,
    auth_mode: auth.authenticator.mode,
    seal_state: seal ? (await seal.status()).state : "unsealed",
    keys: { filesystem: keys.count("filesystem"), cloud_kv: keys.count("cloud_kv") },
  });
  const { keygen, writer } = cloudKvRoutes ?? {};
  const routes: Route[] = bindRoutes(
    {
      ...healthHandlers(health),
      ...signingHandlers(signing, tracer),
      ...statusHandlers(status),
      ...watermarkHandlers(() => watermarks.highWatermark()),
      ...keyManager.handlers,
      ...reloadHandlers(keySources.reloader),
      ...signerKeysHandlers({
        inventory: new KeyInventory(keys, cloudKv?.listTable),
        ...(keygen && { keygen: { service: keygen.service, timeoutMs: keygen.limits.timeoutMs } }),
        ...(writer && { writer: { service: writer.service, timeoutMs: writer.limits.timeoutMs } }),
      }),
      ...(auth.admin && authApiHandlers(auth.admin)),
      ...(seal && sealHandlers(seal)),
    },
    {
      ...(keyManager.limits && { key_manager_api: keyManager.limits }),
      ...(keygen && { cloud_kv_keygen: keygen.limits }),
      ...(writer && { cloud_kv_writable: writer.limits }),
    },
  );
  const httpLog = logger.child("http");
  const app = createHttpApp({
    onSigilError: (error, request) => {
      metrics.onErrorCode(error.code);
      if (
        error.code === "unauthorized" ||
        error.code === "invalid_token" ||
        error.code === "forbidden"
      ) {
        httpLog.info("access denied", {
          request_id: requestMeta(request).id,
          path: new URL(request.url).pathname,
          code: error.code,
          reason: error.message,
        });
      }
    },
    routes,
    authenticate,
    isUnsealed,
    ...(seal && { sealedMessage: () => seal.closedReason() }),
    maxBodyBytes: config.server.max_request_body_bytes,
    logger: logger.child("http"),
  });
  const { listen_address: address, listen_port: port } = config.server;
  const http = openListener("server", address, port, () =>
    startHttpServer({
      hostname: address,
      port,
      requestTimeoutMs: config.server.request_timeout_seconds * 1000,
      keepAliveSeconds: config.server.keep_alive_timeout_seconds,
      hostAllowlist: hostAllowlist(config.server.host_allowlist, config.server.listen_address),
      cors: corsPolicy(config.server.cors_allowed_origins),
      tls,
      logger: logger.child("http"),
      dispatch: app.dispatch,
    }),
  );
  if (tls) {
    log.info("https on the signing listener (metrics stay plain http)", {
      certificate: tls.subject,
      expires: tls.notAfter.toISOString(),
      client_certificates: tls.mutual ? "required" : "not requested",
    });
    if (tls.notAfter.getTime() < Date.now())
      log.warn("the server.tls certificate has expired: clients will refuse it");
    for (const warning of tls.warnings) log.warn(warning);
  }
  let commitBoost: CommitBoostWiring | undefined;
  try {
    if (config.commit_boost.enabled)
      commitBoost = await (await import("./commit-boost")).wireCommitBoost(config, {
        keys,
        keyService: keySources.service,
        bls,
        network,
        env,
        ...(seal && { seal }),
        tls: cbTls,
        metrics: metrics.metrics,
        canaryCounter: metrics.canaryCounter,
        tracer,
        logger,
      });
  } catch (error) {
    await http.shutdown(0);
    await metrics.stop();
    throw error;
  }
  log.info("sigil listening", {
    version: VERSION,
    url: http.url,
    network: network.name,
    keys: keys.count(),
  });

  return {
    http,
    routes,
    metricsUrl: metrics.url,
    ...(commitBoost && { commitBoostUrl: commitBoost.url }),
    reloadKeys: (trigger) => keySources.reloader.request(trigger),
    keysReloaded: () => keySources.reloader.idle(),
    async stop() {
      const graceMs = config.server.graceful_shutdown_timeout_seconds * 1000;
      const deadline = Date.now() + graceMs;
      const { forced } = await http.shutdown(graceMs);
      await commitBoost?.stop();
      // Jobs already admitted (a signature being recorded) finish before resources close.
      const idle = await Promise.race([
        limiter.idle().then(() => true),
        Bun.sleep(Math.max(0, deadline - Date.now())).then(() => false),
      ]);
      stopPruning();
      watermarks.stop();
      cloudKv?.stop();
      await metrics.stop();
      // Flushes the spans of the last requests (bounded, so a dead collector cannot hold the stop).
      await tracer.shutdown();
      await auth.close();
      await store.close();
      await keySources.reloader.idle();
      keySources.close();
      await running.close();
      return { forced: forced || !idle };
    },
  };
}
