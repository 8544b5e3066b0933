// Load generator process of sign-http (run by it), on raw keep-alive sockets (http1-client.ts:
// fetch cost the shared cores about 1 ms of CPU per request). One JSON argument:
//   { url, pubkeysFile, connections, seconds, maxRequests, rate, startIndex }
// rate 0: closed loop, `connections` keep-alive loops each sending the next request as soon as
//   the previous answer arrived (the maximum throughput).
// rate > 0: open loop, requests sent on a fixed schedule of `rate` per second with at most
//   `connections` in flight; latency counts from the SCHEDULED send time, so a stalled server is
//   not hidden by the client waiting for it (no coordinated omission).
// Stops after `seconds` or `maxRequests` (0 = no limit), whichever comes first, and prints
//   { ok, errors, statuses, elapsed_s, latencies_ms, next_index, send_lag_p99_ms, client_cpu_s }
//   as JSON (client_cpu_s: this process's CPU time, user + system, while it ran).
import { readFileSync } from "node:fs";
import { Http1Connection, postRequest } from "./http1-client";
import { requestFor } from "./sign-body";

interface LoadSpec {
  url: string;
  pubkeysFile: string;
  connections: number;
  seconds: number;
  maxRequests: number;
  rate: number;
  startIndex: number;
}

const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;
const pubkeys = readFileSync(spec.pubkeysFile, "utf8").split("\n").filter(Boolean);
const server = new URL(spec.url);
const hostname = server.hostname;
const port = Number(server.port);
const paths = pubkeys.map((pubkey) => `/api/v1/eth2/sign/${pubkey}`);

// Every connection is opened before the clock starts; one that fails is replaced.
const idle: Http1Connection[] = await Promise.all(
  Array.from({ length: spec.connections }, () => Http1Connection.open(hostname, port)),
);

const latencies: number[] = [];
const sendLag: number[] = [];
const statuses: Record<string, number> = {};
let ok = 0;
let errors = 0;
let issued = 0;
const started = performance.now();
const cpuAtStart = process.cpuUsage();
const end = started + spec.seconds * 1000;
let lastDone = started;

const more = () => performance.now() < end && (spec.maxRequests === 0 || issued < spec.maxRequests);

/** Sends on an idle connection: callers keep at most `connections` sends in flight. */
async function send(scheduled: number): Promise<void> {
  const k = spec.startIndex + issued++;
  const { validator, body } = requestFor(k, paths.length);
  const connection = idle.pop();
  if (!connection) throw new Error("more requests in flight than connections");
  try {
    const status = await connection.request(postRequest(server.host, paths[validator] ?? "", body));
    idle.push(connection);
    statuses[status] = (statuses[status] ?? 0) + 1;
    const done = performance.now();
    lastDone = done;
    if (status === 200) {
      ok++;
      latencies.push(done - scheduled);
    } else errors++;
  } catch {
    errors++;
    connection.close();
    idle.push(await Http1Connection.open(hostname, port));
  }
}

if (spec.rate > 0) {
  const interval = 1000 / spec.rate;
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  while (more()) {
    const now = performance.now();
    let due = started + n * interval;
    while (due <= now && inFlight.size < spec.connections && more()) {
      sendLag.push(now - due);
      const request = send(due);
      inFlight.add(request);
      void request.finally(() => inFlight.delete(request));
      n++;
      due = started + n * interval;
    }
    if (inFlight.size >= spec.connections) await Promise.race(inFlight);
    else await Bun.sleep(Math.max(0, Math.min(due - performance.now(), 5)));
  }
  await Promise.all(inFlight);
} else {
  const loop = async () => {
    while (more()) await send(performance.now());
  };
  await Promise.all(Array.from({ length: spec.connections }, loop));
}
for (const connection of idle) connection.close();

sendLag.sort((a, b) => a - b);
process.stdout.write(
  JSON.stringify({
    ok,
    errors,
    statuses,
    elapsed_s: (lastDone - started) / 1000,
    latencies_ms: latencies,
    next_index: spec.startIndex + issued,
    send_lag_p99_ms: sendLag[Math.floor(sendLag.length * 0.99)] ?? 0,
    client_cpu_s: (() => {
      const used = process.cpuUsage(cpuAtStart);
      return (used.user + used.system) / 1e6;
    })(),
  }),
);
