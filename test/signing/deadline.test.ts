import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStore } from "../../src/antislashing/backends/sqlite/store";
import { type SlashingGuard, StoreGuard } from "../../src/antislashing/guard";
import type { Principal } from "../../src/auth/authenticator";
import type { LocalBlsBackend } from "../../src/bls/backend";
import { createBlstBackend } from "../../src/bls/blst";
import { createPooledBackend } from "../../src/bls/pool";
import { KeyStore } from "../../src/keys/key-store";
import { CanaryMonitor } from "../../src/signing/canary";
import { JobLimiter } from "../../src/signing/limiter";
import { NETWORKS } from "../../src/signing/network";
import { SigningService } from "../../src/signing/service";
import { TempDir } from "../support/cli";
import { errorOf } from "../support/errors";
import { heldWalSync } from "../support/held-wal-sync";
import { interopSecret } from "../support/interop";
import { testLogger } from "../support/log-capture";
import { verifiesAgainstOracle } from "../support/oracle";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

/** The service is the only door: a caller that may sign with every key (auth mode none). */
const OPERATOR_OF_EVERY_KEY = async (): Promise<Principal> => ({
  kind: "unrestricted",
  management: false,
});

/**
 * A request answered 503 request_timeout (its deadline aborted, as the HTTP server does when it
 * answers) is never signed afterwards. The service runs over the real sqlite store and blst; the
 * BLS backend only counts what it is asked to sign, and the WAL sync is held at the IO edge so a
 * test decides when the first job finishes.
 */

const dir = new TempDir();
let counter = 0;
afterAll(() => dir.remove());

const PUBKEY = INTEROP_KEYS[0] as string;

/** The guard, calling `approving` as each slashing check starts (before its answer). */
function watched(guard: StoreGuard, approving: () => void): SlashingGuard {
  return {
    approve: (pubkey, request) => {
      const check = guard.approve(pubkey, request);
      approving();
      return check;
    },
  };
}

async function serviceOverSqlite(maxConcurrent: number, approving: () => void = () => {}) {
  const path = join(dir.path, `deadline-${++counter}.sqlite`);
  const { calls, syncWal } = heldWalSync(path);
  const store = await openSqliteStore(path, { create: true, syncWal });
  const blst = createBlstBackend();
  const signed: Uint8Array[] = [];
  const bls: LocalBlsBackend = {
    ...blst,
    sign(key, message) {
      signed.push(message);
      return blst.sign(key, message);
    },
  };
  const keys = new KeyStore();
  keys.add({
    pubkey: PUBKEY,
    key: bls.importSecretKey(interopSecret(0)),
    source: "filesystem",
    readonly: true,
  });
  const logger = testLogger("off", []);
  const service = new SigningService({
    keys,
    bls,
    limiter: new JobLimiter({ maxConcurrent, maxQueued: 16 }),
    guard: watched(new StoreGuard(store, logger), approving),
    network: NETWORKS.mainnet,
    canaries: new CanaryMonitor([], { increment: () => {} }, logger),
    logger,
  });
  const sign = (request: ReturnType<typeof attestationRequest>, deadline: AbortSignal) =>
    service.handle(OPERATOR_OF_EVERY_KEY, PUBKEY, async () => request.body, {
      requestId: "r",
      deadline,
    });
  const recorded = async () => {
    let attestations = 0;
    for await (const validator of (await store.exportInterchange([PUBKEY])).validators())
      attestations += validator.attestations.length;
    return attestations;
  };
  return { calls, store, signed, sign, recorded };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await Bun.sleep(2);
  expect(condition()).toBe(true);
}

describe("a request answered request_timeout is never signed afterwards", () => {
  test("queued requests are dropped before their slashing check", async () => {
    const s = await serviceOverSqlite(1);
    try {
      const first = attestationRequest(1, 2, 1);
      const running = s.sign(first, new AbortController().signal);
      // The first job holds the only slot until its record's sync is released.
      await until(() => s.calls.length === 1);
      const deadlines = [3, 4, 5].map(() => new AbortController());
      const queued = deadlines.map((deadline, i) =>
        errorOf(s.sign(attestationRequest(i + 2, i + 3, 1), deadline.signal)),
      );
      for (const deadline of deadlines) deadline.abort();
      for (const error of await Promise.all(queued)) expect(error?.code).toBe("request_timeout");
      s.calls[0]?.release();
      const signature = await running;
      expect(
        verifiesAgainstOracle(
          { pubkey: PUBKEY, signingRoot: first.message.signingRoot },
          `0x${Buffer.from(signature).toString("hex")}`,
        ),
      ).toBe(true);
      expect(s.signed).toHaveLength(1);
      // Only the first message reached the slashing database.
      expect(await s.recorded()).toBe(1);
    } finally {
      for (const call of s.calls) call.release();
      await s.store.close();
    }
  });

  test("a deadline passed during the slashing check keeps the record and signs nothing", async () => {
    const deadline = new AbortController();
    // The client is answered while the check is under way (its commit waits for the group commit).
    let first = true;
    const s = await serviceOverSqlite(4, () => {
      if (first) deadline.abort();
      first = false;
    });
    try {
      const message = attestationRequest(7, 8, 1);
      const answered = errorOf(s.sign(message, deadline.signal));
      await until(() => s.calls.length === 1);
      s.calls[0]?.release();
      expect((await answered)?.code).toBe("request_timeout");
      expect(s.signed).toHaveLength(0);
      expect(await s.recorded()).toBe(1);
      // The client's retry of the same message is the "same data" the record allows.
      const retry = s.sign(message, new AbortController().signal);
      await until(() => s.calls.length === 2);
      s.calls[1]?.release();
      await retry;
      expect(s.signed).toHaveLength(1);
    } finally {
      for (const call of s.calls) call.release();
      await s.store.close();
    }
  });

  test("a signature computed while the record synced is not released after the deadline", async () => {
    const s = await serviceOverSqlite(4);
    try {
      const deadline = new AbortController();
      const answered = errorOf(s.sign(attestationRequest(9, 10, 1), deadline.signal));
      await until(() => s.calls.length === 1 && s.signed.length === 1);
      deadline.abort();
      s.calls[0]?.release();
      expect((await answered)?.code).toBe("request_timeout");
    } finally {
      for (const call of s.calls) call.release();
      await s.store.close();
    }
  });

  test("the worker pool drops a job whose deadline passed while it waited for its worker", async () => {
    const blst = createBlstBackend();
    const pool = await createPooledBackend(blst, {
      workers: 1,
      backendName: "blst",
      logger: testLogger("off", []),
    });
    try {
      const key = pool.importSecretKey(interopSecret(0));
      const root = new Uint8Array(32).fill(7);
      const answered = new AbortController();
      answered.abort();
      expect((await errorOf(pool.sign(key, root, answered.signal)))?.code).toBe("request_timeout");
      const signature = await pool.sign(key, root, new AbortController().signal);
      expect(blst.verify(key.publicKey, root, signature)).toBe(true);
    } finally {
      await pool.close();
    }
  });
});
