// The start-up benchmark's stage split and its A/B rounds (startup.ts uses both).
//
// Stages, read off the signer's own log lines (their `ts`, ms resolution, from the spawn; lines are
// logged as each step ends, so a stage is the time between two of them):
//   start_ms       spawn → "BLS backend": the binary's start (runtime, module evaluation), the
//                  configuration, loading blst and its self-test
//   db_pool_ms     → the later of "slashing protection" and "BLS worker pool": the slashing
//                  database opened and the BLS worker threads started (side by side since
//                  issue 40, one after the other before)
//   wiring_ms      → "metrics listening": auth, metrics listener, the key store
//   keys_ms        → "filesystem keys loaded": listing, reading, parsing the key files, the
//                  workers deriving the public keys, the key store filled
//   listen_ms      → "sigil listening": routes, the signing listener
// `help_ms` / `help_cpu_ms` (medians of BENCH_STARTUP_HELP_RUNS runs of `sigil help`) are the
// binary's start alone: the runtime and the evaluation of every module, nothing else.
//
// A/B: SIGIL_BENCH_COMPARE=<binary> runs the `empty` and `raw` cases with that binary too, in
// BENCH_STARTUP_ROUNDS rounds whose order alternates (A B, B A, A B, …), and prints the medians.
import { existsSync } from "node:fs";
import { relative } from "node:path";
import { envInt, percentile, ROOT, round, sortedCopy } from "./support";

export interface Signer {
  command: string[];
  label: string;
}

export interface Stages {
  start_ms?: number;
  db_pool_ms?: number;
  wiring_ms?: number;
  keys_ms?: number;
  listen_ms?: number;
}

/** The `msg` and `ts` (epoch ms) of a JSON log line, or undefined. */
function parseLine(line: string): { msg: string; ts: number } | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const { msg, ts } = JSON.parse(line) as { msg?: string; ts?: string };
    return typeof msg === "string" ? { msg, ts: Date.parse(ts ?? "") } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The stage split of one start (see the top of this file); a stage whose line is missing is
 * absent. A line's time is its own `ts` (a pipe delivers several lines at once), else its arrival.
 */
export function stagesOf(
  signer: { log: readonly string[]; logMs: readonly number[]; spawnedAt: number },
  readyMs: number,
): Stages {
  const at = new Map<string, number>();
  signer.log.forEach((line, i) => {
    const parsed = parseLine(line);
    if (parsed === undefined || at.has(parsed.msg)) return;
    const logged = parsed.ts - signer.spawnedAt;
    at.set(parsed.msg, Number.isFinite(logged) ? logged : (signer.logMs[i] ?? Number.NaN));
  });
  const backend = at.get("BLS backend");
  const dbOpened = at.get("slashing protection");
  const pool = at.get("BLS worker pool");
  const dbPool = dbOpened === undefined ? undefined : Math.max(dbOpened, pool ?? dbOpened);
  const wired = at.get("metrics listening");
  const keys = at.get("filesystem keys loaded");
  const stages: Stages = {};
  const ms = (value: number) => round(value, 0);
  if (backend !== undefined) stages.start_ms = ms(backend);
  if (backend !== undefined && dbPool !== undefined) stages.db_pool_ms = ms(dbPool - backend);
  if (dbPool !== undefined && wired !== undefined) stages.wiring_ms = ms(wired - dbPool);
  if (wired !== undefined && keys !== undefined) stages.keys_ms = ms(keys - wired);
  const listening = at.get("sigil listening") ?? readyMs;
  if (keys !== undefined) stages.listen_ms = ms(listening - keys);
  return stages;
}

/** Medians over `runs` runs of `sigil help`: wall and CPU (user + system) ms. */
export function helpStart(command: readonly string[]): { help_ms: number; help_cpu_ms: number } {
  const runs = Math.max(1, envInt("BENCH_STARTUP_HELP_RUNS", 9));
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const result = Bun.spawnSync([...command, "help"], { stdout: "ignore", stderr: "ignore" });
    wall.push(performance.now() - started);
    if (result.exitCode !== 0)
      throw new Error(`${command.join(" ")} help exited ${result.exitCode}`);
    const usage = result.resourceUsage?.cpuTime;
    cpu.push(usage ? Number(usage.user + usage.system) / 1000 : Number.NaN);
  }
  return { help_ms: round(median(wall), 1), help_cpu_ms: round(median(cpu), 1) };
}

export function median(values: readonly number[]): number {
  return percentile(sortedCopy(values), 50);
}

/** The binary of SIGIL_BENCH_COMPARE, or undefined. */
export function compareSigner(): Signer | undefined {
  const path = process.env.SIGIL_BENCH_COMPARE;
  if (!path) return undefined;
  if (!existsSync(path)) throw new Error(`SIGIL_BENCH_COMPARE=${path} does not exist`);
  const shown = relative(ROOT, path);
  return { command: [path], label: shown.startsWith("..") ? path : shown };
}

/** Round r's order of the signers: A B, then B A, … (so neither always runs first). */
export function roundOrder<T>(signers: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...signers] : [...signers].reverse();
}

/** One row per (case, binary): the median of every numeric column over its rounds. */
export function medianRows(
  rows: readonly Record<string, unknown>[],
  columns: readonly string[],
): Record<string, unknown>[] {
  const groups = new Map<string, Record<string, unknown>[]>();
  for (const row of rows) {
    const key = `${String(row.case)}\u0000${String(row.binary)}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as Record<string, unknown>;
    const out: Record<string, unknown> = {
      case: first.case,
      binary: first.binary,
      rounds: group.length,
    };
    for (const column of columns) {
      const values = group.map((row) => row[column]).filter((v) => typeof v === "number");
      if (values.length > 0) out[column] = round(median(values as number[]), 3);
    }
    return out;
  });
}
