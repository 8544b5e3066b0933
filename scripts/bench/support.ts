// Shared helpers of the bls, sign-http, startup and slashing benchmarks: signer processes from a
// temp config, readiness by the "sigil listening" line, /proc figures, percentiles, fixtures.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { SecretKey } from "@chainsafe/blst";
import { parse as parseYaml } from "yaml";
import { ConfigSchema } from "../../src/config/schema";
import { createLogger, type Logger, parseLogFilter } from "../../src/observability/log";
import { interopSecret } from "../../test/support/interop";

export const ROOT = join(import.meta.dir, "../..");
export const CACHE_DIR = join(ROOT, "bench-results/cache");

/** A non-negative integer from the environment, or the default. */
export function envInt(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text.replaceAll("_", ""));
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}=${text}: expected a number`);
  return value;
}

/** A comma-separated list from the environment (set but empty: none), or the default. */
export function envList(name: string, fallback: readonly string[]): string[] {
  const text = process.env[name];
  if (text === undefined) return [...fallback];
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

export function round(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

/** Nearest-rank percentile of an ascending array (0 when empty). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] ?? 0;
}

export function sortedCopy(values: readonly number[]): Float64Array {
  return Float64Array.from(values).sort();
}

/** The 1-minute load average: other work on the machine skews every figure. */
export function load1(): number {
  return round(loadavg()[0] ?? 0, 2);
}

/** Current and peak resident set of a process, MiB (Linux /proc; VmHWM is the peak). */
export function vm(pid: number): { rss_mib: number; peak_rss_mib: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) =>
    Number(status.match(new RegExp(`${field}:\\s+(\\d+) kB`))?.[1] ?? 0);
  return { rss_mib: round(kib("VmRSS") / 1024, 1), peak_rss_mib: round(kib("VmHWM") / 1024, 1) };
}

let clockTicks: number | undefined;

/** CPU seconds (user + system) a process has used so far (/proc/<pid>/stat fields 14, 15). */
export function cpuSeconds(pid: number): number {
  return cpuSecondsOf(readFileSync(`/proc/${pid}/stat`, "utf8"));
}

/** utime + stime of a /proc stat line (a process's or a thread's), in seconds. */
function cpuSecondsOf(stat: string): number {
  clockTicks ??= Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString()) || 100;
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/**
 * CPU seconds so far per kind of thread of a process: the main thread (its tid is the pid), the
 * BLS workers (blsWorkerTest) and everything else (the slashing and checkpoint threads, JIT, GC,
 * Bun's thread pool; `slashing` is the slashing thread's part of it). "other" is the
 * process's total less the first two, so that it includes threads that have ended: Bun's thread
 * pool starts and stops its threads, and a sum over the live ones missed them.
 */
export function threadCpuSeconds(pid: number): {
  main: number;
  workers: number;
  other: number;
  slashing: number;
} {
  const total = { main: 0, workers: 0, other: 0, slashing: 0 };
  let processSeconds: number | null = null;
  try {
    processSeconds = cpuSecondsOf(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    // Gone: the sum over its threads below is empty as well.
  }
  const threads = signerThreads(pid);
  const isBls = blsWorkerTest(threads);
  for (const { tid, name, stat } of threads) {
    const seconds = cpuSecondsOf(stat);
    if (tid === String(pid)) total.main += seconds;
    else if (isBls(name)) total.workers += seconds;
    else {
      total.other += seconds;
      if (name === "sigil-slashing") total.slashing += seconds;
    }
  }
  if (processSeconds !== null)
    total.other = Math.max(0, processSeconds - total.main - total.workers);
  return total;
}

/** Each thread of `pid` with its name and /proc stat line (threads that end meanwhile left out). */
export function signerThreads(pid: number): { tid: string; name: string; stat: string }[] {
  const threads: { tid: string; name: string; stat: string }[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue; // the thread ended between the listing and the read
    }
    threads.push({ tid, name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), stat });
  }
  return threads;
}

/** What src/os/thread-name.ts names a BLS worker (a binary's own name may start with "sigil-" too). */
const BLS_THREAD_NAME = "sigil-bls";

/**
 * Which threads are BLS workers. Signers that name their threads (src/os/thread-name.ts) call them
 * `sigil-bls`; in an older binary every worker thread is "Worker", which then counts the WAL
 * checkpoint worker (about 1% of the workers' CPU) as a BLS worker too, as those figures always did.
 */
export function blsWorkerTest(threads: readonly { name: string }[]): (name: string) => boolean {
  const named = threads.some((thread) => thread.name === BLS_THREAD_NAME);
  return named ? (name) => name === BLS_THREAD_NAME : (name) => name === "Worker";
}

/**
 * CPU time of the whole machine so far (/proc/stat), in clock ticks: busy (everything but idle and
 * iowait), of which `steal` is time the hypervisor gave the virtual CPUs to someone else.
 */
export function machineCpuTicks(): { busy: number; steal: number; total: number } {
  const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "")
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle + iowait
  return { busy: total - idle, steal: fields[7] ?? 0, total };
}

/** Cores' worth of `kind` between two readings of machineCpuTicks; null over no time. */
export function machineCores(
  before: ReturnType<typeof machineCpuTicks>,
  after: ReturnType<typeof machineCpuTicks>,
  kind: "busy" | "steal",
  cores: number,
): number | null {
  const ticks = after.total - before.total;
  return ticks > 0 ? ((after[kind] - before[kind]) / ticks) * cores : null;
}

// ─── the signer under test ────────────────────────────────────────────────────────────────────

/**
 * How to run sigil: the compiled binary (default dist/sigil, or SIGIL_BENCH_BINARY), or the
 * sources under Bun with SIGIL_BENCH_BINARY=source.
 */
export function signerCommand(): { command: string[]; label: string } {
  const chosen = process.env.SIGIL_BENCH_BINARY ?? join(ROOT, "dist/sigil");
  if (chosen === "source") {
    return { command: [process.execPath, join(ROOT, "src/main.ts")], label: "bun src/main.ts" };
  }
  if (!existsSync(chosen)) {
    throw new Error(
      `${chosen} does not exist: npm run build first ` +
        "(or SIGIL_BENCH_BINARY=source to bench the sources under Bun)",
    );
  }
  const shown = relative(ROOT, chosen);
  return { command: [chosen], label: shown.startsWith("..") ? chosen : shown };
}

/** The effective default configuration of that signer (`sigil config print`), as a plain object. */
export function signerDefaults(command: readonly string[]): Record<string, unknown> {
  const result = Bun.spawnSync([...command, "config", "print"], {
    cwd: "/",
    env: { ...process.env, NO_COLOR: "1" },
  });
  if (result.exitCode !== 0) {
    throw new Error(`${command.join(" ")} config print failed:\n${result.stderr.toString()}`);
  }
  return parseYaml(result.stdout.toString()) as Record<string, unknown>;
}

/**
 * Whether that signer accepts a configuration (`sigil config check`): how a bench finds out if the
 * binary has an option (options without a default do not show in `config print`).
 */
export function signerAccepts(
  command: readonly string[],
  config: Record<string, unknown>,
): boolean {
  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-probe-"));
  try {
    const file = join(dir, "probe.yaml");
    writeFileSync(file, JSON.stringify(config));
    // config check refuses a missing sqlite database, as serve does: the default path's file is
    // there (config check only looks that it exists).
    writeFileSync(join(dir, "slashing_protection.sqlite"), "");
    const result = Bun.spawnSync([...command, "config", "check", "-c", file], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: "1" },
    });
    return result.exitCode === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The value at a dotted path of a plain object (undefined when absent). */
export function at(object: unknown, path: string): unknown {
  let current: unknown = object;
  for (const part of path.split(".")) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** Whether the configuration schema of the SOURCES has a dotted option (a hint to rebuild). */
export function sourceSchemaHas(path: string): boolean {
  let current: unknown = ConfigSchema;
  for (const part of path.split(".")) {
    const properties = (current as { properties?: Record<string, unknown> } | undefined)
      ?.properties;
    if (!properties || !(part in properties)) return false;
    current = properties[part];
  }
  return true;
}

export interface RunningSigner {
  readonly proc: Bun.Subprocess<"ignore", "ignore", "pipe">;
  readonly url: string;
  /** `keys` of the "sigil listening" line. */
  readonly keys: number;
  /** From spawn to the "sigil listening" line. */
  readonly readyMs: number;
  /** Every stderr line so far (kept draining). */
  readonly log: string[];
  /** For each line of `log`, when it arrived: ms from spawn. */
  readonly logMs: number[];
  /** Date.now() at the spawn: a JSON line's own `ts` minus this is when it was logged. */
  readonly spawnedAt: number;
  stop(): Promise<void>;
}

/**
 * Writes `config` (JSON is YAML) to `configPath`, starts `sigil serve -c` on it and resolves once
 * the "sigil listening" line (JSON log format) arrives. Rejects with the log when the process ends
 * first or after `timeoutMs`.
 */
export async function startSigner(
  command: readonly string[],
  configPath: string,
  config: Record<string, unknown>,
  timeoutMs = 30 * 60_000,
  /** `serve`'s arguments beyond `-c`: by default it creates the bench's new database. */
  serveArgs: readonly string[] = ["--init-slashing-protection"],
): Promise<RunningSigner> {
  writeFileSync(configPath, JSON.stringify(config));
  const spawnedAt = Date.now();
  const started = performance.now();
  const proc = Bun.spawn([...command, "serve", "-c", configPath, ...serveArgs], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const log: string[] = [];
  const logMs: number[] = [];
  const ready = new Promise<{ url: string; keys: number; readyMs: number }>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`signer not ready after ${timeoutMs} ms:\n${log.slice(-40).join("\n")}`));
    }, timeoutMs);
    (async () => {
      const decoder = new TextDecoder();
      let pending = "";
      for await (const chunk of proc.stderr) {
        pending += decoder.decode(chunk, { stream: true });
        let newline = pending.indexOf("\n");
        while (newline >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          newline = pending.indexOf("\n");
          if (log.length < 10_000) {
            log.push(line);
            logMs.push(performance.now() - started);
          }
          if (!line.includes('"sigil listening"')) continue;
          const readyMs = performance.now() - started;
          const fields = JSON.parse(line) as { url: string; keys: number };
          clearTimeout(timer);
          resolve({ url: fields.url, keys: fields.keys, readyMs });
        }
      }
      clearTimeout(timer);
      reject(new Error(`signer exited before it was ready:\n${log.slice(-40).join("\n")}`));
    })();
  });
  const { url, keys, readyMs } = await ready;
  return {
    proc,
    url,
    keys,
    readyMs,
    log,
    logMs,
    spawnedAt,
    async stop() {
      proc.kill("SIGTERM");
      const killer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      await proc.exited;
      clearTimeout(killer);
    },
  };
}

/** The parts of a signer config every bench uses: loopback, ephemeral ports, JSON logs. */
export function baseConfig(): Record<string, unknown> {
  return {
    server: { listen_address: "127.0.0.1", listen_port: 0 },
    metrics: { listen_address: "127.0.0.1", listen_port: 0 },
    logging: { level: "warn,app=info", format: "json" },
  };
}

// ─── keys ─────────────────────────────────────────────────────────────────────────────────────

/** Deterministic secret number `index` (the interop key derivation: valid, distinct, public). */
export function benchSecret(index: number): Uint8Array {
  return interopSecret(index);
}

export function pubkeyHex(secret: Uint8Array): string {
  return `0x${Buffer.from(SecretKey.fromBytes(secret).toPublicKey().toBytes()).toString("hex")}`;
}

/**
 * Writes `count` Web3Signer `file-raw` descriptors (one file per key) for secrets
 * `first … first + count - 1` into `dir`; returns the public keys when `withPubkeys`.
 */
export function writeRawKeys(dir: string, count: number, first = 0, withPubkeys = false): string[] {
  mkdirSync(dir, { recursive: true });
  const pubkeys: string[] = [];
  for (let i = 0; i < count; i++) {
    const secret = benchSecret(first + i);
    writeFileSync(
      join(dir, `raw-${first + i}.yaml`),
      `type: file-raw\nkeyType: BLS\nprivateKey: "0x${Buffer.from(secret).toString("hex")}"\n`,
    );
    if (withPubkeys) pubkeys.push(pubkeyHex(secret));
  }
  return pubkeys;
}

// ─── child processes ──────────────────────────────────────────────────────────────────────────

/** Runs `bun <script> …args` to completion; returns its stdout parsed as JSON. */
export async function runJsonChild<T>(script: string, args: readonly string[]): Promise<T> {
  const child = Bun.spawn([process.execPath, script, ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  const text = await new Response(child.stdout).text();
  const code = await child.exited;
  if (code !== 0) throw new Error(`${script} ${args.join(" ")} exited with ${code}`);
  return JSON.parse(text) as T;
}

/** A logger for code run inside a benchmark: warnings and errors only, to standard error. */
export function benchLogger(): Logger {
  const filter = parseLogFilter("warn");
  if (!filter.ok) throw new Error(filter.error);
  return createLogger({
    filter: filter.filter,
    format: "json",
    color: false,
    sink: { write: (line) => console.error(line) },
  });
}

/** console.table, with a title. */
export function printTable(title: string, rows: readonly Record<string, unknown>[]): void {
  console.log(title);
  console.table(rows);
}
