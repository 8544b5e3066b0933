// Raw BLS signing rate of each backend (blst native, noble pure TypeScript), without HTTP,
// slashing protection or JSON: the physical limit every signing figure is compared with.
//
// For each backend: one process signing on one core, then one process per core all signing at
// once (separate Bun processes: no shared event loop, no worker-thread plumbing). Each process
// imports a key and warms up, reports "ready", and on "go" signs distinct 32-byte messages for a
// fixed time; the figures are ops/s per process (≈ per core) and the total.
//
// Other benches call `measureSignRate("blst", cpus().length, seconds)` to get the raw all-core
// blst rate in the same run (sign-http reports its throughput as a fraction of it).
//
// Environment:
//   BENCH_BLS_SECONDS    signing time per measurement (default 10)
//   BENCH_BLS_PROCESSES  processes of the all-cores measurement (default: the number of cores)
//   BENCH_BLS_BACKENDS   comma-separated subset of blst,noble (default both)
import { cpus } from "node:os";
import type { BlsBackendName } from "../../src/bls/backend";
import { createNobleBackend } from "../../src/bls/noble";
import { loadBlstBackend } from "../../src/bls/select";
import { benchSecret, envInt, envList, load1, printTable, round } from "./support";

export interface SignRate {
  backend: BlsBackendName;
  processes: number;
  seconds: number;
  /** Signatures per second over all processes. */
  total_ops_per_s: number;
  /** total / processes: one process per core. */
  ops_per_s_per_process: number;
  /** Each process's own rate. */
  per_process: number[];
}

const HANDSHAKE_TIMEOUT_MS = 120_000;

/**
 * `processes` separate Bun processes sign with `backend` for `seconds`, all at the same time
 * (they start signing together once every one of them has loaded and warmed up).
 */
export async function measureSignRate(
  backend: BlsBackendName,
  processes: number,
  seconds: number,
): Promise<SignRate> {
  const children = Array.from({ length: processes }, (_, i) =>
    Bun.spawn([process.execPath, import.meta.path, "worker", backend, String(seconds), String(i)], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    }),
  );
  try {
    const outputs = children.map((child) => lines(child.stdout));
    // Wait until every process is warm, then let them all go at once.
    await withTimeout(
      Promise.all(outputs.map((output) => output.next())),
      HANDSHAKE_TIMEOUT_MS,
      "bls workers did not get ready",
    );
    for (const child of children) {
      child.stdin.write("go\n");
      await child.stdin.flush();
    }
    const results = await Promise.all(
      outputs.map(async (output) => {
        const line = (await output.next()).value;
        if (typeof line !== "string") throw new Error("a bls worker ended without a result");
        return JSON.parse(line) as { ops: number; seconds: number };
      }),
    );
    const perProcess = results.map((r) => r.ops / r.seconds);
    const total = perProcess.reduce((a, b) => a + b, 0);
    return {
      backend,
      processes,
      seconds,
      total_ops_per_s: round(total, 1),
      ops_per_s_per_process: round(total / processes, 1),
      per_process: perProcess.map((rate) => round(rate, 1)),
    };
  } finally {
    for (const child of children) child.kill();
    await Promise.all(children.map((child) => child.exited));
  }
}

/** The raw all-core blst signing rate (what sign-http compares its throughput with). */
export function measureBlstAllCores(seconds = 5): Promise<SignRate> {
  return measureSignRate("blst", cpus().length, seconds);
}

export async function bls(): Promise<Record<string, unknown>> {
  const seconds = envInt("BENCH_BLS_SECONDS", 10);
  const processes = envInt("BENCH_BLS_PROCESSES", cpus().length);
  const backends = envList("BENCH_BLS_BACKENDS", ["blst", "noble"]) as BlsBackendName[];
  const rows: Record<string, unknown>[] = [];
  const measurements: SignRate[] = [];
  for (const backend of backends) {
    for (const count of processes > 1 ? [1, processes] : [1]) {
      const loadBefore = load1();
      const rate = await measureSignRate(backend, count, seconds);
      measurements.push(rate);
      rows.push({
        backend,
        processes: count,
        seconds,
        "ops/s total": rate.total_ops_per_s,
        "ops/s per core": rate.ops_per_s_per_process,
        "µs per op per core": round(1e6 / rate.ops_per_s_per_process, 1),
        "load avg before": loadBefore,
      });
    }
  }
  printTable(`raw BLS sign rate (${cpus().length} cores; other load skews these)`, rows);
  const scaling = backends.map((backend) => {
    const one = measurements.find((m) => m.backend === backend && m.processes === 1);
    const all = measurements.find((m) => m.backend === backend && m.processes === processes);
    return {
      backend,
      all_cores_over_one_core:
        one && all && processes > 1 ? round(all.total_ops_per_s / one.total_ops_per_s, 2) : null,
    };
  });
  return { cores: cpus().length, seconds, measurements, scaling };
}

// ─── worker process ──────────────────────────────────────────────────────────────────────────

async function worker(backendName: string, seconds: number, index: number): Promise<void> {
  // Local backends: sign() returns the signature on this thread.
  const backend = backendName === "noble" ? createNobleBackend() : await loadBlstBackend();
  const key = backend.importSecretKey(benchSecret(index));
  const message = new Uint8Array(32);
  const view = new DataView(message.buffer);
  let counter = 0;
  // Warm-up: JIT, lazily built tables.
  const warmEnd = performance.now() + 500;
  while (performance.now() < warmEnd) {
    view.setUint32(0, counter++);
    backend.sign(key, message);
  }
  process.stdout.write("ready\n");
  for await (const line of console) {
    if (line.trim() === "go") break;
  }
  let ops = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  let now = started;
  while (now < end) {
    view.setUint32(0, counter++);
    view.setUint32(4, index);
    backend.sign(key, message);
    ops++;
    now = performance.now();
  }
  process.stdout.write(`${JSON.stringify({ ops, seconds: (now - started) / 1000 })}\n`);
}

async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of stream) {
    pending += decoder.decode(chunk, { stream: true });
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      yield pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
    }
  }
  if (pending !== "") yield pending;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

if (import.meta.main) {
  const [mode, backend = "blst", seconds = "5", index = "0"] = process.argv.slice(2);
  if (mode === "worker") await worker(backend, Number(seconds), Number(index));
  else console.log(await bls());
}
