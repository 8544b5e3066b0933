import { describe, expect, test } from "bun:test";
import { type RunningSigil, startSigil } from "../support/cli";
import { verifiesAgainstOracle } from "../support/oracle";
import {
  attestationRequest,
  blockRequest,
  INTEROP_KEYS,
  postSign,
  type SignedMessage,
} from "../support/slashing";
import { recordFigures } from "./figures";
import {
  conflictingSignatures,
  exportRecords,
  lostRecords,
  type Strategy,
  slashableAmong,
} from "./records";
import { signerFiles } from "./signer-files";

/**
 * Conflicting requests for the same validators, all in flight at once, spread over real sigil
 * processes sharing one database: round after round, each validator gets a set of mutually
 * slashable attestations (double votes, surrounding and surrounded votes) and a set of double
 * blocks. Whatever the interleaving, exactly one message of each set may be signed, every
 * other one is refused (412), and every signature returned is covered by the database.
 */
const ROUNDS = 8;
/** Requests per kind in a conflict set: 3 × PER_KIND attestations and PER_KIND blocks. */
const PER_KIND = 8;
const VALIDATORS = INTEROP_KEYS.slice(0, 2);

const { dir, config, withTwoSignersOn } = signerFiles();

interface Request {
  pubkey: string;
  body: unknown;
  message: SignedMessage;
}

/**
 * Round `round`'s conflict sets for one validator. Attestations: double votes at (s, t), votes
 * surrounding them at (s-1, t+1) and surrounded by them at (s+1, t-1): every two of them are
 * slashable together. Blocks: double proposals at one slot. Each round lies above the one
 * before, so that the first message of a set to arrive is signable on either strategy.
 */
function conflictSets(round: number, pubkey: string, salt: number): Request[][] {
  const [s, t] = [10 + 10 * round, 15 + 10 * round];
  const at = (source: number, target: number, i: number) => {
    const request = attestationRequest(source, target, salt + i);
    return { pubkey, body: request.body, message: { pubkey, ...request.message } };
  };
  const attestations = Array.from({ length: PER_KIND }, (_, i) => [
    at(s, t, 3 * i),
    at(s - 1, t + 1, 3 * i + 1),
    at(s + 1, t - 1, 3 * i + 2),
  ]).flat();
  const blocks = Array.from({ length: PER_KIND }, (_, i) => {
    const request = blockRequest(4 * round + 1, salt + i);
    return { pubkey, body: request.body, message: { pubkey, ...request.message } };
  });
  return [attestations, blocks];
}

interface Outcome {
  request: Request;
  /** Which process answered. */
  process: number;
  status: number;
  code?: string;
  signature?: string;
}

async function send(processes: RunningSigil[], i: number, request: Request): Promise<Outcome> {
  const process = i % processes.length;
  const response = await postSign(processes[process]?.url ?? "", request.pubkey, request.body);
  const body = (await response.json()) as { signature?: string; code?: string };
  return { request, process, status: response.status, code: body.code, signature: body.signature };
}

async function conflictingLoad(
  section: string,
  processes: RunningSigil[],
  strategy: Strategy,
  exported: () => ReturnType<typeof exportRecords>,
) {
  const sent: SignedMessage[] = [];
  const signed: Outcome[] = [];
  let sets = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const roundSets = VALIDATORS.flatMap((pubkey, v) =>
      conflictSets(round, pubkey, 1000 * (round * VALIDATORS.length + v)),
    );
    // Every request of the round at once, alternating between the processes.
    const outcomes = await Promise.all(
      roundSets.map((set) => Promise.all(set.map((request, i) => send(processes, i, request)))),
    );
    for (const set of roundSets) sent.push(...set.map((r) => r.message));
    for (const setOutcomes of outcomes) {
      sets++;
      const ok = setOutcomes.filter((o) => o.status === 200);
      expect(ok.length).toBe(1);
      const refusals = setOutcomes.filter((o) => o.status !== 200);
      expect(new Set(refusals.map((o) => `${o.status} ${o.code}`))).toEqual(
        new Set(["412 slashing_protection"]),
      );
      signed.push(...ok);
    }
  }
  const messages = signed.map((o) => o.request.message);
  const conflicts = conflictingSignatures(messages);
  expect(conflicts).toEqual({ byModel: 0, pairs: 0 });
  expect(
    signed.filter((o) => !verifiesAgainstOracle(o.request.message, o.signature ?? "")),
  ).toEqual([]);
  const lost = lostRecords(await exported(), messages, strategy);
  expect(lost).toEqual([]);
  const conflictingSent = slashableAmong(sent).length;
  expect(conflictingSent).toBe(sent.length);
  recordFigures(section, {
    processes: processes.length,
    conflict_sets: sets,
    conflicting_requests_sent: conflictingSent,
    signatures_returned: signed.length,
    signatures_per_process: processes
      .map((_, p) => signed.filter((o) => o.process === p).length)
      .join("/"),
    conflicting_signatures_returned: conflicts.byModel,
    records_lost: lost.length,
  });
}

describe("conflicting signing requests at once", () => {
  test("one process on sqlite: exactly one signature per conflict set", async () => {
    const file = config(
      "sqlite",
      `antislashing: {backend: sqlite, path: "${dir.path}/one.sqlite"}\n`,
    );
    const sigil = await startSigil(["serve", "-c", file, "--init-slashing-protection"]);
    try {
      await conflictingLoad("conflicting load, one process (sqlite)", [sigil], "complete", () =>
        exportRecords(dir.path, file, {}),
      );
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
  }, 60_000);

  test("two processes on one PostgreSQL database: exactly one signature per conflict set", async () => {
    await withTwoSignersOn("postgres", (processes, exported) =>
      conflictingLoad(
        "conflicting load, two processes (postgres)",
        processes,
        "complete",
        exported,
      ),
    );
  }, 60_000);

  test("two processes on one DynamoDB table: exactly one signature per conflict set", async () => {
    await withTwoSignersOn("dynamodb", (processes, exported) =>
      conflictingLoad("conflicting load, two processes (dynamodb)", processes, "minimal", exported),
    );
  }, 60_000);
});
