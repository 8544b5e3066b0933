// The raw-key part of start-up alone, in-process: `loadFilesystemKeys` over generated `file-raw`
// descriptors into a blst worker pool, as `sigil serve` does, without process start, config or
// HTTP. Made to compare two versions of the loader on a machine others are using: each run is a
// fresh Bun process (cold JIT, as at start-up), and the figure to compare is the CPU time
// (process.cpuUsage, every thread of the process, workers included), which other work on the
// machine inflates far less than the wall time. The median of the runs is reported.
//
//   bun scripts/bench/startup-load.ts
//
// Environment:
//   BENCH_LOAD_KEYS      raw keys (default 10000; comma-separated for several sizes)
//   BENCH_LOAD_RUNS      runs per size, each in a fresh process (default 5)
//   BENCH_LOAD_WORKERS   BLS worker threads (default one per core; 0 = blst on the main thread)
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import type { BlsBackend } from "../../src/bls/backend";
import { createBlstBackend } from "../../src/bls/blst";
import { createPooledBackend } from "../../src/bls/pool";
import { loadFilesystemKeys } from "../../src/keys/filesystem";
import {
  benchLogger,
  envInt,
  envList,
  load1,
  printTable,
  round,
  runJsonChild,
  writeRawKeys,
} from "./support";

interface RunFigures {
  keys: number;
  wall_ms: number;
  cpu_ms: number;
  rss_mib: number;
}

/** The child side: one load of every descriptor in `dir`. */
async function loadOnce(dir: string, workers: number): Promise<RunFigures> {
  const logger = benchLogger();
  const blst = createBlstBackend();
  const pool =
    workers > 0 ? await createPooledBackend(blst, { workers, backendName: "blst" }) : undefined;
  const bls: BlsBackend = pool ?? blst;
  try {
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const result = await loadFilesystemKeys({
      paths: [dir],
      keystoreConcurrency: 32,
      rawConcurrency: 128,
      bls,
      logger,
    });
    const wall = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    if (result.failures.length > 0) {
      throw new Error(`${result.failures.length} keys failed: ${result.failures[0]?.reason}`);
    }
    return {
      keys: result.keys.length,
      wall_ms: round(wall, 1),
      cpu_ms: round((cpu.user + cpu.system) / 1000, 1),
      rss_mib: round(process.memoryUsage().rss / 2 ** 20, 1),
    };
  } finally {
    await pool?.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export async function startupLoad(): Promise<Record<string, unknown>> {
  const sizes = envList("BENCH_LOAD_KEYS", ["10000"]).map(Number);
  const runs = envInt("BENCH_LOAD_RUNS", 5);
  const workers = envInt("BENCH_LOAD_WORKERS", availableParallelism());
  const rows: Record<string, unknown>[] = [];
  for (const size of sizes) {
    const dir = mkdtempSync(join(tmpdir(), "sigil-bench-load-"));
    try {
      writeRawKeys(dir, size);
      const figures: RunFigures[] = [];
      for (let run = 0; run < runs; run++) {
        const loadBefore = load1();
        const got = await runJsonChild<RunFigures>(import.meta.path, [
          "child",
          dir,
          String(workers),
        ]);
        if (got.keys !== size) throw new Error(`loaded ${got.keys} of ${size} keys`);
        figures.push(got);
        console.log(
          `  ${size} keys, run ${run + 1}: ${got.wall_ms} ms wall, ${got.cpu_ms} ms CPU (load ${loadBefore})`,
        );
      }
      const cpu = median(figures.map((f) => f.cpu_ms));
      const wall = median(figures.map((f) => f.wall_ms));
      rows.push({
        keys: size,
        workers,
        runs,
        cpu_ms_median: round(cpu, 0),
        cpu_us_per_key: round((cpu * 1000) / size, 1),
        wall_ms_median: round(wall, 0),
        wall_us_per_key: round((wall * 1000) / size, 1),
        cpu_ms_min: Math.min(...figures.map((f) => f.cpu_ms)),
        rss_mib_median: round(median(figures.map((f) => f.rss_mib)), 0),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  printTable(`raw-key load, in-process, ${availableParallelism()} cores, median of ${runs}`, rows);
  return { rows };
}

if (import.meta.main) {
  const [mode, dir, workers] = process.argv.slice(2);
  if (mode === "child" && dir !== undefined) {
    process.stdout.write(JSON.stringify(await loadOnce(dir, Number(workers))));
    // Workers of a closed pool are gone; nothing else keeps the process, but be explicit.
    process.exit(0);
  } else await startupLoad();
}
