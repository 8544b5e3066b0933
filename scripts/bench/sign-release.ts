// The signing service alone (no HTTP, no load generator): sequential ATTESTATION signatures
// through SigningService with the sqlite store (a file in the temp directory, the real fdatasync)
// and a one-worker blst pool, as the signer wires them. It compares the two orders of the record's
// WAL sync and the signature, alternating rounds in one process so that a noisy machine hits both:
//
// - overlapped (the signer): the signature is computed while the sync runs, and released once the
//   sync has succeeded (StoreGuard over the store's stageAttestation);
// - one after the other (before): the same store seen without stageAttestation, so the guard
//   answers only once the record is durable and the signature starts after.
//
// One request at a time, so each latency is commit + sync + signature (or the longer of the last
// two): what a validator client waits for one duty at low load.
//
// Environment:
//   BENCH_RELEASE_REQUESTS   signatures per round (default 2000)
//   BENCH_RELEASE_ROUNDS     rounds per order (default 3)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { StoreGuard } from "../../src/antislashing/guard";
import type { SlashingStore } from "../../src/antislashing/store";
import type { Principal } from "../../src/auth/authenticator";
import { createBlstBackend } from "../../src/bls/blst";
import { createPooledBackend } from "../../src/bls/pool";
import { KeyStore } from "../../src/keys/key-store";
import { CanaryMonitor } from "../../src/signing/canary";
import { JobLimiter } from "../../src/signing/limiter";
import { NETWORKS } from "../../src/signing/network";
import { SigningService } from "../../src/signing/service";
import { attestationBody } from "./sign-body";
import {
  benchLogger,
  benchSecret,
  envInt,
  load1,
  percentile,
  printTable,
  round,
  sortedCopy,
} from "./support";

type Order = "overlapped" | "one after the other";

/** The store with its staged checks hidden: the guard then waits for durability before signing. */
function unstaged(store: SlashingStore): SlashingStore {
  return {
    backend: store.backend,
    strategy: store.strategy,
    location: store.location,
    storedGenesisValidatorsRoot: () => store.storedGenesisValidatorsRoot(),
    bindGenesisValidatorsRoot: (root) => store.bindGenesisValidatorsRoot(root),
    probeWrite: () => store.probeWrite(),
    checkAndInsertBlock: (gvr, proposal) => store.checkAndInsertBlock(gvr, proposal),
    checkAndInsertAttestation: (gvr, vote) => store.checkAndInsertAttestation(gvr, vote),
    importInterchange: (source) => store.importInterchange(source),
    exportInterchange: (pubkeys) => store.exportInterchange(pubkeys),
    databaseWatermarks: () => store.databaseWatermarks(),
    changeWatermarks: (change) => store.changeWatermarks(change),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}

const UNRESTRICTED = async (): Promise<Principal> => ({ kind: "unrestricted", management: false });

export async function signRelease(): Promise<Record<string, unknown>> {
  const requests = envInt("BENCH_RELEASE_REQUESTS", 2000);
  const rounds = envInt("BENCH_RELEASE_ROUNDS", 3);
  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-release-"));
  const logger = benchLogger();
  const store = await openSqliteStore(join(dir, "slashing.sqlite"), { create: true });
  const pool = await createPooledBackend(createBlstBackend(), { workers: 1, backendName: "blst" });
  const keys = new KeyStore();
  const key = pool.importSecretKey(benchSecret(0));
  const pubkey = `0x${Buffer.from(key.publicKey).toHex()}`;
  keys.add({ pubkey, key, source: "filesystem", readonly: true });
  const service = (guardStore: SlashingStore) =>
    new SigningService({
      keys,
      bls: pool,
      limiter: new JobLimiter({ maxConcurrent: 1, maxQueued: 1 }),
      guard: new StoreGuard(guardStore, logger),
      network: NETWORKS.mainnet,
      canaries: new CanaryMonitor([], { increment: () => {} }, logger),
      logger,
    });
  const services: Record<Order, SigningService> = {
    overlapped: service(store),
    "one after the other": service(unstaged(store)),
  };
  const latencies: Record<Order, number[]> = { overlapped: [], "one after the other": [] };
  let epoch = 0;
  const signOnce = async (order: Order) => {
    const signer = services[order];
    epoch++;
    const body = JSON.parse(attestationBody(epoch - 1, epoch, epoch));
    const started = performance.now();
    // Through the service's one door (the parse and the policy check add a few microseconds).
    await signer.handle(UNRESTRICTED, pubkey, async () => body, {
      requestId: "bench",
      deadline: new AbortController().signal,
    });
    latencies[order].push(performance.now() - started);
  };
  const loadBefore = load1();
  try {
    for (let i = 0; i < 200; i++) await signOnce("overlapped"); // warm-up, not counted
    latencies.overlapped = [];
    for (let r = 0; r < rounds; r++) {
      for (const order of ["one after the other", "overlapped"] as const) {
        for (let i = 0; i < requests; i++) await signOnce(order);
      }
    }
  } finally {
    await pool.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const rows = (Object.keys(latencies) as Order[]).map((order) => {
    const sorted = sortedCopy(latencies[order]);
    return {
      order,
      requests: sorted.length,
      p50_ms: round(percentile(sorted, 50), 3),
      p90_ms: round(percentile(sorted, 90), 3),
      p99_ms: round(percentile(sorted, 99), 3),
    };
  });
  printTable("sign-release: one signature at a time, sqlite with fdatasync, one blst worker", rows);
  return { requests_per_round: requests, rounds, load_avg_before: loadBefore, rows };
}
