// What it costs to hand one slashing check to another thread and get its answer back: the piece
// that decides whether several listener threads in front of one serial slashing thread would lift
// one instance's ceiling (docs/performance.md, "Sizing"). Nothing of sigil runs here: a check is
// a check-sized record (pubkey 48 bytes, source and target epochs, signing root 32 bytes), the
// other thread answers it from its epochs, and every answer is checked.
//
// Modes (the "listener" hands checks over, the "slashing" thread answers them):
//   post, 1 in flight         main thread ↔ worker, postMessage of one check object, one at a time
//   post, N in flight         the same with N messages outstanding (a burst)
//   post, batches of N        N checks per message, one message outstanding (a turn's checks)
//   sab+waitAsync, 1 / N      main thread ↔ worker over a SharedArrayBuffer ring: the main thread
//                             (an event loop, as a listener thread has) waits with
//                             Atomics.waitAsync, the worker with Atomics.wait
//   sab+wait, 1 / N           worker ↔ worker over the same ring, both blocking in Atomics.wait
//                             (a listener that may block; Bun's HTTP threads may not)
// Per mode: checks/s, the round trip (p50/p99, µs; sampled), and the CPU of each side per check
// (getrusage(RUSAGE_THREAD): the listener's and the slashing thread's own time, idle waits not
// included). The raw blst signature (one process, one core) comes first for scale.
//
// Environment:
//   BENCH_HANDOFF_CHECKS       checks per mode and round (default 100000)
//   BENCH_HANDOFF_IN_FLIGHT    N above (default 64)
//   BENCH_HANDOFF_ROUNDS       rounds; the medians are printed (default 3)
//   BENCH_HANDOFF_BLS_SECONDS  seconds of the raw blst measurement (default 5; 0 skips it)
//
//   npm run bench handoff
import { measureSignRate } from "./bls";
import { threadCpuMicros } from "./handoff-cpu";
import {
  CHECK_BYTES,
  type Check,
  CONTROL,
  CONTROL_BYTES,
  decide,
  runRingListener,
  type ToWorker,
} from "./handoff-worker";
import { medianRows } from "./startup-stages";
import { envInt, load1, percentile, printTable, round, sortedCopy } from "./support";

interface ModeResult {
  mode: string;
  checks: number;
  checks_per_s: number;
  rtt_p50_us: number;
  rtt_p99_us: number;
  listener_cpu_us_per_check: number;
  slashing_cpu_us_per_check: number;
  load_avg_before: number;
}

const WORKER_URL = new URL("./handoff-worker.ts", import.meta.url).href;

function startWorker(): Worker {
  return new Worker(WORKER_URL);
}

function nextMessage<T>(worker: Worker): Promise<T> {
  return new Promise((resolve) => {
    worker.addEventListener("message", (event) => resolve(event.data as T), { once: true });
  });
}

async function workerCpu(worker: Worker): Promise<number> {
  const reply = nextMessage<{ cpuMicros: number }>(worker);
  worker.postMessage({ type: "stop" });
  return (await reply).cpuMicros;
}

function makeCheck(n: number): Check {
  return {
    pubkey: `0x${(n & 0xff).toString(16).padStart(2, "0").repeat(48)}`,
    source: n,
    target: n + 1,
    root: new Uint8Array(32).fill((n >> 8) & 0xff),
  };
}

function result(
  mode: string,
  checks: number,
  elapsedMs: number,
  latencies: number[],
  listenerCpu: number,
  slashingCpu: number,
  loadBefore: number,
): ModeResult {
  const sorted = sortedCopy(latencies);
  return {
    mode,
    checks,
    checks_per_s: Math.round(checks / (elapsedMs / 1000)),
    rtt_p50_us: round(percentile(sorted, 50) * 1000, 1),
    rtt_p99_us: round(percentile(sorted, 99) * 1000, 1),
    listener_cpu_us_per_check: round(listenerCpu / checks, 2),
    slashing_cpu_us_per_check: round(slashingCpu / checks, 2),
    load_avg_before: loadBefore,
  };
}

/** postMessage from the main thread: `inFlight` single-check messages, or batches of `batch`. */
async function postMode(checks: number, inFlight: number, batch: number): Promise<ModeResult> {
  const worker = startWorker();
  try {
    const ready = nextMessage(worker);
    worker.postMessage({ mode: "post" } satisfies ToWorker);
    await ready;
    const loadBefore = load1();
    const workerBefore = await workerCpu(worker);
    const latencies: number[] = [];
    const sentAt: number[] = [];
    let sent = 0;
    let answered = 0;
    let wrong = 0;
    const cpuBefore = threadCpuMicros();
    const started = performance.now();
    await new Promise<void>((resolve) => {
      const send = () => {
        while (sent < checks && (sent - answered) / batch < inFlight) {
          const size = Math.min(batch, checks - sent);
          const items = Array.from({ length: size }, (_, i) => makeCheck(sent + i));
          sentAt.push(performance.now());
          worker.postMessage(batch === 1 ? items[0] : items);
          sent += size;
        }
      };
      worker.onmessage = (event: MessageEvent<number | number[]>) => {
        const answers = Array.isArray(event.data) ? event.data : [event.data];
        latencies.push(performance.now() - (sentAt[latencies.length] ?? 0));
        for (const answer of answers) {
          if (answer !== decide(answered, answered + 1)) wrong++;
          answered++;
        }
        if (answered >= checks) resolve();
        else send();
      };
      send();
    });
    const elapsed = performance.now() - started;
    const listenerCpu = threadCpuMicros() - cpuBefore;
    worker.onmessage = null;
    const slashingCpu = (await workerCpu(worker)) - workerBefore;
    if (wrong > 0) throw new Error(`${wrong} wrong answers`);
    const mode = batch > 1 ? `post, batches of ${batch}` : `post, ${inFlight} in flight`;
    return result(mode, checks, elapsed, latencies, listenerCpu, slashingCpu, loadBefore);
  } finally {
    worker.terminate();
  }
}

/** The shared ring: control words, `ring` check slots, `ring` reply words. */
function sharedRing(ring: number): SharedArrayBuffer {
  return new SharedArrayBuffer(CONTROL_BYTES + ring * CHECK_BYTES + ring * 4);
}

/** Main thread (Atomics.waitAsync) ↔ a worker blocking in Atomics.wait. */
async function sabAsyncMode(checks: number, inFlight: number): Promise<ModeResult> {
  const ring = Math.max(inFlight, 1);
  const buffer = sharedRing(ring);
  const worker = startWorker();
  try {
    const done = nextMessage<{ served: number; cpuMicros: number }>(worker);
    worker.postMessage({ mode: "sab-slashing", buffer, ring } satisfies ToWorker);
    const loadBefore = load1();
    const run = await runRingListener(buffer, ring, checks, inFlight, (control, answered) => {
      const waited = Atomics.waitAsync(control, CONTROL.replies, answered, 1000);
      return waited.async ? waited.value : undefined;
    });
    const { cpuMicros } = await done;
    if (run.wrong > 0) throw new Error(`${run.wrong} wrong answers`);
    const mode = `sab+waitAsync, ${inFlight} in flight`;
    return result(mode, checks, run.elapsedMs, run.latencies, run.cpuMicros, cpuMicros, loadBefore);
  } finally {
    worker.terminate();
  }
}

/** A listener worker ↔ a slashing worker, both blocking in Atomics.wait. */
async function sabWorkersMode(checks: number, inFlight: number): Promise<ModeResult> {
  const ring = Math.max(inFlight, 1);
  const buffer = sharedRing(ring);
  const listener = startWorker();
  const slashing = startWorker();
  try {
    const slashingDone = nextMessage<{ cpuMicros: number }>(slashing);
    const listenerDone = nextMessage<{
      elapsedMs: number;
      cpuMicros: number;
      latencies: number[];
      wrong: number;
    }>(listener);
    const loadBefore = load1();
    slashing.postMessage({ mode: "sab-slashing", buffer, ring } satisfies ToWorker);
    listener.postMessage({
      mode: "sab-listener",
      buffer,
      ring,
      checks,
      inFlight,
    } satisfies ToWorker);
    const { elapsedMs, cpuMicros, latencies, wrong } = await listenerDone;
    const served = await slashingDone;
    if (wrong > 0) throw new Error(`${wrong} wrong answers`);
    const mode = `sab+wait (workers), ${inFlight} in flight`;
    return result(mode, checks, elapsedMs, latencies, cpuMicros, served.cpuMicros, loadBefore);
  } finally {
    listener.terminate();
    slashing.terminate();
  }
}

export async function handoff(): Promise<Record<string, unknown>> {
  const checks = envInt("BENCH_HANDOFF_CHECKS", 100_000);
  const inFlight = Math.max(2, envInt("BENCH_HANDOFF_IN_FLIGHT", 64));
  const rounds = Math.max(1, envInt("BENCH_HANDOFF_ROUNDS", 3));
  const blsSeconds = envInt("BENCH_HANDOFF_BLS_SECONDS", 5);
  const idleLoad = load1();
  const raw = blsSeconds > 0 ? await measureSignRate("blst", 1, blsSeconds) : undefined;
  const rawRow = raw
    ? {
        raw_blst_sign_per_s_one_core: Math.round(raw.total_ops_per_s),
        raw_blst_us_per_signature: round(1e6 / raw.total_ops_per_s, 1),
        load_avg_before: idleLoad,
      }
    : undefined;
  if (rawRow) printTable("handoff: raw blst, one process on one core (for scale)", [rawRow]);

  const rows: Record<string, unknown>[] = [];
  for (let r = 0; r < rounds; r++) {
    const modes = [
      () => postMode(checks, 1, 1),
      () => postMode(checks, inFlight, 1),
      () => postMode(checks, 1, inFlight),
      () => sabAsyncMode(checks, 1),
      () => sabAsyncMode(checks, inFlight),
      () => sabWorkersMode(checks, 1),
      () => sabWorkersMode(checks, inFlight),
    ];
    for (const mode of modes) {
      const row = await mode();
      rows.push({ case: row.mode, binary: "-", round: r + 1, ...row });
      console.log(
        `  round ${r + 1}, ${row.mode}: ${row.checks_per_s}/s, p50 ${row.rtt_p50_us} µs, ` +
          `CPU per check ${row.listener_cpu_us_per_check} + ${row.slashing_cpu_us_per_check} µs`,
      );
    }
  }
  const columns = [
    "checks_per_s",
    "rtt_p50_us",
    "rtt_p99_us",
    "listener_cpu_us_per_check",
    "slashing_cpu_us_per_check",
    "load_avg_before",
  ];
  const medians = medianRows(rows, columns).map(({ binary: _binary, ...row }) => row);
  printTable(
    `handoff: medians of ${rounds} round(s), ${checks} checks each (CPU µs per check on each side)`,
    medians,
  );
  return { checks, in_flight: inFlight, rounds, raw: rawRow ?? null, rows, medians };
}

if (import.meta.main) await handoff();
