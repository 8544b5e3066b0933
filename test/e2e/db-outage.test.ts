import { describe, expect, test } from "bun:test";
import { ssz } from "@lodestar/types";
import type { RunningSigil } from "../support/cli";
import {
  bytesToHex,
  oracleDomain,
  oracleSigningRoot,
  verifiesAgainstOracle,
} from "../support/oracle";
import {
  attestationRequest,
  blockRequest,
  GVR,
  INTEROP_KEYS,
  postSign,
  type SignedMessage,
} from "../support/slashing";
import { recordFigures } from "./figures";
import {
  conflictingSignatures,
  type exportRecords,
  lostRecords,
  type Strategy,
  slashableAmong,
} from "./records";
import { type PausableDatabase, signerFiles } from "./signer-files";

/**
 * The slashing database goes away while two signers sharing it are under load, and comes back
 * (same port, same data). While it is down every slashable request must answer 503
 * `slashing_db_unavailable`, never a signature without a record; once it is back both signers
 * sign again without being restarted; and every signature returned before, during or after is
 * covered by the database and conflicts with no other.
 */
const VALIDATORS = INTEROP_KEYS.slice(0, 2);
const WORKERS_PER_VALIDATOR = 3;
/** How long the database stays down while the load runs. */
const OUTAGE_MS = 1500;
/** Signatures each signer must return after the database is back. */
const RECOVERED_PER_PROCESS = 10;

const { withTwoSignersOn } = signerFiles();

interface Answer {
  message: SignedMessage;
  process: number;
  sentAt: number;
  answeredAt: number;
  status: number;
  code?: string;
  signature?: string;
}

/** Progressing attestations and blocks, one in five a surround of the vote before. */
function nextRequest(state: { epoch: number; salt: number }) {
  state.salt++;
  if (state.salt % 5 === 0)
    return attestationRequest(Math.max(0, state.epoch - 2), state.epoch + 1, state.salt);
  if (state.salt % 7 === 0) return blockRequest(state.epoch, state.salt);
  state.epoch++;
  return attestationRequest(state.epoch - 1, state.epoch, state.salt);
}

/** A RANDAO reveal: not slashable, so it needs no database. */
function randaoRequest(epoch: number) {
  const fork = { previous_version: "0x04000000", current_version: "0x05000000", epoch: "364032" };
  const root = oracleSigningRoot(
    ssz.Epoch.hashTreeRoot(epoch),
    oracleDomain("0x02000000", fork.current_version, GVR),
  );
  return {
    body: {
      type: "RANDAO_REVEAL",
      fork_info: { fork, genesis_validators_root: GVR },
      randao_reveal: { epoch: String(epoch) },
    },
    root: bytesToHex(root),
  };
}

async function health(url: string): Promise<{ status: number; slashing?: string }> {
  const response = await fetch(`${url}/healthcheck`);
  const body = (await response.json()) as { checks: { id: string; status: string }[] };
  const slashing = body.checks.find((c) => c.id === "slashing_protection")?.status;
  return { status: response.status, ...(slashing === undefined ? {} : { slashing }) };
}

async function waitFor(what: string, condition: () => boolean, timeoutMs = 60_000) {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

async function outageUnderLoad(
  section: string,
  processes: RunningSigil[],
  database: PausableDatabase,
  strategy: Strategy,
  exported: () => ReturnType<typeof exportRecords>,
) {
  const answers: Answer[] = [];
  const state = VALIDATORS.map(() => ({ epoch: 100, salt: 0 }));
  let running = true;
  let turn = 0;
  /** Sends validator v's next duty to a process (the next in turn) and keeps the answer. */
  const sendNext = async (v: number, process = turn++ % processes.length) => {
    const pubkey = VALIDATORS[v] ?? "";
    const request = nextRequest(state[v] ?? { epoch: 0, salt: 0 });
    const sentAt = performance.now();
    const response = await postSign(processes[process]?.url ?? "", pubkey, request.body);
    const body = (await response.json()) as { signature?: string; code?: string };
    answers.push({
      message: { pubkey, ...request.message },
      process,
      sentAt,
      answeredAt: performance.now(),
      status: response.status,
      ...(body.code === undefined ? {} : { code: body.code }),
      ...(body.signature === undefined ? {} : { signature: body.signature }),
    });
  };
  const workers = VALIDATORS.flatMap((_, v) =>
    Array.from({ length: WORKERS_PER_VALIDATOR }, async () => {
      while (running) await sendNext(v);
    }),
  );
  const signedSince = (since: number, process: number) =>
    answers.filter((a) => a.status === 200 && a.sentAt >= since && a.process === process).length;
  try {
    await waitFor("signatures before the outage", () =>
      processes.every((_, p) => signedSince(0, p) >= RECOVERED_PER_PROCESS),
    );

    await database.pause();
    const down = performance.now();
    await Bun.sleep(OUTAGE_MS);
    // However slowly the load's requests fail, each signer answers some inside the outage.
    await Promise.all(
      [...processes.keys()].flatMap((p) => [...VALIDATORS.keys()].map((v) => sendNext(v, p))),
    );
    for (const sigil of processes) {
      expect(await health(sigil.url)).toEqual({ status: 503, slashing: "DOWN" });
      const randao = randaoRequest(370_100);
      const pubkey = VALIDATORS[0] ?? "";
      const response = await postSign(sigil.url, pubkey, randao.body);
      expect(response.status).toBe(200);
      const { signature } = (await response.json()) as { signature: string };
      expect(verifiesAgainstOracle({ pubkey, signingRoot: randao.root }, signature)).toBe(true);
    }
    const up = performance.now();
    await database.resume();
    const back = performance.now();

    await waitFor("signatures after the outage, from every signer", () =>
      processes.every((_, p) => signedSince(back, p) >= RECOVERED_PER_PROCESS),
    );
    for (const sigil of processes) {
      let report = await health(sigil.url);
      // A pooled connection may still be waiting to reconnect: allow the check a few tries.
      for (let i = 0; i < 30 && report.status !== 200; i++) {
        await Bun.sleep(500);
        report = await health(sigil.url);
      }
      expect(report).toEqual({ status: 200, slashing: "UP" });
    }
    running = false;
    await Promise.all(workers);

    // Sent after the database was gone, answered before it was back: the outage itself.
    const duringOutage = answers.filter((a) => a.sentAt >= down && a.answeredAt <= up);
    expect(duringOutage.length).toBeGreaterThan(0);
    expect(
      duringOutage.filter((a) => a.status !== 503 || a.code !== "slashing_db_unavailable"),
    ).toEqual([]);
    // Around the transitions an answer may be a signature, a refusal or a 503, nothing else.
    const unexpected = answers.filter(
      (a) => a.status !== 200 && a.status !== 412 && a.code !== "slashing_db_unavailable",
    );
    expect(unexpected).toEqual([]);

    const signed = answers.filter((a) => a.status === 200);
    const messages = signed.map((a) => a.message);
    expect(signed.filter((a) => !verifiesAgainstOracle(a.message, a.signature ?? ""))).toEqual([]);
    const conflicts = conflictingSignatures(messages);
    expect(conflicts).toEqual({ byModel: 0, pairs: 0 });
    const lost = lostRecords(await exported(), messages, strategy);
    expect(lost).toEqual([]);
    recordFigures(section, {
      processes: processes.length,
      requests_sent: answers.length,
      signatures_returned: signed.length,
      answered_503_while_down: duringOutage.length,
      signed_while_down: duringOutage.filter((a) => a.status === 200).length,
      signatures_after_recovery: signed.filter((a) => a.sentAt >= back).length,
      conflicting_requests_sent: slashableAmong(answers.map((a) => a.message)).length,
      conflicting_signatures_returned: conflicts.byModel,
      records_lost: lost.length,
    });
  } finally {
    running = false;
    await Promise.allSettled(workers);
  }
}

describe("slashing database outage under load, two signers", () => {
  test("PostgreSQL stops and comes back: 503 while down, signing resumes, nothing unrecorded", async () => {
    await withTwoSignersOn("postgres", (processes, exported, postgres) =>
      outageUnderLoad("database outage (postgres)", processes, postgres, "complete", exported),
    );
  }, 120_000);

  test("DynamoDB (dynalite) goes away and comes back: 503 while down, signing resumes, nothing unrecorded", async () => {
    await withTwoSignersOn("dynamodb", (processes, exported, dynamo) =>
      outageUnderLoad("database outage (dynamodb)", processes, dynamo, "minimal", exported),
    );
  }, 120_000);
});
