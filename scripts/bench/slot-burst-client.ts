// Load generator process of slot-burst (run by it): one slot's attestations, all due at once. One
// JSON argument:
//   { url, pubkeysFile, connections, source, target, salt }
// Builds one ATTESTATION request per public key of the file (source/target epochs as sign-body.ts
// counts them; `salt` is the block root every validator of the slot attests to), opens
// `connections` keep-alive connections and sends one GET /upcheck on each (so the server has
// accepted every one before the clock starts: a validator client fleet's connections are already
// open at 4 s into a slot), prints "ready", and on "go" (standard input) sends every request:
// each connection takes the next unsent one as soon as its previous answer has arrived (no
// pipelining), the way a client's connection pool drains a queue. Then prints, as JSON:
//   { ok, errors, statuses, done_ms, latencies_ms, first_ms, last_ms, client_cpu_s }
// done_ms: each signed request's answer time from "go" (all of them were due at "go");
// latencies_ms: from its own send to its answer; last_ms: the last answer (of any status).
import { readFileSync } from "node:fs";
import { Http1Connection, postRequest } from "./http1-client";
import { attestationBody } from "./sign-body";

export interface BurstSpec {
  url: string;
  pubkeysFile: string;
  connections: number;
  source: number;
  target: number;
  salt: number;
}

export interface BurstResult {
  ok: number;
  errors: number;
  statuses: Record<string, number>;
  done_ms: number[];
  latencies_ms: number[];
  first_ms: number;
  last_ms: number;
  client_cpu_s: number;
}

/** The request bytes of one burst: one attestation per public key, all for the same data. */
export function burstRequests(host: string, pubkeys: readonly string[], spec: BurstSpec) {
  const body = attestationBody(spec.source, spec.target, spec.salt);
  return pubkeys.map((pubkey) => postRequest(host, `/api/v1/eth2/sign/${pubkey}`, body));
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? "{}") as BurstSpec;
  const pubkeys = readFileSync(spec.pubkeysFile, "utf8").split("\n").filter(Boolean);
  const server = new URL(spec.url);
  const requests = burstRequests(server.host, pubkeys, spec);
  const upcheck = Buffer.from(`GET /upcheck HTTP/1.1\r\nHost: ${server.host}\r\n\r\n`, "latin1");
  const connections = await Promise.all(
    Array.from({ length: spec.connections }, async () => {
      const connection = await Http1Connection.open(server.hostname, Number(server.port));
      const status = await connection.request(upcheck);
      if (status !== 200) throw new Error(`GET /upcheck answered ${status}`);
      return connection;
    }),
  );
  process.stdout.write("ready\n");
  for await (const line of console) {
    if (line.trim() === "go") break;
  }

  const doneMs: number[] = [];
  const latenciesMs: number[] = [];
  const statuses: Record<string, number> = {};
  let ok = 0;
  let errors = 0;
  let next = 0;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  const cpuAtStart = process.cpuUsage();
  const started = performance.now();
  const drain = async (connection: Http1Connection) => {
    for (let i = next++; i < requests.length; i = next++) {
      const sent = performance.now();
      let status: number;
      try {
        status = await connection.request(requests[i] as Uint8Array);
      } catch {
        errors++;
        statuses.failed = (statuses.failed ?? 0) + 1;
        return; // this connection is gone; the others take the rest
      }
      const done = performance.now();
      first = Math.min(first, done - started);
      last = Math.max(last, done - started);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === 200) {
        ok++;
        doneMs.push(done - started);
        latenciesMs.push(done - sent);
      } else errors++;
    }
  };
  await Promise.all(connections.map(drain));
  const used = process.cpuUsage(cpuAtStart);
  for (const connection of connections) connection.close();
  const result: BurstResult = {
    ok,
    errors,
    statuses,
    done_ms: doneMs,
    latencies_ms: latenciesMs,
    first_ms: Number.isFinite(first) ? first : 0,
    last_ms: last,
    client_cpu_s: (used.user + used.system) / 1e6,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (import.meta.main) await main();
