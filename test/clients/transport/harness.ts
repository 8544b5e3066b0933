/**
 * The transport compatibility suite's harness (issue 24): the real HTTP stacks of the validator
 * clients drive a sigil started as operators run it (`startSigil`: a separate process, from source
 * or SIGIL_TEST_BINARY), with their own connection reuse.
 *
 * Each stack is a small driver program under drivers/, run by its real runtime (node, java, a Go
 * or Rust binary built at test time). The driver is a long-lived process that speaks a line
 * protocol: the harness writes one JSON command per line on its standard input and reads one JSON
 * answer per line from its standard output.
 *
 *   {"op":"batch","base":"http://127.0.0.1:PORT","requests":[{"method","path","body"?,"headers"}],
 *    "concurrency":8,"close":false}
 *     → {"results":[{"status","body","connection","keepAlive","requestId","error"}]}  (in order)
 *   {"op":"version"} → {"version":"…"}
 *   {"op":"exit"}    → the driver exits (so does the end of its standard input)
 *
 * `close` makes the driver ask for `Connection: close` the way its stack allows. `error` is a
 * transport error (reset, hang-up, EOF, timeout), reported per request, never retried by the
 * driver itself (a stack's own built-in retry is part of what is tested). The driver keeps its
 * client, and so its connection pool, across commands: that is how requests cross sigil's idle
 * timeout (the harness sleeps between batches) and a graceful restart (the harness restarts sigil
 * on the same port between batches).
 *
 * Connections are counted on sigil's side: with `logging.level: info,http=debug` it logs one line
 * per request with `request_id` (also in the response's x-request-id) and `client_port`, the TCP
 * source port of the client. Distinct ports are distinct connections.
 *
 * Every process started here (signers, drivers, builds) is registered and killed in afterAll if a
 * test did not stop it: a test that times out leaves nothing behind. A stack whose toolchain is
 * missing fails with a one-line reason naming what to install, unless SIGIL_TRANSPORT_SKIP names
 * it (then its tests are skipped, and the reason printed).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { type RunningSigil, startSigil, TempDir } from "../../support/cli";
import { verifiesAgainstOracle } from "../../support/oracle";
import { freePort, type PostgresServer, startPostgres } from "../../support/postgres";
import { attestationRequest, INTEROP_KEYS, postSign } from "../../support/slashing";

export const REPO_ROOT = resolve(import.meta.dir, "../../..");
export const DRIVERS = join(import.meta.dir, "drivers");
const KEYS_DIR = join(REPO_ROOT, "examples/keys");

export type StackId = "node-http" | "node-fetch" | "java" | "go" | "rust" | "curl";
export const SKIP_ENV = "SIGIL_TRANSPORT_SKIP";

/**
 * The idle-timeout scenario's `server.keep_alive_timeout_seconds`, and the sleep between its
 * batches. Bun's idle timer ticks every 4 s, so any setting from 1 to 4 closes an idle connection
 * about 4 s after its last answer (5 closes it after 8 s): 6 s is past it. Not 2: undici (Node's
 * fetch, Lodestar) retires a socket 2 s before the announced timeout, so with `timeout=2` it never
 * reuses a connection at all, and the scenario would not take a pooled connection across the idle
 * time. With 4, Node's http Agent keeps a socket 3 s and undici 2 s; Java, Go, reqwest and curl do
 * not read the hint, and meet connections sigil has closed.
 */
export const IDLE_KEEP_ALIVE_SECONDS = 4;
export const IDLE_SLEEP_MS = 6_000;
/** Generous: the first test of a file also builds its driver (cargo: up to a minute on 2 cores). */
export const TEST_TIMEOUT_MS = 300_000;
const COMMAND_TIMEOUT_MS = 120_000;
const SIGNER_STOP_TIMEOUT_MS = 30_000;

// ---- Toolchains and opting out ----

/** A toolchain this stack needs is not installed: the message says what to install. */
export class MissingTool extends Error {}

/** The developer's explicit opt-out for this stack, from SIGIL_TRANSPORT_SKIP=go,rust (or "all"). */
export function optOut(id: StackId): string | undefined {
  const names = (process.env[SKIP_ENV] ?? "")
    .split(/[\s,]+/)
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  if (!names.includes(id) && !names.includes("all")) return undefined;
  return `${id} skipped: ${SKIP_ENV}=${process.env[SKIP_ENV]} (CI runs every stack)`;
}

/** The command's path, or MissingTool with the install hint. */
export function requireCommand(command: string, install: string, id: StackId): string {
  const path = Bun.which(command) ?? fallbackPath(command);
  if (!path) {
    throw new MissingTool(
      `${command} is not installed: ${install} (or set ${SKIP_ENV}=${id} to skip this stack)`,
    );
  }
  return path;
}

/** rustup installs cargo under ~/.cargo/bin, which a non-login shell may not have on PATH. */
function fallbackPath(command: string): string | undefined {
  const home = process.env.HOME;
  if (!home) return undefined;
  const candidate = join(home, ".cargo/bin", command);
  return existsSync(candidate) ? candidate : undefined;
}

// ---- Process bookkeeping: nothing outlives the test file ----

interface Killable {
  kill(): void;
}

/**
 * What one test file started: processes (killed in afterAll if a test did not stop them, e.g.
 * after a timeout), its temporary directory and its PostgreSQL server. `createLab()` registers the
 * afterAll; each test file makes its own (module state is not shared between files on purpose).
 */
export class Lab {
  readonly dir = new TempDir();
  readonly #live = new Set<Killable>();
  #closing = false;
  #postgres: Promise<PostgresServer> | undefined;
  readonly #beforeClose: (() => Promise<void>)[] = [];

  /** Runs first when the lab closes (a graceful stop before the kills). */
  beforeClose(step: () => Promise<void>): void {
    this.#beforeClose.push(step);
  }

  track<T extends Killable>(resource: T): T {
    if (this.#closing) {
      resource.kill();
      throw new Error("the test file is finishing: no new process");
    }
    this.#live.add(resource);
    return resource;
  }

  untrack(resource: Killable): void {
    this.#live.delete(resource);
  }

  get closing(): boolean {
    return this.#closing;
  }

  /** A fresh database on this file's PostgreSQL server (started on first use). */
  async freshPostgresDatabase(): Promise<string> {
    this.#postgres ??= startPostgres();
    return await (await this.#postgres).createDatabase();
  }

  async close(): Promise<void> {
    this.#closing = true;
    for (const step of this.#beforeClose) await step().catch(() => {});
    for (const resource of [...this.#live]) resource.kill();
    this.#live.clear();
    const server = await this.#postgres?.catch(() => undefined);
    await server?.stop();
    this.dir.remove();
  }
}

/** A Lab for this test file, closed in afterAll. */
export function createLab(): Lab {
  const lab = new Lab();
  afterAll(() => lab.close());
  return lab;
}

/** The promise's value, or `null` once `ms` have passed (the timer is cleared either way). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * SIGKILL to a process we started and its process group (it was spawned detached, so it leads
 * one), unless it has already exited and been reaped: its id could then belong to someone else.
 */
function killGroup(proc: Subprocess): void {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  try {
    process.kill(-proc.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** Runs a command to completion in its own process group, killed (group and all) at the deadline. */
export async function runCommand(
  lab: Lab,
  command: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs: number },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(command, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  const handle = lab.track({ kill: () => killGroup(proc) });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(proc);
  }, options.timeoutMs);
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    if (timedOut) {
      throw new Error(
        `${command.join(" ")} did not finish within ${options.timeoutMs / 1000} s:\n${stderr}`,
      );
    }
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
    lab.untrack(handle);
  }
}

// ---- Drivers ----

export interface DriverRequest {
  method: "GET" | "POST";
  path: string;
  body?: string;
  headers: Record<string, string>;
}

export interface DriverResult {
  status: number | null;
  body: string | null;
  connection: string | null;
  keepAlive: string | null;
  requestId: string | null;
  error: string | null;
}

export interface BatchOptions {
  concurrency: number;
  close?: boolean;
}

/** A running driver process and its line protocol. */
export class Driver {
  readonly #proc: Subprocess<"pipe", "pipe", "pipe">;
  readonly #lines: string[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #stderr = "";
  readonly #handle: Killable;
  readonly #lab: Lab;

  private constructor(
    readonly name: string,
    proc: Subprocess<"pipe", "pipe", "pipe">,
    lab: Lab,
  ) {
    this.#proc = proc;
    this.#lab = lab;
    this.#handle = lab.track({ kill: () => killGroup(proc) });
    void this.#pump();
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stderr) {
        this.#stderr = (this.#stderr + decoder.decode(chunk, { stream: true })).slice(-8_000);
      }
    })().catch(() => {});
  }

  static start(lab: Lab, name: string, command: string[], options: { cwd?: string } = {}) {
    const proc = Bun.spawn(command, {
      cwd: options.cwd ?? DRIVERS,
      env: { ...process.env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
    return new Driver(name, proc, lab);
  }

  async #pump(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of this.#proc.stdout) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let newline = buffer.indexOf("\n"); newline >= 0; newline = buffer.indexOf("\n")) {
          this.#lines.push(buffer.slice(0, newline));
          buffer = buffer.slice(newline + 1);
        }
        this.#wake?.();
      }
    } finally {
      this.#ended = true;
      this.#wake?.();
    }
  }

  async #nextLine(timeoutMs: number, what: string): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.#lines.shift();
      if (line !== undefined) return line;
      if (this.#ended) {
        const code = await this.#proc.exited;
        throw new Error(`${this.name} driver exited (${code}) during ${what}:\n${this.#stderr}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        this.kill();
        throw new Error(
          `${this.name} driver did not answer ${what} within ${timeoutMs / 1000} s (killed):\n${this.#stderr}`,
        );
      }
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, left);
        this.#wake = () => {
          clearTimeout(timer);
          wake();
        };
      });
      this.#wake = undefined;
    }
  }

  async call(command: Record<string, unknown>, timeoutMs = COMMAND_TIMEOUT_MS) {
    this.#proc.stdin.write(`${JSON.stringify(command)}\n`);
    await this.#proc.stdin.flush();
    const line = await this.#nextLine(timeoutMs, `op ${String(command.op)}`);
    let answer: Record<string, unknown>;
    try {
      answer = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(
        `${this.name} driver answered a line that is not JSON: ${line.slice(0, 500)}`,
      );
    }
    if (typeof answer.error === "string") throw new Error(`${this.name} driver: ${answer.error}`);
    return answer;
  }

  async version(): Promise<string> {
    return String((await this.call({ op: "version" })).version);
  }

  async batch(base: string, requests: DriverRequest[], options: BatchOptions) {
    const answer = await this.call({
      op: "batch",
      base,
      requests,
      concurrency: options.concurrency,
      close: options.close ?? false,
    });
    const results = answer.results as DriverResult[];
    if (!Array.isArray(results) || results.length !== requests.length) {
      throw new Error(
        `${this.name} driver answered ${results?.length} results for ${requests.length} requests`,
      );
    }
    return results;
  }

  kill(): void {
    killGroup(this.#proc);
    this.#lab.untrack(this.#handle);
  }

  /** Asks the driver to exit; kills it if it has not within 10 s. */
  async stop(): Promise<void> {
    try {
      this.#proc.stdin.write('{"op":"exit"}\n');
      await this.#proc.stdin.flush();
      this.#proc.stdin.end();
    } catch {
      // Already gone.
    }
    await within(this.#proc.exited, 10_000);
    this.kill();
  }
}

// ---- The signer ----

export type SlashingDb = { sqlite: string } | { postgres: string };

export interface SignerOptions {
  /** Fixed port (a restart reuses it); default a free one. */
  port?: number;
  keepAliveSeconds?: number;
  db: SlashingDb;
}

/** One sigil process, with its request log (request_id → client_port). */
export class Signer {
  private constructor(
    readonly sigil: RunningSigil,
    private readonly lab: Lab,
    private readonly handle: Killable,
  ) {}

  static async start(lab: Lab, options: SignerOptions): Promise<Signer> {
    const db =
      "sqlite" in options.db
        ? `{backend: sqlite, path: ${JSON.stringify(options.db.sqlite)}}`
        : `{backend: postgres, url: ${JSON.stringify(options.db.postgres)}, pool_size: 8}`;
    const config = lab.dir.file(
      `sigil-${crypto.randomUUID()}.yaml`,
      [
        "server:",
        "  listen_address: 127.0.0.1",
        `  listen_port: ${options.port ?? 0}`,
        `  keep_alive_timeout_seconds: ${options.keepAliveSeconds ?? 120}`,
        "network: mainnet",
        "bls: {backend: blst}",
        `key_sources: {filesystem: {paths: [${JSON.stringify(KEYS_DIR)}]}}`,
        `antislashing: ${db}`,
        // One debug line per request from target http: request_id and client_port.
        'logging: {level: "info,http=debug", format: json}',
        "",
      ].join("\n"),
    );
    if (lab.closing) throw new Error("the test file is finishing: no new signer");
    // A fresh database each file: created by the signer itself (an existing one is only opened).
    const sigil = await startSigil(["serve", "-c", config, "--init-slashing-protection"]);
    const handle = lab.track({ kill: () => sigil.process.kill("SIGKILL") });
    return new Signer(sigil, lab, handle);
  }

  get url(): string {
    return this.sigil.url;
  }

  get port(): number {
    return Number(new URL(this.sigil.url).port);
  }

  /** sigil's log records (JSON lines) so far. */
  records(): Record<string, unknown>[] {
    const records: Record<string, unknown>[] = [];
    for (const line of this.sigil.stderrText().split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        records.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // A line still being written.
      }
    }
    return records;
  }

  /**
   * The client port of each request id, waiting (up to 10 s) for the log lines: sigil writes the
   * line before the response, but the harness reads its standard error asynchronously.
   */
  async clientPorts(requestIds: readonly string[]): Promise<number[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ports = new Map<string, number>();
      for (const record of this.records()) {
        if (record.msg === "request" && typeof record.client_port === "number") {
          ports.set(String(record.request_id), record.client_port);
        }
      }
      const missing = requestIds.filter((id) => !ports.has(id));
      if (missing.length === 0) return requestIds.map((id) => ports.get(id) ?? -1);
      if (Date.now() > deadline) {
        throw new Error(
          `sigil logged no request line (with client_port) for ${missing.length} request ids, e.g. ${missing.slice(0, 3).join(", ")}`,
        );
      }
      await Bun.sleep(20);
    }
  }

  /** Waits (up to 10 s) for a log record that `match` accepts. */
  async waitForRecord(
    what: string,
    match: (record: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const found = this.records().find(match);
      if (found) return found;
      if (Date.now() > deadline) {
        throw new Error(`sigil did not log ${what} within 10 s:\n${this.sigil.stderrText()}`);
      }
      await Bun.sleep(20);
    }
  }

  /** SIGTERM and the exit code; SIGKILL if it has not exited within 30 s. */
  async stop(): Promise<number> {
    this.sigil.process.kill("SIGTERM");
    return await this.exited();
  }

  /** The exit code, after a signal sent elsewhere; SIGKILL after 30 s. */
  async exited(): Promise<number> {
    const code = await within(this.sigil.process.exited, SIGNER_STOP_TIMEOUT_MS);
    this.lab.untrack(this.handle);
    if (code === null) {
      this.sigil.process.kill("SIGKILL");
      throw new Error(`sigil did not exit within ${SIGNER_STOP_TIMEOUT_MS / 1000} s of SIGTERM`);
    }
    return code;
  }
}

// ---- Sign requests ----

export interface SignJob {
  readonly pubkey: string;
  readonly signingRoot: string;
  readonly request: DriverRequest;
}

export const JSON_HEADERS = { "content-type": "application/json", accept: "application/json" };

/**
 * ATTESTATION requests for the interop keys, round robin. Every key's target epochs only rise and
 * the source stays at 0, so no request is slashable whatever order concurrent requests reach the
 * database in, once each key has one record below them all (`seed`).
 */
export class Attestations {
  #target = 0;
  #salt = 0;

  /** Signs one attestation per key through Bun's fetch, below every later target (EIP-3076's low watermark). */
  async seed(signer: Signer): Promise<void> {
    this.#target += 1;
    for (const pubkey of INTEROP_KEYS) {
      this.#salt += 1;
      const { body } = attestationRequest(0, this.#target, this.#salt);
      const response = await postSign(signer.url, pubkey, body);
      expect(response.status, await response.clone().text()).toBe(200);
    }
  }

  next(count: number): SignJob[] {
    const jobs: SignJob[] = [];
    for (let i = 0; i < count; i++) {
      const pubkey = INTEROP_KEYS[i % INTEROP_KEYS.length] as string;
      if (i % INTEROP_KEYS.length === 0) this.#target += 1;
      this.#salt += 1;
      const { body, message } = attestationRequest(0, this.#target, this.#salt);
      jobs.push({
        pubkey,
        signingRoot: message.signingRoot,
        request: {
          method: "POST",
          path: `/api/v1/eth2/sign/${pubkey}`,
          body: JSON.stringify(body),
          headers: { ...JSON_HEADERS },
        },
      });
    }
    return jobs;
  }
}

/** What went wrong with each result, one line per problem; empty when every request signed. */
export function signingProblems(jobs: readonly SignJob[], results: readonly DriverResult[]) {
  const problems: string[] = [];
  results.forEach((result, index) => {
    const job = jobs[index];
    const label = `request ${index} (${job?.request.method} ${job?.request.path.slice(0, 40)}…)`;
    if (result.error !== null) {
      problems.push(`${label}: transport error: ${result.error}`);
      return;
    }
    if (result.status !== 200) {
      problems.push(`${label}: status ${result.status}: ${result.body?.slice(0, 200)}`);
      return;
    }
    let signature: unknown;
    try {
      signature = (JSON.parse(result.body ?? "") as { signature?: unknown }).signature;
    } catch {
      signature = undefined;
    }
    if (typeof signature !== "string") {
      problems.push(`${label}: no signature in ${result.body?.slice(0, 200)}`);
    } else if (!job || !verifiesAgainstOracle(job, signature)) {
      problems.push(`${label}: the signature does not verify against the oracle's signing root`);
    }
  });
  return problems;
}

/** Transport errors and non-200 statuses of plain (non-signing) requests. */
export function statusProblems(results: readonly DriverResult[], expected = 200): string[] {
  return results.flatMap((result, index) =>
    result.error !== null
      ? [`request ${index}: transport error: ${result.error}`]
      : result.status !== expected
        ? [`request ${index}: status ${result.status}: ${result.body?.slice(0, 200)}`]
        : [],
  );
}

export const distinct = (values: readonly number[]): number => new Set(values).size;

/** The request ids of results (all present: every response carries x-request-id). */
export function requestIds(results: readonly DriverResult[]): string[] {
  return results.map((result, index) => {
    if (!result.requestId) throw new Error(`response ${index} has no x-request-id`);
    return result.requestId;
  });
}

// ---- PostgreSQL for the restart scenario ----

/**
 * Holds every new slashing check of a postgres-backed signer: a transaction that locks sigil's
 * validator and attestation tables, so each check's statement waits in PostgreSQL while its HTTP
 * request stays in flight in sigil. That makes "SIGTERM while requests are in flight" exact
 * instead of a race with signing that takes a millisecond.
 */
export async function holdSlashingChecks(url: string) {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const held = await sql.reserve();
  await held`BEGIN`;
  await held`LOCK TABLE sigil_validators, sigil_signed_attestations IN EXCLUSIVE MODE`;
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    try {
      await held`COMMIT`;
    } finally {
      held.release();
      await sql.end({ timeout: 5 });
    }
  };
  return {
    /** Waits (up to 20 s) until `count` slashing checks are waiting for the lock. */
    async waitForWaiting(count: number): Promise<void> {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const [row] = await sql<{ waiting: number }[]>`
          SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'
            AND query ILIKE '%sigil_check%'`;
        if ((row?.waiting ?? 0) >= count) return;
        if (Date.now() > deadline) {
          throw new Error(`only ${row?.waiting} of ${count} slashing checks reached PostgreSQL`);
        }
        await Bun.sleep(20);
      }
    },
    release,
  };
}

// ---- The scenarios, for a stack with a long-lived driver ----

export interface DriverStack {
  readonly id: StackId;
  /** "Go net/http" */
  readonly title: string;
  /** The validator client that uses this stack. */
  readonly client: string;
  /**
   * Checks the toolchain (MissingTool with an install hint), builds what needs building into the
   * lab's directory, and returns the command that starts the driver, and any versions to print
   * beyond the driver's own.
   */
  prepare(lab: Lab): Promise<{ command: string[]; versions?: string[] }>;
}

/**
 * The scenarios of docs/clients.md "Transport compatibility", for one stack: sequential and
 * concurrent keep-alive, Connection: close, across the idle timeout, and across a graceful
 * restart with requests in flight. About 350 signing requests in all.
 *
 * The idle-timeout scenario spends its time asleep, so the file's first test starts it in the
 * background (its own signer, its own driver process) and its own test awaits it: the other
 * scenarios run meanwhile. Run alone (`-t idle`), its test starts it.
 */
export function driverSuite(stack: DriverStack): void {
  const skipped = optOut(stack.id);
  if (skipped) console.log(`transport: ${skipped}`);
  const lab = createLab();
  let prepared: Promise<{ command: string[]; versions?: string[] }> | undefined;
  let shared: Promise<{ signer: Signer; attestations: Attestations }> | undefined;
  let idle: Promise<void> | undefined;
  const prepare = () => {
    prepared ??= stack.prepare(lab);
    return prepared;
  };
  const withDriver = async (body: (driver: Driver) => Promise<void>) => {
    const driver = Driver.start(lab, stack.id, (await prepare()).command);
    try {
      await body(driver);
    } finally {
      await driver.stop();
    }
  };
  /** One sqlite-backed signer (keep-alive 120 s) for the scenarios that do not restart it. */
  const sharedSigner = () => {
    shared ??= (async () => {
      const signer = await Signer.start(lab, {
        db: { sqlite: join(lab.dir.path, "shared.sqlite") },
      });
      const attestations = new Attestations();
      await attestations.seed(signer);
      return { signer, attestations };
    })();
    return shared;
  };
  const idleScenario = () => {
    idle ??= acrossIdleTimeout(lab, withDriver);
    // Awaited by its test; until then a failure must not surface as an unhandled rejection.
    idle.catch(() => {});
    return idle;
  };
  lab.beforeClose(async () => {
    await idle?.catch(() => {});
    const current = await shared?.catch(() => undefined);
    shared = undefined;
    await current?.signer.stop();
  });

  // The toolchain first: a missing one fails every test with its one-line reason, before any
  // signer starts.
  const scenario = (name: string, body: () => Promise<void>) =>
    test.skipIf(skipped !== undefined)(
      name,
      async () => {
        await prepare();
        await body();
      },
      TEST_TIMEOUT_MS,
    );

  describe(`${stack.title} (${stack.client})`, () => {
    scenario("the driver starts under its real runtime and reports its version", async () => {
      const { versions = [] } = await prepare();
      await withDriver(async (driver) => {
        const version = await driver.version();
        console.log(`transport: ${stack.title}: ${[version, ...versions].join("; ")}`);
        expect(version.length).toBeGreaterThan(0);
      });
      void idleScenario();
    });

    scenario(
      "sequential keep-alive: 100 signatures and the key-list and upcheck GETs over at most 2 connections",
      async () => {
        const { signer, attestations } = await sharedSigner();
        await withDriver(async (driver) => {
          const gets: DriverRequest[] = [
            { method: "GET", path: "/upcheck", headers: { accept: "application/json" } },
            {
              method: "GET",
              path: "/api/v1/eth2/publicKeys",
              headers: { accept: "application/json" },
            },
          ];
          const getResults = await driver.batch(signer.url, gets, { concurrency: 1 });
          expect(statusProblems(getResults)).toEqual([]);
          expect(JSON.parse(getResults[0]?.body ?? "")).toEqual({ status: "OK" });
          expect(JSON.parse(getResults[1]?.body ?? "")).toEqual(
            expect.arrayContaining([...INTEROP_KEYS]),
          );
          const jobs = attestations.next(100);
          const results = await driver.batch(signer.url, requestsOf(jobs), { concurrency: 1 });
          expect(signingProblems(jobs, results)).toEqual([]);
          for (const result of [...getResults, ...results]) {
            expect(result.connection).toBeNull();
            expect(result.keepAlive).toBe("timeout=120");
          }
          const ports = await signer.clientPorts(requestIds([...getResults, ...results]));
          expect(distinct(ports)).toBeLessThanOrEqual(2);
        });
      },
    );

    scenario("concurrent keep-alive: 96 signatures 8 at a time, connections reused", async () => {
      const { signer, attestations } = await sharedSigner();
      await withDriver(async (driver) => {
        const jobs = attestations.next(96);
        const results = await driver.batch(signer.url, requestsOf(jobs), { concurrency: 8 });
        expect(signingProblems(jobs, results)).toEqual([]);
        for (const result of results) expect(result.connection).toBeNull();
        const ports = await signer.clientPorts(requestIds(results));
        console.log(
          `transport: ${stack.title}: 96 requests, 8 at a time, over ${distinct(ports)} connections`,
        );
        // Reuse happened. Not "at most 8": net/http keeps 2 idle connections per host and closes
        // the others it gets back at once (25 of 96 here), undici opened 16; one per request is
        // what a signer that closes every connection would give.
        expect(distinct(ports)).toBeLessThanOrEqual(64);
      });
    });

    scenario(
      "Connection: close: 40 sequential and 40 concurrent signatures, one connection each, every answer says close",
      async () => {
        const { signer, attestations } = await sharedSigner();
        await withDriver(async (driver) => {
          for (const concurrency of [1, 8]) {
            const jobs = attestations.next(40);
            const results = await driver.batch(signer.url, requestsOf(jobs), {
              concurrency,
              close: true,
            });
            expect(signingProblems(jobs, results)).toEqual([]);
            for (const result of results) expect(result.connection?.toLowerCase()).toBe("close");
            const ports = await signer.clientPorts(requestIds(results));
            expect(distinct(ports)).toBe(jobs.length);
          }
        });
      },
    );

    scenario(
      "across a graceful restart: requests in flight at SIGTERM are answered with Connection: close, and the same pool signs after the restart",
      () => acrossGracefulRestart(lab, withDriver),
    );

    scenario(
      `across the idle timeout: 3 rounds of 12 signatures, ${IDLE_SLEEP_MS / 1000} s apart, with keep_alive_timeout_seconds ${IDLE_KEEP_ALIVE_SECONDS}`,
      () => idleScenario(),
    );
  });
}

const requestsOf = (jobs: readonly SignJob[]): DriverRequest[] => jobs.map((job) => job.request);

type WithDriver = (body: (driver: Driver) => Promise<void>) => Promise<void>;

/**
 * Three rounds of 12 signatures, 4 at a time, with a sleep past sigil's idle timeout before each
 * later round: every round reuses connections, and none survives into the next one.
 */
async function acrossIdleTimeout(lab: Lab, withDriver: WithDriver): Promise<void> {
  const signer = await Signer.start(lab, {
    keepAliveSeconds: IDLE_KEEP_ALIVE_SECONDS,
    db: { sqlite: join(lab.dir.path, "idle.sqlite") },
  });
  try {
    const attestations = new Attestations();
    await attestations.seed(signer);
    await withDriver(async (driver) => {
      let previous: number[] = [];
      for (let round = 0; round < 3; round++) {
        if (round > 0) await Bun.sleep(IDLE_SLEEP_MS);
        const jobs = attestations.next(12);
        const results = await driver.batch(signer.url, requestsOf(jobs), { concurrency: 4 });
        expect(signingProblems(jobs, results)).toEqual([]);
        for (const result of results) {
          expect(result.keepAlive).toBe(`timeout=${IDLE_KEEP_ALIVE_SECONDS}`);
        }
        const ports = await signer.clientPorts(requestIds(results));
        expect(distinct(ports)).toBeLessThan(jobs.length);
        expect(ports.filter((port) => previous.includes(port))).toEqual([]);
        previous = ports;
      }
    });
  } finally {
    await signer.stop().catch(() => {});
  }
}

/**
 * A postgres-backed signer on a fixed port: the driver fills its pool (16 signatures, 8 at a
 * time), then sends 4 more while PostgreSQL holds their slashing checks; SIGTERM lands with those
 * 4 in flight (sigil logs in_flight 4), the hold is released, and each of them must be signed and
 * answered with Connection: close. sigil exits 0, a new sigil starts on the same port and
 * database, and the same driver process (whose pool saw its idle connections closed by the drain)
 * signs 24 concurrently and 8 sequentially.
 */
async function acrossGracefulRestart(lab: Lab, withDriver: WithDriver): Promise<void> {
  const db = { postgres: await lab.freshPostgresDatabase() };
  const port = await freePort();
  const first = await Signer.start(lab, { port, db });
  let second: Signer | undefined;
  try {
    const attestations = new Attestations();
    await attestations.seed(first);
    await withDriver(async (driver) => {
      const warm = attestations.next(16);
      const warmResults = await driver.batch(first.url, requestsOf(warm), { concurrency: 8 });
      expect(signingProblems(warm, warmResults), "filling the pool").toEqual([]);

      const jobs = attestations.next(4);
      const hold = await holdSlashingChecks(db.postgres);
      let inFlight: Promise<DriverResult[]> | undefined;
      try {
        inFlight = driver.batch(first.url, requestsOf(jobs), { concurrency: jobs.length });
        // Awaited below; a failure before that must not surface as an unhandled rejection.
        inFlight.catch(() => {});
        await hold.waitForWaiting(jobs.length);
        first.sigil.process.kill("SIGTERM");
        const stopping = await first.waitForRecord("that it is stopping", (record) =>
          String(record.msg).startsWith("stopping"),
        );
        expect(stopping.in_flight).toBe(jobs.length);
      } finally {
        await hold.release();
      }
      const results = await inFlight;
      expect(signingProblems(jobs, results), "in flight at SIGTERM").toEqual([]);
      for (const result of results) expect(result.connection?.toLowerCase()).toBe("close");
      expect(await first.exited()).toBe(0);

      second = await Signer.start(lab, { port, db });
      expect(second.url).toBe(first.url);
      for (const [count, concurrency] of [
        [24, 8],
        [8, 1],
      ] as const) {
        const after = attestations.next(count);
        const afterResults = await driver.batch(second.url, requestsOf(after), { concurrency });
        expect(
          signingProblems(after, afterResults),
          `after the restart, ${concurrency} at a time`,
        ).toEqual([]);
      }
    });
  } finally {
    first.sigil.process.kill("SIGKILL");
    await second?.stop().catch(() => {});
  }
}

// ---- Helpers for stacks ----

/** Copies a driver folder into the work directory (builds never write into the repository). */
export function copyDriver(lab: Lab, folder: string): string {
  const target = join(lab.dir.path, folder);
  // Not a build a developer may have left in the folder (target/, Cargo.lock, a go binary).
  const left = new Set(["target", "Cargo.lock", "driver", "transport-driver"]);
  cpSync(join(DRIVERS, folder), target, {
    recursive: true,
    filter: (path) => !left.has(basename(path)),
  });
  return target;
}

/** `name = "crate"` / `version = "x"` pairs of a Cargo.lock, for the crates asked. */
export function lockedVersions(lockFile: string, crates: readonly string[]): string[] {
  const text = readFileSync(lockFile, "utf8");
  return crates.map((crate) => {
    const match = new RegExp(`name = "${crate}"\\nversion = "([^"]+)"`).exec(text);
    return `${crate} ${match?.[1] ?? "?"}`;
  });
}
