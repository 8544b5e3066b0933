// Start-up of the built binary with many filesystem keys: time from spawning the process to its
// "sigil listening" line (keys loaded, port open), the peak RSS (VmHWM) at that moment, and the
// CPU it used (user + system; cpu_s / ready_s = cores kept busy).
//
// Cases (each from a fresh key directory and a fresh sqlite slashing database):
//   empty      no keys: the fixed cost every other row includes
//   raw        10,000 `file-raw` descriptors
//   pbkdf2     10,000 EIP-2335 keystores, PBKDF2-HMAC-SHA256 c = 262,144
//   scrypt     1,000 EIP-2335 keystores, scrypt n = 2^18 (about 1 s of one core each), and the
//              time extrapolated LINEARLY to 10,000: empty + (scrypt − empty) × 10,000 / 1,000
//              (the peak RSS is not extrapolated: it depends on how many KDFs run at once)
//   raw-large  100,000 `file-raw` descriptors, at each of BENCH_STARTUP_WORKERS (bls.workers);
//              when the binary has the keystore cache, also its first start with the cache on
//              (which writes the raw keys' public-key cache beside it) and the restart that cache
//              serves ("restart with pubkey cache": must log the public-key cache valid with every
//              key from it); then the per-phase breakdown of startup-phases.ts on the same files
//   scrypt-cache  when the binary has `key_sources.filesystem.cache`: the scrypt case started
//              once with the cache on (fills it) and then again ("restart with cache"); each
//              restart must log the cache valid with every key from it
//   cache-10k  the same with 10,000 keystores at scrypt n = 2^10 ("scrypt-light"), measured
//              rather than extrapolated: a restart with a valid cache runs no keystore KDF, and
//              the cache's own KDF is its n = 2^18 floor whatever the keystores use, so the
//              restart does the work of 10,000 standard keystores; the light KDF only makes the
//              first start (which fills the cache) take seconds instead of most of an hour
//
// Keystores are slow to make, so they are generated once (in one process per core: this file
// run as `bun startup.ts gen <kdf> <from> <to>`) with @chainsafe/bls-keystore and cached under
// bench-results/cache/startup-<kdf>.jsonl; a larger count later only generates the missing ones.
// All secrets are deterministic (interop derivation), so are the passwords.
//
// The page cache is warm (the key files were just written): this is a restart, not a cold boot.
//
// Environment (0 skips a case):
//   SIGIL_BENCH_BINARY            signer binary (default dist/sigil; "source" = bun src/main.ts)
//   BENCH_STARTUP_RAW             raw keys (default 10000)
//   BENCH_STARTUP_PBKDF2          PBKDF2 keystores (default 10000)
//   BENCH_STARTUP_SCRYPT          scrypt keystores (default 1000)
//   BENCH_STARTUP_SCRYPT_TARGET   count the scrypt time is extrapolated to (default 10000)
//   BENCH_STARTUP_RAW_LARGE       raw keys of the large case (default 100000)
//   BENCH_STARTUP_WORKERS         bls.workers of the large cases, comma-separated (default: unset,
//                                 one per core); the phase breakdown's hand-over uses the same
//   BENCH_STARTUP_PHASES          0 skips the phase breakdown (default 1)
//   BENCH_STARTUP_CACHE_RESTART   keystores of the cache-10k case (default 10000)
//   BENCH_STARTUP_CACHE_SETTING   JSON for key_sources.filesystem.cache in the cache case, $PATH
//                                 standing for the cache file (default: the first of a path,
//                                 {path}, {enabled: true, path} that `sigil config check` accepts)
//   SIGIL_BENCH_COMPARE           a second binary: the empty and raw cases (and `sigil help`) run
//                                 with both, alternating, and the medians are printed side by side
//   BENCH_STARTUP_ROUNDS          rounds of the empty and raw cases (default 1; 5 for an A/B)
//   BENCH_STARTUP_HELP_RUNS       runs of `sigil help` per binary and round (default 9)
//
// The empty and raw rows also split the time to ready into stages (startup-stages.ts: binary
// start, database and worker pool, wiring, keys, listener) from the signer's own log lines.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join, relative } from "node:path";
import {
  create,
  defaultPbkdfModule,
  defaultScryptModule,
  type IKeystore,
} from "@chainsafe/bls-keystore";
import type { PhaseRow } from "./startup-phases";
import {
  compareSigner,
  helpStart,
  medianRows,
  roundOrder,
  type Signer,
  type Stages,
  stagesOf,
} from "./startup-stages";
import {
  at,
  baseConfig,
  benchSecret,
  CACHE_DIR,
  cpuSeconds,
  envInt,
  envList,
  load1,
  printTable,
  pubkeyHex,
  round,
  runJsonChild,
  signerAccepts,
  signerCommand,
  signerDefaults,
  sourceSchemaHas,
  startSigner,
  threadCpuSeconds,
  vm,
  writeRawKeys,
} from "./support";

/** `scrypt-light`: scrypt at n = 2^10, for the 10,000-keystore restart with the cache (see top). */
type Kdf = "pbkdf2" | "scrypt" | "scrypt-light";
const LIGHT_SCRYPT_N = 2 ** 10;
/** The keys feature's info lines include the `keystore cache` summary the cache cases check. */
const CACHE_LOG_LEVEL = "warn,app=info,keys=info";

/** 1,000 scrypt keystores on a busy single core can take half an hour. */
const READY_TIMEOUT_MS = 3 * 3600_000;

/** Secret numbers of each kind start here, so the key sets never overlap. */
const FIRST_SECRET: Record<Kdf, number> = {
  pbkdf2: 1_000_000,
  scrypt: 2_000_000,
  "scrypt-light": 3_000_000,
};

interface CachedKeystore {
  index: number;
  keystore: IKeystore;
  password: string;
}

interface Row extends Stages {
  case: string;
  /** The binary, when more than one is compared. */
  binary?: string;
  keys: number;
  ready_s: number;
  cpu_s: number;
  /** CPU of the main thread and of the BLS worker threads (the rest: GC and I/O threads). */
  main_cpu_s?: number;
  workers_cpu_s?: number;
  cores_used: number;
  peak_rss_mib: number;
  rss_mib: number;
  load_avg_before: number;
  note?: string;
}

export async function startup(): Promise<Record<string, unknown>> {
  const sizes = {
    raw: envInt("BENCH_STARTUP_RAW", 10_000),
    pbkdf2: envInt("BENCH_STARTUP_PBKDF2", 10_000),
    scrypt: envInt("BENCH_STARTUP_SCRYPT", 1_000),
    scryptTarget: envInt("BENCH_STARTUP_SCRYPT_TARGET", 10_000),
    rawLarge: envInt("BENCH_STARTUP_RAW_LARGE", 100_000),
    cacheRestart: envInt("BENCH_STARTUP_CACHE_RESTART", 10_000),
  };
  /** bls.workers of the large cases; undefined = the signer's default (one per core). */
  const workerCounts: (number | undefined)[] = envList("BENCH_STARTUP_WORKERS", []).map(Number);
  if (workerCounts.length === 0) workerCounts.push(undefined);
  const { command, label } = signerCommand();
  const defaults = signerDefaults(command);
  const cacheDefault = at(defaults, "key_sources.filesystem.cache");
  // The first shape of the setting the binary accepts (the option may have no default).
  const cachePath = join(tmpdir(), "sigil-bench-probe", "keystore-cache");
  const cacheShape = cacheCandidates(cacheDefault, cachePath).find((candidate) =>
    signerAccepts(command, { key_sources: { filesystem: { cache: candidate } } }),
  );
  const hasCache = cacheShape !== undefined;
  if (!hasCache && sourceSchemaHas("key_sources.filesystem.cache")) {
    console.log(
      `note: the sources have key_sources.filesystem.cache but ${label} does not: rebuild to bench it`,
    );
  }
  // Fixtures first (possibly minutes, once), so that no case waits on them.
  const pbkdf2 = sizes.pbkdf2 > 0 ? await cachedKeystores("pbkdf2", sizes.pbkdf2) : [];
  const scrypt = sizes.scrypt > 0 ? await cachedKeystores("scrypt", sizes.scrypt) : [];
  const light =
    hasCache && sizes.cacheRestart > 0
      ? await cachedKeystores("scrypt-light", sizes.cacheRestart)
      : [];

  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-startup-"));
  const rows: Row[] = [];
  const run = async (
    name: string,
    keysDir: string,
    count: number,
    options: {
      /** More settings of key_sources.filesystem. */
      extra?: Record<string, unknown>;
      note?: string;
      /** Throws when the signer's log shows the case did not run as intended. */
      check?: (log: readonly string[]) => void;
      /** `logging.level` instead of the benchmarks' default. */
      logLevel?: string;
      /** bls.workers (unset: the signer's default). */
      workers?: number;
      /** Another binary than the one under test (SIGIL_BENCH_COMPARE). */
      signer?: Signer;
      /** Adds the stage split and the binary's label to the row. */
      stages?: boolean;
    } = {},
  ): Promise<Row> => {
    const { extra = {}, note, check, logLevel, workers } = options;
    const signerUsed = options.signer ?? { command, label };
    const caseDir = join(dir, `run-${rows.length}`);
    mkdirSync(caseDir);
    const loadBefore = load1();
    const signer = await startSigner(
      signerUsed.command,
      join(caseDir, "sigil.yaml"),
      {
        ...baseConfig(),
        ...(logLevel ? { logging: { level: logLevel, format: "json" } } : {}),
        key_sources: { filesystem: { paths: [keysDir], ...extra } },
        ...(workers === undefined ? {} : { bls: { workers } }),
        antislashing: { backend: "sqlite", path: join(caseDir, "slashing.sqlite") },
      },
      READY_TIMEOUT_MS,
    );
    try {
      if (signer.keys !== count) {
        throw new Error(`${name}: the signer loaded ${signer.keys} of ${count} keys`);
      }
      check?.(signer.log);
      const cpu = cpuSeconds(signer.proc.pid);
      const threads = threadCpuSeconds(signer.proc.pid);
      const memory = vm(signer.proc.pid);
      const row: Row = {
        case: name,
        ...(options.stages ? { binary: signerUsed.label } : {}),
        keys: count,
        ready_s: round(signer.readyMs / 1000, 3),
        cpu_s: round(cpu, 2),
        main_cpu_s: round(threads.main, 2),
        workers_cpu_s: round(threads.workers, 2),
        cores_used: round(cpu / (signer.readyMs / 1000), 2),
        peak_rss_mib: memory.peak_rss_mib,
        rss_mib: memory.rss_mib,
        load_avg_before: loadBefore,
        ...(options.stages ? stagesOf(signer, signer.readyMs) : {}),
        ...(note ? { note } : {}),
      };
      rows.push(row);
      const by = options.stages ? ` (${signerUsed.label})` : "";
      console.log(`  ${name}${by}: ready in ${row.ready_s} s, peak RSS ${row.peak_rss_mib} MiB`);
      return row;
    } finally {
      await signer.stop();
    }
  };

  /** The cache's first start (fills it) and the restart it serves, or a row saying it failed. */
  const cacheCases = async (kind: string, keysDir: string, count: number, note?: string) => {
    const setting = JSON.parse(
      JSON.stringify(cacheShape).replaceAll(cachePath, join(dir, `keystore-cache-${rows.length}`)),
    ) as unknown;
    const extra = { cache: setting };
    try {
      await run(`${kind}, cache on, first start`, keysDir, count, {
        extra,
        check: cacheLogged("new", 0),
        logLevel: CACHE_LOG_LEVEL,
      });
      await run(`${kind}, restart with cache`, keysDir, count, {
        extra,
        logLevel: CACHE_LOG_LEVEL,
        note: [`cache: ${JSON.stringify(setting)}`, note].filter(Boolean).join("; "),
        check: cacheLogged("valid", count),
      });
    } catch (error) {
      console.log(`  the cache case failed: ${(error as Error).message.split("\n")[0]}`);
      rows.push({
        case: `${kind}, restart with cache`,
        keys: count,
        ready_s: Number.NaN,
        cpu_s: Number.NaN,
        cores_used: Number.NaN,
        peak_rss_mib: Number.NaN,
        rss_mib: Number.NaN,
        load_avg_before: load1(),
        note: `failed with cache ${JSON.stringify(setting)}: ${(error as Error).message.slice(0, 300)}`,
      });
    }
  };

  /**
   * Raw keys with the cache on: a first start (writes the public-key cache), then the restart it
   * serves, which must log the public-key cache valid with every key from it. A binary without the
   * public-key cache logs nothing about it: the restart is then skipped, said so.
   */
  const pubkeyCacheCases = async (kind: string, keysDir: string, workers?: number) => {
    const setting = JSON.parse(
      JSON.stringify(cacheShape).replaceAll(cachePath, join(dir, `keystore-cache-${rows.length}`)),
    ) as unknown;
    const count = sizes.rawLarge;
    let logged = false;
    await run(`${kind}, cache on, first start`, keysDir, count, {
      extra: { cache: setting },
      workers,
      logLevel: CACHE_LOG_LEVEL,
      check: (log) => {
        logged = log.some((line) => line.includes('"msg":"public-key cache"'));
      },
    });
    if (!logged) {
      console.log(`  ${kind}: this binary has no public-key cache; restart case skipped`);
      return;
    }
    await run(`${kind}, restart with pubkey cache`, keysDir, count, {
      extra: { cache: setting },
      workers,
      logLevel: CACHE_LOG_LEVEL,
      check: pubkeyCacheLogged(count),
    });
  };

  let phases: PhaseRow[] | undefined;
  const compared = compareSigner();
  const signers: Signer[] = [{ command, label }, ...(compared ? [compared] : [])];
  const rounds = Math.max(1, envInt("BENCH_STARTUP_ROUNDS", 1));
  /** `sigil help` per binary and round: the binary's start alone. */
  const helpRows: Record<string, unknown>[] = [];
  try {
    const empty = join(dir, "keys-empty");
    mkdirSync(empty);
    if (sizes.raw > 0) writeRawKeys(join(dir, "keys-raw"), sizes.raw);
    let base: Row | undefined;
    // The stage split needs the keys feature's summary line, and the database's.
    const stageLog = { logLevel: CACHE_LOG_LEVEL, stages: true } as const;
    for (let r = 0; r < rounds; r++) {
      for (const signer of roundOrder(signers, r)) {
        helpRows.push({ case: "sigil help", binary: signer.label, ...helpStart(signer.command) });
        const row = await run("empty", empty, 0, { ...stageLog, signer });
        if (signer.label === label) base ??= row;
        if (sizes.raw > 0)
          await run("raw", join(dir, "keys-raw"), sizes.raw, { ...stageLog, signer });
      }
    }
    if (base === undefined) throw new Error("no empty case ran");
    if (sizes.pbkdf2 > 0) {
      writeKeystores(join(dir, "keys-pbkdf2"), pbkdf2);
      await run("pbkdf2", join(dir, "keys-pbkdf2"), sizes.pbkdf2);
    }
    let extrapolated: Record<string, unknown> | undefined;
    if (sizes.scrypt > 0) {
      writeKeystores(join(dir, "keys-scrypt"), scrypt);
      const measured = await run("scrypt", join(dir, "keys-scrypt"), sizes.scrypt);
      const factor = sizes.scryptTarget / sizes.scrypt;
      const readyS = base.ready_s + (measured.ready_s - base.ready_s) * factor;
      const cpuS = base.cpu_s + (measured.cpu_s - base.cpu_s) * factor;
      extrapolated = {
        from_keys: sizes.scrypt,
        to_keys: sizes.scryptTarget,
        ready_s: round(readyS, 1),
        cpu_s: round(cpuS, 1),
        method: "linear: empty + (scrypt - empty) * to_keys / from_keys; RSS not extrapolated",
      };
      rows.push({
        case: `scrypt → ${sizes.scryptTarget} (extrapolated)`,
        keys: sizes.scryptTarget,
        ready_s: round(readyS, 1),
        cpu_s: round(cpuS, 1),
        cores_used: measured.cores_used,
        peak_rss_mib: Number.NaN,
        rss_mib: Number.NaN,
        load_avg_before: measured.load_avg_before,
        note: `extrapolated linearly from ${sizes.scrypt} keys, not measured`,
      });
      if (hasCache) await cacheCases("scrypt", join(dir, "keys-scrypt"), sizes.scrypt);
    }
    if (light.length > 0) {
      writeKeystores(join(dir, "keys-scrypt-light"), light);
      await cacheCases(
        `scrypt (n = 2^${Math.log2(LIGHT_SCRYPT_N)})`,
        join(dir, "keys-scrypt-light"),
        light.length,
        "the keystores' scrypt is light so that the first start is short; the restart runs no " +
          `keystore KDF, and the cache's own KDF is n = 2^18 (its floor) either way`,
      );
    }
    if (sizes.rawLarge > 0) {
      rmSync(join(dir, "keys-raw"), { recursive: true, force: true });
      console.log(`  writing ${sizes.rawLarge} raw descriptors…`);
      const largeDir = join(dir, "keys-raw-large");
      writeRawKeys(largeDir, sizes.rawLarge);
      for (const workers of workerCounts) {
        const suffix = workers === undefined ? "" : `, ${workers} workers`;
        await run(`raw-large${suffix}`, largeDir, sizes.rawLarge, { workers });
        if (hasCache) await pubkeyCacheCases(`raw-large${suffix}`, largeDir, workers);
      }
      if (envInt("BENCH_STARTUP_PHASES", 1) > 0) {
        const counts = workerCounts.map((w) => w ?? cpus().length);
        console.log("  phase breakdown (startup-phases.ts)…");
        phases = await runJsonChild<PhaseRow[]>(join(import.meta.dir, "startup-phases.ts"), [
          largeDir,
          counts.join(","),
        ]);
      }
    }

    printTable(
      `startup: ${label}, ${cpus().length} cores, warm page cache (extrapolated rows are not measurements)`,
      rows.map(({ note: _note, ...row }) => row),
    );
    const medians = medianRows(
      [...rows.filter((row) => row.binary !== undefined), ...helpRows] as Record<string, unknown>[],
      [
        "ready_s",
        "start_ms",
        "db_pool_ms",
        "wiring_ms",
        "keys_ms",
        "listen_ms",
        "cpu_s",
        "main_cpu_s",
        "workers_cpu_s",
        "peak_rss_mib",
        "load_avg_before",
        "help_ms",
        "help_cpu_ms",
      ],
    );
    printTable(
      `startup stages, medians of ${rounds} round(s)${compared ? ", binaries alternating" : ""} (ms from spawn; startup-stages.ts)`,
      medians,
    );
    for (const row of rows) if (row.note) console.log(`  ${row.case}: ${row.note}`);
    if (phases) {
      printTable(
        `startup phases: ${sizes.rawLarge} raw keys, each phase alone, in-process (startup-phases.ts)`,
        phases.map((row) => ({ ...row })),
      );
    }
    return {
      signer: label,
      cores: cpus().length,
      sizes,
      cache_option: hasCache ? { default: cacheDefault } : "absent",
      cases: rows.map((row) => ({
        ...row,
        peak_rss_mib: Number.isNaN(row.peak_rss_mib) ? null : row.peak_rss_mib,
        rss_mib: Number.isNaN(row.rss_mib) ? null : row.rss_mib,
      })),
      scrypt_extrapolated: extrapolated ?? null,
      phases: phases ?? null,
      rounds,
      compared: compared?.label ?? null,
      help: helpRows,
      medians,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Settings of key_sources.filesystem.cache that turn it on with its file at `path`, most likely
 * first: BENCH_STARTUP_CACHE_SETTING if given, else derived from the default when it has one, else
 * a path, then `{ path }`, then `{ enabled: true, path }`.
 */
function cacheCandidates(defaultValue: unknown, path: string): unknown[] {
  const override = process.env.BENCH_STARTUP_CACHE_SETTING;
  if (override) return [JSON.parse(override.replaceAll("$PATH", path)) as unknown];
  const candidates: unknown[] = [];
  if (typeof defaultValue === "boolean") candidates.push(true);
  if (typeof defaultValue === "object" && defaultValue !== null) {
    const setting: Record<string, unknown> = { ...(defaultValue as Record<string, unknown>) };
    if ("enabled" in setting) setting.enabled = true;
    for (const key of ["path", "file", "dir", "directory"]) if (key in setting) setting[key] = path;
    candidates.push(setting);
  }
  candidates.push(path, { path }, { enabled: true, path }, { file: path });
  return candidates;
}

/** One descriptor + keystore + password file per key (descriptor paths are relative). */
function writeKeystores(dir: string, keystores: readonly CachedKeystore[]): void {
  mkdirSync(dir, { recursive: true });
  for (const { index, keystore, password } of keystores) {
    const name = `ks-${index}`;
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(keystore));
    writeFileSync(join(dir, `${name}.password`), password);
    writeFileSync(
      join(dir, `${name}.yaml`),
      `type: file-keystore\nkeyType: BLS\nkeystoreFile: ${name}.json\nkeystorePasswordFile: ${name}.password\n`,
    );
  }
}

/** The first `count` cached keystores of `kdf`, generating the missing ones (in parallel). */
async function cachedKeystores(kdf: Kdf, count: number): Promise<CachedKeystore[]> {
  const file = join(CACHE_DIR, `startup-${kdf}.jsonl`);
  const read = (): CachedKeystore[] =>
    existsSync(file)
      ? readFileSync(file, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as CachedKeystore)
      : [];
  let cached = read();
  if (cached.length < count) {
    const from = cached.length;
    const processes = Math.min(cpus().length, count - from);
    const started = performance.now();
    console.log(
      `generating ${count - from} ${kdf} keystores in ${processes} processes ` +
        `(once; cached in ${relative(process.cwd(), file)})…`,
    );
    mkdirSync(CACHE_DIR, { recursive: true });
    // Contiguous index ranges, appended in order once all are done: the file stays a prefix.
    const per = Math.ceil((count - from) / processes);
    const parts = await Promise.all(
      Array.from({ length: processes }, (_, i) => {
        const start = from + i * per;
        const end = Math.min(count, start + per);
        return runJsonChild<CachedKeystore[]>(import.meta.path, [
          "gen",
          kdf,
          String(start),
          String(end),
        ]);
      }),
    );
    await appendFile(
      file,
      parts
        .flat()
        .map((entry) => `${JSON.stringify(entry)}\n`)
        .join(""),
    );
    console.log(`  done in ${round((performance.now() - started) / 1000, 1)} s`);
    cached = read();
  }
  return cached.slice(0, count);
}

function kdfModule(kdf: Kdf) {
  if (kdf === "pbkdf2") return defaultPbkdfModule();
  const scrypt = defaultScryptModule();
  if (kdf === "scrypt-light") scrypt.params.n = LIGHT_SCRYPT_N;
  return scrypt;
}

/**
 * Checks the signer's `keystore cache` log line: the state, and how many keys came from the cache
 * (a restart that decrypted the keystores again would measure something else).
 */
function cacheLogged(state: string, fromCache: number): (log: readonly string[]) => void {
  return (log) => {
    const line = log.find((entry) => entry.includes('"msg":"keystore cache"'));
    const fields = line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
    if (fields?.state !== state || fields.fromCache !== fromCache) {
      throw new Error(
        `expected the keystore cache ${state} with ${fromCache} keys from it, ` +
          `the signer logged: ${line ?? "nothing about the cache"}`,
      );
    }
  };
}

/** Checks the `public-key cache` log line of a restart: valid, every raw key from it. */
function pubkeyCacheLogged(fromCache: number): (log: readonly string[]) => void {
  return (log) => {
    const line = log.find((entry) => entry.includes('"msg":"public-key cache"'));
    const fields = line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
    if (fields?.state !== "valid" || fields.fromCache !== fromCache || fields.derived !== 0) {
      throw new Error(
        `expected the public-key cache valid with ${fromCache} keys from it, ` +
          `the signer logged: ${line ?? "nothing about it"}`,
      );
    }
  };
}

/** Generates keystores `from … to - 1` of `kdf` (the child process side of cachedKeystores). */
async function generate(kdf: Kdf, from: number, to: number): Promise<CachedKeystore[]> {
  const out: CachedKeystore[] = [];
  for (let index = from; index < to; index++) {
    const secret = benchSecret(FIRST_SECRET[kdf] + index);
    const password = `sigil-bench-${kdf}-${index}`;
    const pubkey = Buffer.from(pubkeyHex(secret).slice(2), "hex");
    const keystore = await create(
      password,
      secret,
      pubkey,
      `m/12381/3600/${index}/0/0`,
      "sigil startup bench",
      kdfModule(kdf),
    );
    out.push({ index, keystore, password });
  }
  return out;
}

if (import.meta.main) {
  const [mode, kdf, from, to] = process.argv.slice(2);
  if (mode === "gen") {
    process.stdout.write(JSON.stringify(await generate(kdf as Kdf, Number(from), Number(to))));
  } else await startup();
}
