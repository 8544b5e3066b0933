import { describe, expect, test } from "bun:test";
import { startSigil } from "../support/cli";
import { verifiesAgainstOracle } from "../support/oracle";
import { startPostgres } from "../support/postgres";
import {
  attestationRequest,
  blockRequest,
  INTEROP_KEYS,
  postSign,
  type SignedMessage,
} from "../support/slashing";
import { crashSeed, recordFigures, seededRandom } from "./figures";
import { conflictingSignatures, exportRecords, lostRecords, slashableAmong } from "./records";
import { signerFiles } from "./signer-files";

/**
 * SIGKILL a signer again and again, at random moments, while it signs a load that keeps
 * asking for slashable messages. After every kill, each signature it returned must be covered by
 * the database's record (read back by `sigil slashing export`), the restarted signer must refuse
 * conflicts with what it signed before the kill, and across all rounds the full set of returned
 * signatures per validator must hold no slashable pair (checked by the reference model, not by
 * sigil). Every returned signature is verified against an independently computed signing root.
 */
const ROUNDS = 6;
const WORKERS = 8;
const VALIDATORS = INTEROP_KEYS.slice(0, 2);
const SEED = crashSeed();

const { dir, config } = signerFiles();

interface Duty {
  body: unknown;
  message: Omit<SignedMessage, "pubkey">;
  /** An attestation's source and target, as attestationRequest counts them. */
  epochs?: [number, number];
}

function attestation(source: number, target: number, salt: number): Duty {
  return { ...attestationRequest(source, target, salt), epochs: [source, target] };
}

/** Mostly progressing duties, with a steady share of conflicting ones (double votes, surrounds, double blocks). */
function nextRequest(state: { epoch: number; salt: number }, validator: number): Duty {
  state.salt++;
  const roll = (state.salt * 7919 + validator * 104729) % 10;
  if (roll < 6) {
    state.epoch++;
    return attestation(state.epoch - 1, state.epoch, state.salt);
  }
  if (roll < 8) return attestation(Math.max(0, state.epoch - 3), state.epoch + 1, state.salt);
  return blockRequest(Math.floor(state.epoch / 2), state.salt);
}

/**
 * The restarted signer must refuse, for each validator, a double vote against the last
 * attestation it returned before the kill: the record survived and is enforced.
 */
async function expectEarlierRecordsEnforced(
  url: string,
  lastSigned: ReadonlyMap<string, [number, number]>,
  sent: SignedMessage[],
): Promise<number> {
  let probes = 0;
  for (const [pubkey, [source, target]] of lastSigned) {
    const conflicting = attestationRequest(source, target, 1e9 + sent.length);
    sent.push({ pubkey, ...conflicting.message });
    const response = await postSign(url, pubkey, conflicting.body);
    expect(response.status).toBe(412);
    expect(((await response.json()) as { code: string }).code).toBe("slashing_protection");
    probes++;
  }
  return probes;
}

async function crashRounds(backend: string, configFile: string, env: Record<string, string>) {
  const random = seededRandom(SEED + backend.length);
  const sent: SignedMessage[] = [];
  const signed: SignedMessage[] = [];
  const signatures: string[] = [];
  const state = VALIDATORS.map(() => ({ epoch: 100, salt: 0 }));
  const lastSigned = new Map<string, [number, number]>();
  let kills = 0;
  let lost = 0;
  let probes = 0;
  let refused = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // The first start creates the database; every restart finds it, as a real one must.
    const init = round === 0 ? ["--init-slashing-protection"] : [];
    const sigil = await startSigil(["serve", "-c", configFile, ...init], env);
    probes += await expectEarlierRecordsEnforced(sigil.url, lastSigned, sent);
    let alive = true;
    const workers = Array.from({ length: WORKERS }, async (_, w) => {
      const validator = w % VALIDATORS.length;
      const pubkey = VALIDATORS[validator] ?? "";
      while (alive) {
        const request = nextRequest(state[validator] ?? { epoch: 0, salt: 0 }, validator);
        const message = { pubkey, ...request.message };
        sent.push(message);
        try {
          const response = await postSign(sigil.url, pubkey, request.body);
          if (response.status === 200) {
            const { signature } = (await response.json()) as { signature: string };
            signed.push(message);
            signatures.push(signature);
            if (request.epochs) lastSigned.set(pubkey, request.epochs);
          } else {
            if (response.status === 412) refused++;
            await response.arrayBuffer();
          }
        } catch {
          return; // the process is gone
        }
      }
    });
    // A random moment of the load: the kill lands before, during or after any commit.
    await Bun.sleep(150 + Math.floor(random() * 900));
    sigil.process.kill("SIGKILL");
    await sigil.process.exited;
    alive = false;
    await Promise.all(workers);
    kills++;

    const missing = lostRecords(await exportRecords(dir.path, configFile, env), signed, "complete");
    lost += missing.length;
    expect(missing).toEqual([]);
  }
  expect(signed.length).toBeGreaterThan(20);
  expect(refused).toBeGreaterThan(0);
  const conflicts = conflictingSignatures(signed);
  expect(conflicts).toEqual({ byModel: 0, pairs: 0 });
  const forged = signed.filter((m, i) => !verifiesAgainstOracle(m, signatures[i] ?? ""));
  expect(forged).toEqual([]);
  recordFigures(`sigkill under signing load (${backend})`, {
    seed: SEED,
    kills_survived: kills,
    requests_sent: sent.length,
    signatures_returned: signed.length,
    conflicting_requests_sent: slashableAmong(sent).length,
    conflicting_signatures_returned: conflicts.byModel,
    records_lost: lost,
    earlier_records_enforced_after_restart: probes,
  });
}

describe("SIGKILL under signing load", () => {
  test("sqlite: every returned signature is recorded; none conflict", async () => {
    const file = config(
      "crash-sqlite",
      `antislashing: {backend: sqlite, path: "${dir.path}/crash.sqlite"}`,
    );
    await crashRounds("sqlite", file, {});
  }, 120_000);

  test("postgres: every returned signature is recorded; none conflict", async () => {
    const postgres = await startPostgres();
    try {
      const file = config("crash-postgres", "antislashing: {backend: postgres, pool_size: 4}");
      await crashRounds("postgres", file, { SIGNER_ANTISLASHING__URL: postgres.url });
    } finally {
      await postgres.stop();
    }
  }, 120_000);
});
