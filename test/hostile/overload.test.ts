// Overload (issue 11, item 2): a signer process with room for 4 signing jobs and 16 waiting is
// flooded with 2,000 concurrent sign requests over keep-alive connections. The excess is turned
// away at once with 503 queue_full, every admitted request signs correctly, the process's memory
// stays bounded, and once the flood stops it signs at once again.
//
// The signer uses the noble backend (about 25 times slower than blst): signing stays the
// bottleneck whatever else the machine runs, so the flood really exceeds capacity. No assertion
// is about time; the figures (RSS, answer order) are printed and written to .test-logs/.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SecretKey } from "@chainsafe/blst";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { registerTestSecret, TEST_LOG_DIR } from "../support/log-capture";
import { bytesToHex, verifiesAgainstOracle } from "../support/oracle";
import { attestationRequest, postSign } from "../support/slashing";
import { judgeSignRequest } from "./sign-oracle";

const JOBS = 4;
const QUEUE = 16;
const CAPACITY = JOBS + QUEUE;
const KEYS = 256;
const FLOOD = 2000;
const MIB = 1024 * 1024;

const dir = new TempDir();
const pubkeys: string[] = [];
let sigil: RunningSigil;

/** Resident set size of the signer process, from /proc (Linux). */
function rss(): number {
  const status = readFileSync(`/proc/${sigil.process.pid}/status`, "utf8");
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1] ?? Number.NaN) * 1024;
}

beforeAll(async () => {
  const keysDir = join(dir.path, "keys");
  mkdirSync(keysDir);
  for (let i = 0; i < KEYS; i++) {
    const secret = interopSecret(i);
    if (i >= 64) registerTestSecret(secret, `interop key ${i}`);
    pubkeys.push(
      `0x${Buffer.from(SecretKey.fromBytes(secret).toPublicKey().toBytes()).toString("hex")}`,
    );
    const hex = Buffer.from(secret).toString("hex");
    writeFileSync(join(keysDir, `key-${i}.yaml`), `type: file-raw\nprivateKey: "0x${hex}"\n`, {
      mode: 0o600,
    });
  }
  const config = dir.file(
    "overload.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}",
      "logging: {format: json}",
      `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      "bls: {backend: noble}",
      `max_concurrent_signing_jobs: ${JOBS}`,
      `signing_queue_buffer_size: ${QUEUE}`,
    ].join("\n"),
  );
  sigil = await startSigil(["serve", "-c", config, "--init-slashing-protection"]);
}, 120_000);

afterAll(async () => {
  await sigil?.stop();
  dir.remove();
});

/**
 * Request i: key i mod 256 signs one attestation (its only one: slashing protection has nothing
 * to refuse) or a RANDAO reveal of its own epoch.
 */
function requestBody(i: number): unknown {
  if (i < KEYS) return attestationRequest(2 * i, 2 * i + 1, i).body;
  const { fork_info } = attestationRequest(0, 1, 0).body;
  return { type: "RANDAO_REVEAL", fork_info, randao_reveal: { epoch: String(370_000 + i) } };
}

interface Answer {
  i: number;
  status: number;
  code?: string;
  retryAfter: string | null;
  signature?: string;
  /** The order in which answers arrived, from 0. */
  order: number;
}

let answered = 0;
async function sign(i: number): Promise<Answer> {
  const response = await postSign(sigil.url, pubkeys[i % KEYS] ?? "", requestBody(i));
  const body = (await response.json()) as { signature?: string; code?: string };
  return {
    i,
    status: response.status,
    code: body.code,
    retryAfter: response.headers.get("retry-after"),
    signature: body.signature,
    order: answered++,
  };
}

/** The signature is BLS-valid over the root the independent oracle computes for request i. */
function verifies(answer: Answer): boolean {
  const verdict = judgeSignRequest(requestBody(answer.i));
  if (!verdict.ok || !answer.signature) return false;
  const pubkey = pubkeys[answer.i % KEYS] ?? "";
  return verifiesAgainstOracle({ pubkey, signingRoot: bytesToHex(verdict.root) }, answer.signature);
}

test(`a flood of ${FLOOD} requests against ${JOBS} jobs + ${QUEUE} queued: excess 503 at once, the rest sign, memory bounded, recovery`, async () => {
  // Warm up (first requests compile code paths), then take the baseline.
  const warmup = await Promise.all([FLOOD, FLOOD + 1, FLOOD + 2].map(sign));
  expect(warmup.map((a) => a.status)).toEqual([200, 200, 200]);
  const baseline = rss();

  let peak = baseline;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, rss());
      await Bun.sleep(20);
    }
  })();
  answered = 0;
  const answers = await Promise.all(Array.from({ length: FLOOD }, (_, i) => sign(i)));
  sampling = false;
  await sampler;
  const afterFlood = rss();

  const accepted = answers.filter((a) => a.status === 200);
  const rejected = answers.filter((a) => a.status === 503);
  expect(accepted.length + rejected.length).toBe(FLOOD);
  expect(rejected.every((a) => a.code === "queue_full" && a.retryAfter === "1")).toBe(true);
  // The first CAPACITY arrivals find room; more get in as slots free up.
  expect(accepted.length).toBeGreaterThanOrEqual(CAPACITY);
  expect(rejected.length).toBeGreaterThan(0);
  expect(accepted.filter((a) => !verifies(a)).map((a) => a.i)).toEqual([]);

  // Turned away at once, not after waiting for a slot: a 503 was answered while the first
  // CAPACITY admitted requests were still being signed.
  const acceptedOrders = accepted.map((a) => a.order).sort((a, b) => a - b);
  const firstReject = Math.min(...rejected.map((a) => a.order));
  const signedBeforeFirstReject = acceptedOrders.filter((order) => order < firstReject).length;
  expect(signedBeforeFirstReject).toBeLessThan(CAPACITY);
  const lastAccepted = acceptedOrders[acceptedOrders.length - 1] ?? 0;
  const rejectedBeforeLastAccepted = rejected.filter((a) => a.order < lastAccepted).length;

  // Memory stays bounded: far under twice the baseline plus 200 MiB.
  expect(peak).toBeLessThan(2 * baseline + 200 * MIB);

  // The flood is over: a normal request signs at once, and capacity-many at once all sign.
  const next = await sign(FLOOD + 3);
  expect(next.status).toBe(200);
  expect(verifies(next)).toBe(true);
  const burst = await Promise.all(Array.from({ length: CAPACITY }, (_, k) => sign(FLOOD + 4 + k)));
  expect(burst.map((a) => a.status)).toEqual(burst.map(() => 200));
  expect(burst.every(verifies)).toBe(true);
  const health = await fetch(`${sigil.url}/healthcheck`);
  expect(health.status).toBe(200);

  const figures = {
    flood: FLOOD,
    max_concurrent_signing_jobs: JOBS,
    signing_queue_buffer_size: QUEUE,
    accepted: accepted.length,
    rejected_queue_full: rejected.length,
    signed_before_first_503: signedBeforeFirstReject,
    rejected_before_last_accepted: rejectedBeforeLastAccepted,
    rss_mib: {
      baseline: +(baseline / MIB).toFixed(1),
      peak_during_flood: +(peak / MIB).toFixed(1),
      after_flood: +(afterFlood / MIB).toFixed(1),
      after_recovery: +(rss() / MIB).toFixed(1),
    },
  };
  mkdirSync(TEST_LOG_DIR, { recursive: true });
  writeFileSync(
    join(TEST_LOG_DIR, "overload-figures.json"),
    `${JSON.stringify(figures, null, 2)}\n`,
  );
  console.log(`overload figures: ${JSON.stringify(figures)}`);
}, 240_000);
