/**
 * Transport compatibility (harness.ts): curl, the operator's client (and the docs'), over HTTP/1.1
 * and HTTP/1.0. curl keeps its connections for one invocation, so each scenario is one curl run
 * with many transfers: `next` between transfers in a config file (-K), `--parallel` for
 * concurrency, `--rate` to space transfers across sigil's idle timeout. `-w` reports each
 * transfer's status, `num_connects` (0 when it reused a connection), local port, exit code and
 * headers. There is no graceful-restart scenario: curl's connection cache does not outlive the
 * invocation, so a restart inside one would have to be timed into a `--rate` gap.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  Attestations,
  createLab,
  type DriverResult,
  distinct,
  IDLE_KEEP_ALIVE_SECONDS,
  IDLE_SLEEP_MS,
  JSON_HEADERS,
  type Lab,
  optOut,
  requestIds,
  requireCommand,
  runCommand,
  Signer,
  type SignJob,
  signingProblems,
  statusProblems,
  TEST_TIMEOUT_MS,
} from "./harness";

const skipped = optOut("curl");
if (skipped) console.log(`transport: ${skipped}`);
const lab = createLab();

interface CurlTransfer {
  method: "GET" | "POST";
  path: string;
  body?: string;
}

interface CurlResult extends DriverResult {
  /** Connections this transfer opened: 0 when it reused one. */
  connects: number;
  localPort: number;
}

interface CurlOptions {
  http: "1.0" | "1.1";
  /** Transfers at once (`--parallel --parallel-max`); absent = one after the other. */
  parallel?: number;
  close?: boolean;
  /** `--rate` for serial transfers, e.g. "10/m" (one every 6 s). */
  rate?: string;
}

const FIELDS = "%{http_code}\t%{num_connects}\t%{local_port}\t%{exitcode}";
const HEADERS = "%header{x-request-id}\t%header{connection}\t%header{keep-alive}\t%{errormsg}";
let runs = 0;

/** One curl invocation carrying every transfer, results in transfer order. */
async function curl(
  signer: Signer,
  transfers: readonly CurlTransfer[],
  options: CurlOptions,
): Promise<CurlResult[]> {
  const binary = requireCommand("curl", "apt-get install curl", "curl");
  runs += 1;
  const dir = join(lab.dir.path, `curl-${runs}`);
  mkdirSync(dir);
  const config: string[] = [];
  transfers.forEach((transfer, index) => {
    if (index > 0) config.push("next");
    config.push(options.http === "1.0" ? "http1.0" : "http1.1");
    config.push(`url = "${signer.url}${transfer.path}"`);
    config.push(`request = "${transfer.method}"`);
    config.push(`header = "accept: ${JSON_HEADERS.accept}"`);
    if (options.close) config.push('header = "connection: close"');
    if (transfer.body !== undefined) {
      const bodyFile = join(dir, `request-${index}.json`);
      writeFileSync(bodyFile, transfer.body);
      config.push(`header = "content-type: ${JSON_HEADERS["content-type"]}"`);
      config.push(`data-binary = "@${bodyFile}"`);
    }
    config.push(`output = "${join(dir, `response-${index}`)}"`);
    config.push(`write-out = "##${index}\\t${FIELDS}\\t${HEADERS}\\n"`);
  });
  const configFile = join(dir, "transfers.curlrc");
  writeFileSync(configFile, `${config.join("\n")}\n`);
  const args = [binary, "--silent", "--show-error", "--max-time", "30"];
  if (options.parallel) args.push("--parallel", "--parallel-max", String(options.parallel));
  if (options.rate) args.push("--rate", options.rate);
  args.push("--config", configFile);
  const run = await runCommand(lab, args, { timeoutMs: 120_000 });
  const results: CurlResult[] = [];
  for (const line of run.stdout.split("\n")) {
    if (!line.startsWith("##")) continue;
    const [index, status, connects, localPort, exitCode, requestId, connection, keepAlive, error] =
      line.slice(2).split("\t");
    const failed = exitCode !== "0";
    let body: string | null = null;
    try {
      body = readFileSync(join(dir, `response-${index}`), "utf8");
    } catch {
      body = null;
    }
    results[Number(index)] = {
      status: failed ? null : Number(status),
      body,
      connection: connection || null,
      keepAlive: keepAlive || null,
      requestId: requestId || null,
      error: failed ? `curl exit ${exitCode}: ${error}` : null,
      connects: Number(connects),
      localPort: Number(localPort),
    };
  }
  const missing = transfers.flatMap((_, index) => (results[index] ? [] : [index]));
  if (missing.length > 0) {
    throw new Error(
      `curl (exit ${run.code}) reported nothing for transfers ${missing.join(", ")}:\n${run.stderr}`,
    );
  }
  return results;
}

const transfersOf = (jobs: readonly SignJob[]): CurlTransfer[] =>
  jobs.map((job) => ({ method: "POST", path: job.request.path, body: job.request.body }));

/** sigil's client_port for each transfer is curl's local port: the connection counts agree. */
async function portsAgree(signer: Signer, results: readonly CurlResult[]): Promise<number[]> {
  const ports = await signer.clientPorts(requestIds(results));
  expect(ports).toEqual(results.map((result) => result.localPort));
  return ports;
}

let shared: Promise<{ signer: Signer; attestations: Attestations }> | undefined;
const sharedSigner = () => {
  shared ??= (async () => {
    const signer = await Signer.start(lab, { db: { sqlite: join(lab.dir.path, "shared.sqlite") } });
    const attestations = new Attestations();
    await attestations.seed(signer);
    return { signer, attestations };
  })();
  return shared;
};
lab.beforeClose(async () => {
  const current = await shared?.catch(() => undefined);
  shared = undefined;
  await current?.signer.stop();
});

async function version(lab: Lab): Promise<string> {
  const binary = requireCommand("curl", "apt-get install curl", "curl");
  const run = await runCommand(lab, [binary, "--version"], { timeoutMs: 30_000 });
  return run.stdout.split("\n")[0] ?? "";
}

/** curl first: a missing one fails every test with its one-line reason, before any signer starts. */
const scenario = (name: string, body: () => Promise<void>) =>
  test.skipIf(skipped !== undefined)(
    name,
    async () => {
      requireCommand("curl", "apt-get install curl", "curl");
      await body();
    },
    TEST_TIMEOUT_MS,
  );

describe("curl (operators, the docs)", () => {
  scenario("curl runs and reports its version", async () => {
    const line = await version(lab);
    console.log(`transport: curl: ${line}`);
    expect(line).toStartWith("curl ");
  });

  scenario(
    "HTTP/1.1 sequential: 60 signatures and the upcheck and key-list GETs over one connection",
    async () => {
      const { signer, attestations } = await sharedSigner();
      const jobs = attestations.next(60);
      const gets: CurlTransfer[] = [
        { method: "GET", path: "/upcheck" },
        { method: "GET", path: "/api/v1/eth2/publicKeys" },
      ];
      const results = await curl(signer, [...gets, ...transfersOf(jobs)], { http: "1.1" });
      expect(statusProblems(results.slice(0, 2))).toEqual([]);
      expect(signingProblems(jobs, results.slice(2))).toEqual([]);
      for (const result of results) {
        expect(result.connection).toBeNull();
        expect(result.keepAlive).toBe("timeout=120");
      }
      const ports = await portsAgree(signer, results);
      expect(results.reduce((sum, result) => sum + result.connects, 0)).toBe(1);
      expect(distinct(ports)).toBe(1);
    },
  );

  scenario("HTTP/1.1 parallel: 48 signatures 8 at a time, connections reused", async () => {
    const { signer, attestations } = await sharedSigner();
    const jobs = attestations.next(48);
    const results = await curl(signer, transfersOf(jobs), { http: "1.1", parallel: 8 });
    expect(signingProblems(jobs, results)).toEqual([]);
    const ports = await portsAgree(signer, results);
    console.log(`transport: curl: 48 parallel transfers over ${distinct(ports)} connections`);
    expect(distinct(ports)).toBeLessThanOrEqual(16);
  });

  scenario(
    "HTTP/1.1 Connection: close: 24 sequential and 24 parallel signatures, one connection each, every answer says close",
    async () => {
      const { signer, attestations } = await sharedSigner();
      for (const parallel of [undefined, 8]) {
        const jobs = attestations.next(24);
        const results = await curl(signer, transfersOf(jobs), {
          http: "1.1",
          close: true,
          ...(parallel ? { parallel } : {}),
        });
        expect(signingProblems(jobs, results)).toEqual([]);
        for (const result of results) {
          expect(result.connection?.toLowerCase()).toBe("close");
          expect(result.connects).toBe(1);
        }
        expect(distinct(await portsAgree(signer, results))).toBe(jobs.length);
      }
    },
  );

  scenario("HTTP/1.0 sequential and parallel: 24 signatures each, all answered", async () => {
    const { signer, attestations } = await sharedSigner();
    for (const parallel of [undefined, 8]) {
      const jobs = attestations.next(24);
      const results = await curl(signer, transfersOf(jobs), {
        http: "1.0",
        ...(parallel ? { parallel } : {}),
      });
      expect(signingProblems(jobs, results)).toEqual([]);
      // HTTP/1.0 without keep-alive: sigil (Bun) closes after every answer.
      for (const result of results) expect(result.connects).toBe(1);
      expect(distinct(await portsAgree(signer, results))).toBe(jobs.length);
    }
  });

  scenario(
    `HTTP/1.1 across the idle timeout: 3 signatures ${IDLE_SLEEP_MS / 1000} s apart (--rate) with keep_alive_timeout_seconds ${IDLE_KEEP_ALIVE_SECONDS}`,
    async () => {
      const signer = await Signer.start(lab, {
        keepAliveSeconds: IDLE_KEEP_ALIVE_SECONDS,
        db: { sqlite: join(lab.dir.path, "idle.sqlite") },
      });
      try {
        const attestations = new Attestations();
        await attestations.seed(signer);
        const jobs = attestations.next(3);
        const perMinute = Math.floor(60_000 / IDLE_SLEEP_MS);
        const results = await curl(signer, transfersOf(jobs), {
          http: "1.1",
          rate: `${perMinute}/m`,
        });
        expect(signingProblems(jobs, results)).toEqual([]);
        for (const result of results) {
          expect(result.keepAlive).toBe(`timeout=${IDLE_KEEP_ALIVE_SECONDS}`);
          // sigil closed the idle connection before the next transfer, and curl saw it.
          expect(result.connects).toBe(1);
        }
        expect(distinct(await portsAgree(signer, results))).toBe(jobs.length);
      } finally {
        await signer.stop().catch(() => {});
      }
    },
  );
});
