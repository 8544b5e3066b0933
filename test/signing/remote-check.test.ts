import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { openPostgresStore } from "../../src/antislashing/backends/postgres/store";
import { StoreGuard } from "../../src/antislashing/guard";
import type { SlashingStore } from "../../src/antislashing/store";
import type { BlsBackend, SignCancel } from "../../src/bls/backend";
import { createBlstBackend } from "../../src/bls/blst";
import { createNobleBackend } from "../../src/bls/noble";
import { KeyStore } from "../../src/keys/key-store";
import { CanaryMonitor } from "../../src/signing/canary";
import { JobLimiter } from "../../src/signing/limiter";
import { NETWORKS } from "../../src/signing/network";
import { SigningService } from "../../src/signing/service";
import { errorOf } from "../support/errors";
import { interopSecret } from "../support/interop";
import { testLogger } from "../support/log-capture";
import { bytesToHex, hexToBytes } from "../support/oracle";
import { type PostgresServer, startPostgres } from "../support/postgres";
import { settledFlags, turns } from "../support/settle";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

/**
 * The signing service over a real PostgreSQL store: the signature is computed while the check
 * waits for the database, and leaves only on an approval. The check is held up the way a busy
 * database holds it, by another transaction's lock on the validator's row; signatures are
 * checked with noble.
 */

const PUBKEY = INTEROP_KEYS[0] as string;

let server: PostgresServer;
const stores: SlashingStore[] = [];
const admins: postgres.Sql[] = [];

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await Promise.all(admins.map((sql) => sql.end({ timeout: 1 })));
  await server?.stop();
});

interface Computed {
  readonly signature: Uint8Array;
  readonly cancel: SignCancel | undefined;
}

/**
 * The real blst backend, asynchronous as the worker pool is. Every signature it computes is kept
 * aside; with `gated`, each one waits for the test's `open()` first (a busy worker).
 */
function recordingBackend(options: { gated?: boolean } = {}) {
  const blst = createBlstBackend();
  const computed: Computed[] = [];
  const asked: (SignCancel | undefined)[] = [];
  let open: () => void = () => {};
  const gate = options.gated
    ? new Promise<void>((resolve) => {
        open = resolve;
      })
    : Promise.resolve();
  const bls: BlsBackend = {
    name: blst.name,
    importSecretKey: (secret) => blst.importSecretKey(secret),
    verify: (pk, message, signature) => blst.verify(pk, message, signature),
    forget: (key) => blst.forget(key),
    async sign(key, message, cancel) {
      asked.push(cancel);
      await gate;
      if (cancel?.aborted) throw new Error("dropped before signing");
      const signature = blst.sign(key, message);
      computed.push({ signature, cancel });
      return signature;
    },
  };
  return { bls, computed, asked, open: () => open() };
}

async function serviceOverPostgres(bls: BlsBackend) {
  const url = await server.createSchema();
  const store = await openPostgresStore({ create: true, url, poolSize: 4, forceIpv4: false });
  stores.push(store);
  const keys = new KeyStore();
  const key = bls.importSecretKey(interopSecret(0));
  expect(bytesToHex(key.publicKey)).toBe(PUBKEY);
  keys.add({ pubkey: PUBKEY, key, source: "filesystem", readonly: true });
  const logs: string[] = [];
  const logger = testLogger("info", logs);
  const guard = new StoreGuard(store, logger);
  const service = new SigningService({
    keys,
    bls,
    limiter: new JobLimiter({ maxConcurrent: 8, maxQueued: 8 }),
    guard,
    network: NETWORKS.mainnet,
    canaries: new CanaryMonitor([], { increment: () => {} }, logger),
    logger,
  });
  let counter = 0;
  const sign = (request: ReturnType<typeof attestationRequest>) =>
    service.sign(service.prepare(PUBKEY, request.body), {
      requestId: `r${++counter}`,
      deadline: new AbortController().signal,
    });
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  admins.push(sql);
  return { guard, keys, sign, sql };
}

/** Holds the validator's row lock in another transaction until `release()`. */
async function lockValidator(sql: postgres.Sql) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const transaction = sql.begin(async (tx) => {
    await tx`SELECT id FROM sigil_validators WHERE pubkey = ${Buffer.from(PUBKEY.slice(2), "hex")} FOR UPDATE`;
    holding();
    await released;
  });
  await held;
  return async () => {
    release();
    await transaction;
  };
}

async function waitFor(condition: () => boolean): Promise<void> {
  // A database round trip takes real time, not only event-loop turns: up to 10 s.
  for (let i = 0; i < 2000 && !condition(); i++) await Bun.sleep(5);
  expect(condition()).toBe(true);
}

const verifies = (signature: Uint8Array, signingRootHex: string) =>
  createNobleBackend().verify(hexToBytes(PUBKEY), hexToBytes(signingRootHex), signature);

describe("a remote check and the signature overlap; only an approval releases it", () => {
  test("postgres is a remote store; the guard then signs during the check", async () => {
    const { guard } = await serviceOverPostgres(recordingBackend().bls);
    expect(guard.signsDuringCheck).toBe(true);
  });

  test("the signature is computed while the check waits, and returned after the commit", async () => {
    const { bls, computed } = recordingBackend();
    const { sign, sql } = await serviceOverPostgres(bls);
    // The validator's first record creates its row, which the lock below needs.
    const first = attestationRequest(1, 2, 1);
    expect(verifies(await sign(first), first.message.signingRoot)).toBe(true);
    const unlock = await lockValidator(sql);
    const request = attestationRequest(2, 3, 1);
    const answer = sign(request);
    const flags = settledFlags([answer]);
    await waitFor(() => computed.length === 2);
    await turns();
    expect(flags).toEqual(["pending"]); // computed, held until its check commits
    await unlock();
    const signature = await answer;
    expect(signature).toEqual((computed[1] as Computed).signature);
    expect(verifies(signature, request.message.signingRoot)).toBe(true);
  });

  test("a refused check never releases the signature computed meanwhile", async () => {
    const { bls, computed } = recordingBackend();
    const { sign } = await serviceOverPostgres(bls);
    await sign(attestationRequest(1, 2, 1));
    const error = await errorOf(sign(attestationRequest(1, 2, 2)));
    expect(error.code).toBe("slashing_protection");
    expect(error.reason).toBe("double_vote");
    // Two signatures computed, one released: the double vote's was dropped.
    expect(computed).toHaveLength(2);
    expect((computed[1] as Computed).cancel?.aborted).toBe(true);
  });

  test("a refusal is answered only once its early signature has stopped", async () => {
    const { bls, asked, computed, open } = recordingBackend({ gated: true });
    const { sign } = await serviceOverPostgres(bls);
    const accepted = sign(attestationRequest(1, 2, 1));
    await waitFor(() => asked.length === 1);
    const refused = sign(attestationRequest(1, 2, 2));
    const flags = settledFlags([accepted, refused]);
    await waitFor(() => asked.length === 2);
    // The double vote is refused (its signature is no longer wanted) while both signatures wait
    // for the "worker"; neither answer leaves: the refusal waits for its job's work to stop.
    await waitFor(() => asked[1]?.aborted === true);
    await turns();
    expect(flags).toEqual(["pending", "pending"]);
    open();
    expect(verifies(await accepted, attestationRequest(1, 2, 1).message.signingRoot)).toBe(true);
    expect((await errorOf(refused)).reason).toBe("double_vote");
    // The dropped job was not signed at all: it was still waiting when the refusal came.
    expect(computed).toHaveLength(1);
  });

  test("a key removed while its check runs is not signed for", async () => {
    const { bls } = recordingBackend();
    const { keys, sign, sql } = await serviceOverPostgres(bls);
    await sign(attestationRequest(1, 2, 1));
    const unlock = await lockValidator(sql);
    const answer = sign(attestationRequest(2, 3, 1));
    await turns();
    expect(keys.remove(PUBKEY)).toBe(true);
    await unlock();
    expect((await errorOf(answer)).code).toBe("unknown_pubkey");
  });

  test("a key replaced while its early signature waits is signed with the key loaded now", async () => {
    const { bls, asked, computed, open } = recordingBackend({ gated: true });
    const { keys, sign } = await serviceOverPostgres(bls);
    const request = attestationRequest(1, 2, 1);
    const answer = sign(request);
    await waitFor(() => asked.length === 1);
    // A reload that read the same secret again: a new handle, and the old one forgotten, so the
    // early signature (still waiting for its "worker") fails.
    const old = keys.get(PUBKEY)?.key;
    const key = bls.importSecretKey(interopSecret(0));
    keys.replace({ pubkey: PUBKEY, key, source: "filesystem", readonly: true });
    if (old) bls.forget?.(old);
    open();
    const signature = await answer;
    expect(verifies(signature, request.message.signingRoot)).toBe(true);
    expect(asked).toHaveLength(2);
    expect(computed).toHaveLength(1);
  });

  test("a database that cannot answer: 503, and the early signature is dropped", async () => {
    const { bls, computed } = recordingBackend();
    const { sign } = await serviceOverPostgres(bls);
    await sign(attestationRequest(1, 2, 1));
    await server.pause();
    try {
      const error = await errorOf(sign(attestationRequest(2, 3, 1)));
      expect(error.code).toBe("slashing_db_unavailable");
      expect(computed.at(-1)?.cancel?.aborted).toBe(true);
    } finally {
      await server.resume();
    }
  }, 60_000);
});
