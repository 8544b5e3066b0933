// The max (closed-loop) run of sign-http driven by wrk, when wrk is installed: a C load generator
// on epoll costs the shared cores far less than a Bun client, so more of the machine is left to
// the signer. A generated Lua script sends the same requests as sign-load.ts (request k of
// sign-body.ts's requestFor, k = startIndex, startIndex + 1, …) from one wrk thread; before the
// first use, checkWrkRequests() runs it against a recording server and compares every request it
// sent with requestFor, so the Lua copy of the body cannot drift from the TypeScript one.
//
// BENCH_SIGN_LOADGEN=bun forces the Bun client even where wrk is installed.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FIRST_EPOCH, requestFor } from "./sign-body";

export interface WrkResult {
  ok: number;
  errors: number;
  statuses: Record<string, number>;
  elapsed_s: number;
  p50_ms: number;
  p99_ms: number;
  /** Paced runs: how late, at the 99th percentile, a request left after its scheduled time. */
  send_lag_p99_ms: number;
  next_index: number;
}

interface WrkSummary {
  requests: number;
  duration_us: number;
  ok: number;
  other_status: number;
  socket_errors: number;
  p50_us: number;
  p99_us: number;
  send_lag_p99_us: number;
  next_index: number;
}

const MARKER = "SIGIL_WRK ";
/** Paced runs start this long after wrk does, so that every thread is up for the first send. */
const PACED_START_DELAY_MS = 200;
/** Connections (one per wrk thread) of a paced run. */
export const PACED_CONNECTIONS = 16;

/** wrk's path, or null when it is missing or BENCH_SIGN_LOADGEN=bun. */
export function wrkPath(): string | null {
  if (process.env.BENCH_SIGN_LOADGEN === "bun") return null;
  return Bun.which("wrk");
}

interface LoadShape {
  /** wrk threads, each with one connection when paced. */
  threads: number;
  /** Requests per second over all threads; 0 = closed loop. */
  rate: number;
  startIndex: number;
}

/**
 * The Lua script. Thread i of T builds requests k = startIndex + i + jT. Closed loop (rate 0):
 * every answer is followed by the next request, and wrk's own histogram gives the latencies.
 * Paced: each thread has one connection and sends its j-th request at start + (i + jT) / rate
 * (delay() waits for that moment on the monotonic clock, through LuaJIT's FFI); latency counts from
 * that SCHEDULED moment, so an answer that comes late also delays, and is charged to, the next
 * request of that connection (no coordinated omission). done() prints one JSON line.
 */
function luaScript(pubkeys: readonly string[], shape: LoadShape): string {
  // The constants of sign-body.ts's attestationBody, read from a body it built.
  const sample = JSON.parse(requestFor(0, 1).body) as {
    fork_info: {
      fork: { previous_version: string; current_version: string; epoch: string };
      genesis_validators_root: string;
    };
    attestation: { source: { root: string }; target: { root: string } };
  };
  const { fork, genesis_validators_root: gvr } = sample.fork_info;
  const template =
    `{"type":"ATTESTATION","fork_info":{"fork":{"previous_version":"${fork.previous_version}",` +
    `"current_version":"${fork.current_version}","epoch":"${fork.epoch}"},` +
    `"genesis_validators_root":"${gvr}"},"attestation":{"slot":"%d","index":"0",` +
    `"beacon_block_root":"0x%064x",` +
    `"source":{"epoch":"%d","root":"${sample.attestation.source.root}"},` +
    `"target":{"epoch":"%d","root":"${sample.attestation.target.root}"}}}`;
  const paced = shape.rate > 0;
  return `
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } sigil_timespec;
int clock_gettime(int clock_id, sigil_timespec *tp);
]]
local clock = ffi.new("sigil_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, clock) -- CLOCK_MONOTONIC
  return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6
end

local pubkeys = { ${pubkeys.map((p) => `"${p}"`).join(",")} }
local V = #pubkeys
local FIRST_EPOCH = ${FIRST_EPOCH}
local START_INDEX = ${shape.startIndex}
local T = ${shape.threads}
local INTERVAL_MS = ${paced ? 1000 / shape.rate : 0}
local TEMPLATE = '${template}'
local HEADERS = { ["Content-Type"] = "application/json", ["Accept"] = "application/json" }

-- Per thread (set by setup): id, start_ms. Counters read back by done().
id = 0
start_ms = 0
j = 0
last_k = -1
ok = 0
other_status = 0
latencies = {}
lags = {}
local due = 0

local threads = {}
function setup(thread)
  thread:set("id", #threads)
  ${paced ? `if #threads == 0 then shared_start = now_ms() + ${PACED_START_DELAY_MS} end` : ""}
  ${paced ? 'thread:set("start_ms", shared_start)' : ""}
  table.insert(threads, thread)
end

local function due_of(n) return start_ms + (id + n * T) * INTERVAL_MS end

${
  paced
    ? `function delay()
  local wait = due_of(j) - now_ms()
  if wait <= 0 then return 0 end
  return math.ceil(wait)
end`
    : ""
}

function request()
  local k = START_INDEX + id + j * T
  ${paced ? "due = due_of(j)" : ""}
  ${paced ? "table.insert(lags, now_ms() - due)" : ""}
  j = j + 1
  last_k = k
  local round = math.floor(k / V)
  local validator = k % V
  local source = FIRST_EPOCH + round
  local target = source + 1
  local body = string.format(TEMPLATE, target * 32, k, source, target)
  return wrk.format("POST", "/api/v1/eth2/sign/" .. pubkeys[validator + 1], HEADERS, body)
end

function response(status, headers, body)
  if status == 200 then
    ok = ok + 1
    ${paced ? "table.insert(latencies, now_ms() - due)" : ""}
  else
    other_status = other_status + 1
  end
end

local function percentile(sorted, p)
  if #sorted == 0 then return 0 end
  return sorted[math.max(1, math.ceil(#sorted * p / 100))]
end

function done(summary, latency, requests)
  local okTotal, otherTotal, nextIndex = 0, 0, START_INDEX
  local all, allLags = {}, {}
  for _, thread in ipairs(threads) do
    okTotal = okTotal + thread:get("ok")
    otherTotal = otherTotal + thread:get("other_status")
    nextIndex = math.max(nextIndex, thread:get("last_k") + 1)
    for _, v in ipairs(thread:get("latencies")) do table.insert(all, v) end
    for _, v in ipairs(thread:get("lags")) do table.insert(allLags, v) end
  end
  table.sort(all)
  table.sort(allLags)
  ${
    paced
      ? "local p50, p99 = percentile(all, 50) * 1000, percentile(all, 99) * 1000"
      : "local p50, p99 = latency:percentile(50), latency:percentile(99)"
  }
  local e = summary.errors
  io.write(string.format(
    '${MARKER}{"requests":%d,"duration_us":%d,"ok":%d,"other_status":%d,"socket_errors":%d,' ..
    '"p50_us":%d,"p99_us":%d,"send_lag_p99_us":%d,"next_index":%d}\\n',
    summary.requests, summary.duration, okTotal, otherTotal,
    e.connect + e.read + e.write + e.timeout,
    p50, p99, percentile(allLags, 99) * 1000, nextIndex))
end
`;
}

interface WrkRun {
  connections: number;
  seconds: number;
  startIndex: number;
  /** Requests per second, one connection per thread; 0 (the default) = closed loop, 1 thread. */
  rate?: number;
}

async function runWrkScript(
  wrk: string,
  url: string,
  pubkeys: readonly string[],
  run: WrkRun,
): Promise<WrkSummary> {
  const rate = run.rate ?? 0;
  const threads = rate > 0 ? run.connections : 1;
  const dir = mkdtempSync(join(tmpdir(), "sigil-bench-wrk-"));
  try {
    const script = join(dir, "sign.lua");
    writeFileSync(script, luaScript(pubkeys, { threads, rate, startIndex: run.startIndex }));
    const child = Bun.spawn(
      [
        wrk,
        `-t${threads}`,
        `-c${run.connections}`,
        `-d${run.seconds}s`,
        "--timeout",
        "30s",
        "-s",
        script,
        url,
      ],
      { stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    const line = out.split("\n").find((l) => l.startsWith(MARKER));
    if (code !== 0 || !line) throw new Error(`wrk exited with ${code}:\n${out}\n${err}`);
    return JSON.parse(line.slice(MARKER.length)) as WrkSummary;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A run through wrk: closed loop (the max), or paced at `rate` (the half run). */
export async function runWrk(
  wrk: string,
  url: string,
  pubkeys: readonly string[],
  run: WrkRun,
): Promise<WrkResult> {
  const s = await runWrkScript(wrk, url, pubkeys, run);
  const statuses: Record<string, number> = {};
  if (s.ok > 0) statuses["200"] = s.ok;
  if (s.other_status > 0) statuses.other = s.other_status;
  const idle = (run.rate ?? 0) > 0 ? PACED_START_DELAY_MS / 1000 : 0;
  return {
    ok: s.ok,
    errors: s.other_status + s.socket_errors,
    statuses,
    elapsed_s: s.duration_us / 1e6 - idle,
    p50_ms: s.p50_us / 1000,
    p99_ms: s.p99_us / 1000,
    send_lag_p99_ms: s.send_lag_p99_us / 1000,
    next_index: s.next_index,
  };
}

/**
 * Runs the Lua script against a server that records what arrives, closed loop and then paced, and
 * checks every request against requestFor: the same validator's path and the same body. Each
 * body's block root carries its k. Closed loop (one thread), the k must rise (wrk may build a
 * request it never sends: a gap is harmless); paced, they must be distinct and arrive at about the
 * asked rate. Returns how many requests were checked.
 */
export async function checkWrkRequests(wrk: string, pubkeys: readonly string[]): Promise<number> {
  let received: { path: string; body: string }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      received.push({ path: new URL(request.url).pathname, body: await request.text() });
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  });
  const url = `http://127.0.0.1:${server.port}`;
  const startIndex = pubkeys.length - 3; // crosses a round (epochs rise) within a few requests
  const checkedKs = (): number[] =>
    received.map(({ path, body }) => {
      const k = Number.parseInt(
        (JSON.parse(body) as { attestation: { beacon_block_root: string } }).attestation
          .beacon_block_root,
        16,
      );
      const expected = requestFor(k, pubkeys.length);
      const expectedPath = `/api/v1/eth2/sign/${pubkeys[expected.validator]}`;
      if (k < startIndex || path !== expectedPath || body !== expected.body) {
        throw new Error(
          `wrk request differs from requestFor(${k}):\n${path}\n${body}\n` +
            `expected\n${expectedPath}\n${expected.body}`,
        );
      }
      return k;
    });
  try {
    await runWrkScript(wrk, url, pubkeys, { connections: 1, seconds: 1, startIndex });
    const closed = checkedKs();
    if (closed.length < 10) throw new Error(`wrk check: only ${closed.length} requests arrived`);
    closed.forEach((k, i) => {
      if (i > 0 && k <= (closed[i - 1] ?? 0)) throw new Error(`wrk check: k ${k} did not rise`);
    });

    received = [];
    const rate = 400;
    const paced = await runWrkScript(wrk, url, pubkeys, {
      connections: 4,
      seconds: 2,
      startIndex,
      rate,
    });
    const ks = checkedKs();
    if (new Set(ks).size !== ks.length) throw new Error("wrk check: a paced k was sent twice");
    const expected = rate * (2 - PACED_START_DELAY_MS / 1000);
    if (ks.length < 0.8 * expected || ks.length > 1.1 * expected) {
      throw new Error(`wrk check: ${ks.length} paced requests arrived, expected about ${expected}`);
    }
    // Each connection may have had its last request in flight when wrk stopped.
    if (paced.ok > ks.length || paced.ok < ks.length - 4) {
      throw new Error(`wrk check: wrk counted ${paced.ok} answers for ${ks.length} requests`);
    }
    return closed.length + ks.length;
  } finally {
    server.stop(true);
  }
}
