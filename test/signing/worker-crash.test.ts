import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { createPooledBackend } from "../../src/bls/pool";
import { isSigilError } from "../../src/errors";
import { STATUS_BY_CODE } from "../../src/http/errors";
import { TempDir } from "../support/cli";
import { interopSecret } from "../support/interop";
import { testLogger } from "../support/log-capture";
import { bytesToHex, hexToBytes } from "../support/oracle";
import { interopSigningService } from "../support/signing-service";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

/**
 * The signing service with its BLS work in a real worker pool (the packed `sign` messages of
 * src/bls/protocol.ts) over a real sqlite store: what a client is answered, and what is recorded,
 * when the slashing check refuses, and when the worker dies with the request's job in it.
 */

const dir = new TempDir();
afterAll(() => dir.remove());

const PUBKEY = INTEROP_KEYS[0] as string;
const noble = createNobleBackend();

/** The HTTP status a request's outcome is answered with (the route maps errors by this table). */
async function statusOf(answer: Promise<Uint8Array>): Promise<number | Uint8Array> {
  try {
    return await answer;
  } catch (error) {
    return STATUS_BY_CODE[isSigilError(error) ? error.code : "internal_error"];
  }
}

async function signerWithPool(name: string) {
  const workers: Worker[] = [];
  const spawn = () => {
    const worker = new Worker(new URL("../../src/bls/worker.ts", import.meta.url).href);
    workers.push(worker);
    return worker;
  };
  const logs: string[] = [];
  const logger = testLogger("info", logs);
  // noble in the worker: about 10 ms a signature, so a batch is still in the worker when it dies.
  const bls = await createPooledBackend(createBlstBackend(), {
    workers: 1,
    backendName: "noble",
    logger,
    spawn,
  });
  // Every job handed to the pool is counted (the pool itself is untouched).
  const jobs = { sent: 0 };
  const sign: typeof bls.sign = (...args) => {
    jobs.sent++;
    return bls.sign(...args);
  };
  const counted = { ...bls, sign };
  const store = await openSqliteStore(join(dir.path, `${name}.sqlite`), { create: true });
  const { sign: handle } = interopSigningService(store, counted, logger);
  const close = async () => {
    await bls.close();
    await store.close();
  };
  return { jobs, sign: handle, workers, close };
}

const verifies = (signature: Uint8Array, signingRootHex: string) =>
  noble.verify(hexToBytes(PUBKEY), hexToBytes(signingRootHex), signature);

test("a refused check answers 412 and sends nothing to the worker; an approved one is signed", async () => {
  const signer = await signerWithPool("refused");
  try {
    const first = attestationRequest(10, 11, 1);
    const signature = await signer.sign(first);
    expect(verifies(signature as Uint8Array, first.message.signingRoot)).toBe(true);
    expect(signer.jobs.sent).toBe(1);
    // Same target, another root: a double vote.
    expect(await statusOf(signer.sign(attestationRequest(10, 11, 2)))).toBe(412);
    // Surrounding the first vote.
    expect(await statusOf(signer.sign(attestationRequest(9, 12, 3)))).toBe(412);
    expect(signer.jobs.sent).toBe(1);
    expect(signer.workers).toHaveLength(1);
  } finally {
    await signer.close();
  }
}, 60_000);

test("a worker that dies mid-request: 500 with the record kept and no signature; the record still refuses", async () => {
  const signer = await signerWithPool("crash");
  try {
    // One validator, rising epochs: each is checked and recorded, then queued to the one worker.
    const requests = Array.from({ length: 40 }, (_, i) => attestationRequest(2 * i, 2 * i + 1, 7));
    const answers = requests.map((request) => statusOf(signer.sign(request)));
    await answers[0];
    signer.workers[0]?.terminate();
    const outcomes = await Promise.all(answers);

    const failed = outcomes.flatMap((outcome, i) => (outcome === 500 ? [i] : []));
    expect(failed.length).toBeGreaterThan(0);
    outcomes.forEach((outcome, i) => {
      if (outcome instanceof Uint8Array) {
        const message = requests[i]?.message.signingRoot as string;
        expect(verifies(outcome, message)).toBe(true);
      } else expect(outcome).toBe(500);
    });
    // The record of each unanswered request stands: a conflicting vote for its target is refused,
    // so the message the client may have seen signed can never be contradicted.
    for (const i of failed) {
      expect(await statusOf(signer.sign(attestationRequest(2 * i, 2 * i + 1, 8)))).toBe(412);
    }
    // The restarted worker signs the same message again (same data, the same deterministic
    // signature a client might have missed), so a retry is answered.
    const retry = requests[failed[0] as number] as (typeof requests)[number];
    const again = await signer.sign(retry);
    expect(verifies(again, retry.message.signingRoot)).toBe(true);
    expect(signer.workers).toHaveLength(2);
    expect(bytesToHex(again)).toBe(
      bytesToHex(
        noble.sign(noble.importSecretKey(interopSecret(0)), hexToBytes(retry.message.signingRoot)),
      ),
    );
  } finally {
    await signer.close();
  }
}, 60_000);
