import { afterEach, describe, expect, test } from "bun:test";
import { availableParallelism } from "node:os";
import { be32, hex } from "../../test/signing/bls-support";
import { SigilError } from "../errors";
import {
  type BlsImportResult,
  type BlsSecretKey,
  type LocalBlsBackend,
  PUBLIC_KEY_MISMATCH,
} from "./backend";
import { createBlstBackend } from "./blst";
import { CURVE_ORDER } from "./key";
import { createNobleBackend } from "./noble";
import {
  type BlsWorkerPool,
  type BlsWorkerPoolOptions,
  createPooledBackend,
  defaultBlsWorkers,
} from "./pool";

const blst = createBlstBackend();
const noble = createNobleBackend();

/** A uniformly random valid secret key: 32 random bytes, redrawn while 0 or >= r. */
function randomSecret(): Uint8Array {
  for (;;) {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    let v = 0n;
    for (const b of bytes) v = (v << 8n) | BigInt(b);
    if (v !== 0n && v < CURVE_ORDER) return bytes;
  }
}

const randomMessage = () => crypto.getRandomValues(new Uint8Array(32));

interface LogLine {
  level: string;
  msg: string;
  fields?: Record<string, unknown>;
}

/** The real worker, with every spawned Worker kept (and its `close` event recorded). */
function watchedSpawn() {
  const workers: Worker[] = [];
  const closed = new Set<Worker>();
  const spawn = () => {
    const worker = new Worker(new URL("./worker.ts", import.meta.url).href);
    worker.addEventListener("close", () => closed.add(worker));
    workers.push(worker);
    return worker;
  };
  return { spawn, workers, closed };
}

const pools: BlsWorkerPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

async function startPool(
  inner: LocalBlsBackend,
  options: Partial<BlsWorkerPoolOptions> = {},
): Promise<{ pool: BlsWorkerPool; logs: LogLine[] }> {
  const logs: LogLine[] = [];
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    logs.push({ level, msg, fields });
  const pool = await createPooledBackend(inner, {
    workers: 2,
    backendName: "blst",
    logger: { error: log("error"), warn: log("warn"), info: log("info") },
    ...options,
  });
  pools.push(pool);
  return { pool, logs };
}

/** Settles every promise; rejections are kept, not thrown. */
function settle<T>(promises: Promise<T>[]) {
  return Promise.allSettled(promises);
}

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

describe("createPooledBackend (blst workers)", () => {
  test("signs exactly as blst on the main thread, for many random keys and messages", async () => {
    const { pool } = await startPool(blst);
    const secrets = Array.from({ length: 40 }, randomSecret);
    const pooled = secrets.map((secret) => pool.importSecretKey(secret));
    const local = secrets.map((secret) => blst.importSecretKey(secret));
    // Public keys come synchronously, from the main thread, as with a local backend.
    expect(pooled.map((key) => hex(key.publicKey))).toEqual(local.map((key) => hex(key.publicKey)));
    const jobs = Array.from({ length: 600 }, (_, i) => ({
      k: i % secrets.length,
      m: randomMessage(),
    }));
    const signatures = await Promise.all(
      jobs.map(({ k, m }) => pool.sign(pooled[k] as BlsSecretKey, m)),
    );
    let mismatches = 0;
    signatures.forEach((signature, i) => {
      const { k, m } = jobs[i] as (typeof jobs)[number];
      if (hex(signature) !== hex(blst.sign(local[k] as BlsSecretKey, m))) mismatches++;
    });
    expect(mismatches).toBe(0);
    // Independent check with the other implementation (noble verify is slow: a sample).
    for (let i = 0; i < jobs.length; i += 60) {
      const { k, m } = jobs[i] as (typeof jobs)[number];
      expect(noble.verify(pooled[k]?.publicKey as Uint8Array, m, signatures[i] as Uint8Array)).toBe(
        true,
      );
    }
    expect(
      pool.verify(pooled[0]?.publicKey as Uint8Array, randomMessage(), signatures[0] as Uint8Array),
    ).toBe(false);
  });

  test("spreads keys evenly over the workers", async () => {
    const { pool } = await startPool(blst, { workers: 3 });
    for (let i = 0; i < 10; i++) pool.importSecretKey(randomSecret());
    expect(pool.stats().map((s) => s.keys)).toEqual([4, 3, 3]);
  });

  test("refuses an invalid secret synchronously, with the local backend's message", async () => {
    const { pool } = await startPool(blst);
    expect(() => pool.importSecretKey(new Uint8Array(32))).toThrow("BLS secret key is zero");
    expect(() => pool.importSecretKey(new Uint8Array(31).fill(1))).toThrow(/32 bytes/);
    expect(pool.stats().map((s) => s.keys)).toEqual([0, 0]);
  });

  test("answers the jobs of one key in the order they were asked for", async () => {
    const { pool } = await startPool(blst);
    const keys = Array.from({ length: 4 }, () => pool.importSecretKey(randomSecret()));
    const done = new Map<number, number[]>(keys.map((_, k) => [k, []]));
    const jobs: Promise<void>[] = [];
    // Interleaved keys, several turns, so that batches form and both workers are busy.
    for (let turn = 0; turn < 5; turn++) {
      for (let i = 0; i < 100; i++) {
        const k = i % keys.length;
        const n = turn * 100 + i;
        jobs.push(
          pool.sign(keys[k] as BlsSecretKey, randomMessage()).then(() => {
            done.get(k)?.push(n);
          }),
        );
      }
      await Bun.sleep(1);
    }
    await Promise.all(jobs);
    for (const order of done.values()) {
      expect(order).toHaveLength(125);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
  });

  test("a forgotten key fails clearly; jobs asked for before the forget are still signed", async () => {
    const { pool } = await startPool(blst);
    const secret = randomSecret();
    const key = pool.importSecretKey(secret);
    const other = pool.importSecretKey(randomSecret());
    const message = randomMessage();
    const before = pool.sign(key, message);
    pool.forget?.(key);
    expect(hex(await before)).toBe(hex(blst.sign(blst.importSecretKey(secret), message)));
    await expect(pool.sign(key, message)).rejects.toThrow(
      "BLS key was not imported by this worker pool, or was removed",
    );
    expect(pool.stats().reduce((n, s) => n + s.keys, 0)).toBe(1);
    expect(other.publicKey).toHaveLength(48);
    expect(pool.verify(other.publicKey, message, await pool.sign(other, message))).toBe(true);
  });

  test("a key from another backend is refused", async () => {
    const { pool } = await startPool(blst);
    await expect(pool.sign(blst.importSecretKey(randomSecret()), randomMessage())).rejects.toThrow(
      /not imported by this worker pool/,
    );
  });

  test("a handle dropped without forget releases its key once collected", async () => {
    const { pool } = await startPool(blst);
    const kept = pool.importSecretKey(randomSecret());
    (() => {
      for (let i = 0; i < 5; i++) pool.importSecretKey(randomSecret());
    })();
    const held = () => pool.stats().reduce((n, s) => n + s.keys, 0);
    expect(held()).toBe(6);
    await until(() => {
      Bun.gc(true);
      return held() === 1;
    }, "the dropped handles to be collected");
    expect(
      pool.verify(kept.publicKey, new Uint8Array(32), await pool.sign(kept, new Uint8Array(32))),
    ).toBe(true);
  });

  test("close() ends the workers and fails what is still outstanding", async () => {
    const watched = watchedSpawn();
    const { pool } = await startPool(blst, { spawn: watched.spawn });
    const key = pool.importSecretKey(randomSecret());
    const outstanding = Array.from({ length: 200 }, () => pool.sign(key, randomMessage()));
    const settled = settle(outstanding);
    await pool.close();
    const results = await settled;
    const failed = results.filter((r) => r.status === "rejected");
    expect(failed.length).toBeGreaterThan(0);
    for (const r of failed) {
      expect(r.reason).toBeInstanceOf(SigilError);
      expect((r.reason as SigilError).code).toBe("shutting_down");
    }
    await until(() => watched.closed.size === 2, "both workers to end");
    await expect(pool.sign(key, randomMessage())).rejects.toThrow("the signer is stopping");
    expect(() => pool.importSecretKey(randomSecret())).toThrow(/closed/);
  });
});

/** The keys of results that must all have succeeded. */
function importedKeys(results: BlsImportResult[]): BlsSecretKey[] {
  return results.map((result, i) => {
    if (!result.ok) throw new Error(`import ${i} failed: ${result.error.message}`);
    return result.key;
  });
}

/** What the local backend throws for `secret`, or "imported". */
function localRefusal(secret: Uint8Array): string {
  try {
    blst.importSecretKey(secret);
    return "imported";
  } catch (error) {
    return (error as Error).message;
  }
}

describe("createPooledBackend importSecretKeys (public keys derived in the workers)", () => {
  test("public keys are noble's, and the keys sign as blst does on the main thread", async () => {
    const { pool } = await startPool(blst, { workers: 3 });
    const secrets = Array.from({ length: 30 }, randomSecret);
    const keys = importedKeys(await pool.importSecretKeys(secrets));
    // noble (pure TypeScript) is an implementation independent of the workers' blst.
    expect(keys.map((key) => hex(key.publicKey))).toEqual(
      secrets.map((secret) => hex(noble.importSecretKey(secret).publicKey)),
    );
    expect(pool.stats().map((s) => s.keys)).toEqual([10, 10, 10]);
    const messages = keys.map(() => randomMessage());
    const signatures = await Promise.all(
      keys.map((key, i) => pool.sign(key, messages[i] as Uint8Array)),
    );
    signatures.forEach((signature, i) => {
      const reference = blst.importSecretKey(secrets[i] as Uint8Array);
      expect(hex(signature)).toBe(hex(blst.sign(reference, messages[i] as Uint8Array)));
    });
    expect(
      noble.verify(
        keys[0]?.publicKey as Uint8Array,
        messages[0] as Uint8Array,
        signatures[0] as Uint8Array,
      ),
    ).toBe(true);
  });

  test("the secrets are copied at the call: zeroing them at once changes nothing", async () => {
    const { pool } = await startPool(blst);
    const secrets = Array.from({ length: 8 }, randomSecret);
    const expected = secrets.map((secret) => hex(blst.importSecretKey(secret).publicKey));
    const pending = pool.importSecretKeys(secrets);
    for (const secret of secrets) secret.fill(0);
    const keys = importedKeys(await pending);
    expect(keys.map((key) => hex(key.publicKey))).toEqual(expected);
    const message = randomMessage();
    expect(
      pool.verify(
        keys[7]?.publicKey as Uint8Array,
        message,
        await pool.sign(keys[7] as BlsSecretKey, message),
      ),
    ).toBe(true);
  });

  test("an invalid secret fails alone, with the error importSecretKey gives, and is not kept", async () => {
    const { pool } = await startPool(blst);
    const good = [randomSecret(), randomSecret()];
    const invalid = [
      new Uint8Array(32), // zero
      be32(CURVE_ORDER), // the order itself
      be32(CURVE_ORDER + 1n),
      new Uint8Array(32).fill(0xff),
      new Uint8Array(31).fill(1),
      new Uint8Array(33).fill(1),
    ];
    const results = await pool.importSecretKeys([
      good[0] as Uint8Array,
      ...invalid,
      good[1] as Uint8Array,
    ]);
    expect(results.map((r) => r.ok)).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
      false,
      true,
    ]);
    const messages = results.slice(1, -1).map((r) => (r.ok ? "imported" : r.error.message));
    expect(messages).toEqual(invalid.map(localRefusal));
    // The local backend's reasons, spelled out: the contract, not only agreement.
    expect(messages.slice(0, 4)).toEqual([
      "BLS secret key is zero",
      "BLS secret key is not below the curve order",
      "BLS secret key is not below the curve order",
      "BLS secret key is not below the curve order",
    ]);
    expect(messages[4]).toMatch(/32 bytes/);
    for (const message of messages) expect(message).not.toMatch(/[0-9a-f]{16}/i);
    expect(pool.stats().reduce((n, s) => n + s.keys, 0)).toBe(2);
    expect(importedKeys([results[7] as BlsImportResult]).map((k) => hex(k.publicKey))).toEqual([
      hex(noble.importSecretKey(good[1] as Uint8Array).publicKey),
    ]);
  });

  test("a pool closed meanwhile refuses the imports it has not answered, and any later call", async () => {
    const { pool } = await startPool(blst, { backendName: "noble", workers: 1 });
    const pending = pool.importSecretKeys(Array.from({ length: 200 }, randomSecret));
    await pool.close();
    const results = await pending;
    const refused = results.filter((r) => !r.ok);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(!r.ok && r.error).toBeInstanceOf(SigilError);
    await expect(pool.importSecretKeys([randomSecret()])).rejects.toThrow(/closed/);
  });
});

describe("createPooledBackend importSecretKeys with claimed public keys (a cache's)", () => {
  const mismatch = new RegExp(PUBLIC_KEY_MISMATCH.replace(/[()]/g, "\\$&"));
  /**
   * Why a signing failed ("" if it did not), awaited here: `expect(promise).rejects` of bun
   * 1.4.5 waits on the promise without delivering worker messages, so a refusal a worker answers
   * after an earlier one never reaches it and the test hangs until its timeout.
   */
  const refusal = (signing: Promise<Uint8Array>): Promise<string> =>
    signing.then(
      () => "",
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );

  test("a claimed public key is taken, not derived: a right one signs, a wrong one never does", async () => {
    const { pool, logs } = await startPool(blst);
    const secrets = Array.from({ length: 6 }, randomSecret);
    const truth = secrets.map((secret) => noble.importSecretKey(secret).publicKey);
    // Key 2 claims key 5's public key; key 4 claims nothing (derived); the others their own.
    const claims = truth.map((pk, i) => (i === 2 ? truth[5] : i === 4 ? undefined : pk));
    const keys = importedKeys(await pool.importSecretKeys(secrets, claims));
    expect(keys.map((key) => key.pubkey)).toEqual(
      claims.map((claim, i) => hex((claim ?? truth[i]) as Uint8Array)),
    );
    const message = randomMessage();
    for (const i of [0, 1, 3, 4, 5]) {
      const signature = await pool.sign(keys[i] as BlsSecretKey, message);
      expect(noble.verify(truth[i] as Uint8Array, message, signature)).toBe(true);
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await refusal(pool.sign(keys[2] as BlsSecretKey, message))).toMatch(mismatch);
    }
    const errors = logs.filter((l) => l.level === "error" && l.msg.includes("does not match"));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.fields?.pubkey).toBe(hex(truth[5] as Uint8Array));
  });

  test("a restarted worker gets each key with its public key: the wrong one still never signs", async () => {
    const watched = watchedSpawn();
    const { pool } = await startPool(blst, { workers: 1, spawn: watched.spawn });
    const secrets = [randomSecret(), randomSecret()];
    const truth = secrets.map((secret) => blst.importSecretKey(secret).publicKey);
    const keys = importedKeys(await pool.importSecretKeys(secrets, [truth[0], truth[0]]));
    watched.workers[0]?.terminate();
    await until(() => watched.workers.length === 2, "the restarted worker");
    const message = randomMessage();
    await until(() => pool.stats()[0]?.inFlight === 0, "a quiet worker");
    const signature = await pool.sign(keys[0] as BlsSecretKey, message);
    expect(blst.verify(truth[0] as Uint8Array, message, signature)).toBe(true);
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await refusal(pool.sign(keys[1] as BlsSecretKey, message))).toMatch(mismatch);
    }
  });

  test("a claim that is not 48 bytes fails its key alone", async () => {
    const { pool } = await startPool(blst);
    const secrets = [randomSecret(), randomSecret()];
    const results = await pool.importSecretKeys(secrets, [new Uint8Array(47), undefined]);
    expect(results[0]?.ok === false && results[0].error.message).toMatch(/48 bytes/);
    expect(results[1]?.ok).toBe(true);
    expect(pool.stats().reduce((n, s) => n + s.keys, 0)).toBe(1);
  });
});

describe("createPooledBackend (noble workers)", () => {
  test("noble workers sign as blst does, and blst verifies them", async () => {
    const { pool } = await startPool(blst, { backendName: "noble", workers: 2 });
    const secrets = Array.from({ length: 6 }, randomSecret);
    const pooled = secrets.map((secret) => pool.importSecretKey(secret));
    const jobs = Array.from({ length: 12 }, (_, i) => ({ k: i % 6, m: randomMessage() }));
    const signatures = await Promise.all(
      jobs.map(({ k, m }) => pool.sign(pooled[k] as BlsSecretKey, m)),
    );
    signatures.forEach((signature, i) => {
      const { k, m } = jobs[i] as (typeof jobs)[number];
      const secret = secrets[k] as Uint8Array;
      expect(hex(signature)).toBe(hex(blst.sign(blst.importSecretKey(secret), m)));
      expect(blst.verify(pooled[k]?.publicKey as Uint8Array, m, signature)).toBe(true);
    });
  });

  test(
    "a worker terminated mid-batch fails its in-flight jobs clearly, restarts and signs again",
    async () => {
      // noble (≈10 ms a signature) keeps a batch in flight long enough to be cut short.
      const watched = watchedSpawn();
      const { pool, logs } = await startPool(blst, {
        backendName: "noble",
        workers: 1,
        spawn: watched.spawn,
      });
      const secret = randomSecret();
      const key = pool.importSecretKey(secret);
      const reference = blst.importSecretKey(secret);
      const messages = Array.from({ length: 60 }, randomMessage);
      const jobs = messages.map((m) => pool.sign(key, m));
      await jobs[0];
      watched.workers[0]?.terminate();
      const results = await settle(jobs);

      const failed = results.filter((r) => r.status === "rejected");
      expect(failed.length).toBeGreaterThan(0);
      for (const r of failed) {
        expect(r.reason).toBeInstanceOf(SigilError);
        expect((r.reason as SigilError).code).toBe("internal_error");
        expect((r.reason as Error).message).toContain(
          "stopped before answering; the request was not signed",
        );
      }
      // Whatever was answered is right: jobs not yet sent went to the restarted worker.
      let signed = 0;
      results.forEach((r, i) => {
        if (r.status !== "fulfilled") return;
        signed++;
        expect(hex(r.value)).toBe(hex(blst.sign(reference, messages[i] as Uint8Array)));
      });
      expect(signed).toBeGreaterThan(0);
      expect(watched.workers).toHaveLength(2);
      expect(logs.some((l) => l.level === "error" && l.msg.includes("stopped; restarting"))).toBe(
        true,
      );

      // Recovered: the new worker has the key again.
      const message = randomMessage();
      expect(hex(await pool.sign(key, message))).toBe(hex(blst.sign(reference, message)));
      expect(logs.some((l) => l.msg === "BLS signing worker restarted")).toBe(true);
    },
    { timeout: 60_000 },
  );
});

describe("createPooledBackend restarts", () => {
  test(
    "a worker terminated while deriving public keys: the next worker derives them, and holds every key",
    async () => {
      // noble (≈1.7 ms a public key) keeps the batch in the worker long enough to be cut short.
      const watched = watchedSpawn();
      const { pool, logs } = await startPool(blst, {
        backendName: "noble",
        workers: 1,
        spawn: watched.spawn,
      });
      const earlier = importedKeys(await pool.importSecretKeys([randomSecret()]));
      const secrets = Array.from({ length: 300 }, randomSecret);
      const pending = pool.importSecretKeys(secrets);
      await Bun.sleep(20);
      watched.workers[0]?.terminate();
      const keys = importedKeys(await pending);
      expect(watched.workers).toHaveLength(2);
      expect(logs.some((l) => l.msg.includes("stopped; restarting"))).toBe(true);
      expect(keys.map((key) => hex(key.publicKey))).toEqual(
        secrets.map((secret) => hex(blst.importSecretKey(secret).publicKey)),
      );
      // The new worker holds the keys of both imports.
      for (const key of [earlier[0], keys[0], keys[299]] as BlsSecretKey[]) {
        const message = randomMessage();
        expect(blst.verify(key.publicKey, message, await pool.sign(key, message))).toBe(true);
      }
      expect(pool.stats()).toEqual([{ keys: 301, queued: 0, inFlight: 0 }]);
    },
    { timeout: 60_000 },
  );

  test(
    "imports its worker cannot answer are derived on the main thread, and the keys reach the next worker",
    async () => {
      const watched = watchedSpawn();
      let broken = false;
      // While broken, a worker that exits before it is ready: the restart fails.
      const exitAtOnce = URL.createObjectURL(
        new Blob(["process.exit(7);"], { type: "application/javascript" }),
      );
      const spawn = () => (broken ? new Worker(exitAtOnce) : watched.spawn());
      const { pool, logs } = await startPool(blst, { workers: 1, spawn });
      broken = true;
      // Sent to a worker that dies before answering; the restart fails, so the main thread answers.
      const lost = [randomSecret(), randomSecret()];
      const lostResults = pool.importSecretKeys(lost);
      watched.workers[0]?.terminate();
      const lostKeys = importedKeys(await lostResults);
      expect(logs.some((l) => l.msg === "BLS signing worker could not start")).toBe(true);
      // Asked for while the worker is down: answered at once, from the main thread.
      const whileDown = [randomSecret(), new Uint8Array(32)];
      const results = await pool.importSecretKeys(whileDown);
      expect(results[1]?.ok === false && results[1].error.message).toBe("BLS secret key is zero");
      const keys = [...lostKeys, ...importedKeys(results.slice(0, 1))];
      const secrets = [...lost, whileDown[0]] as Uint8Array[];
      expect(keys.map((key) => hex(key.publicKey))).toEqual(
        secrets.map((secret) => hex(noble.importSecretKey(secret).publicKey)),
      );
      expect(pool.stats()[0]?.keys).toBe(3);

      broken = false;
      await until(() => watched.workers.length === 2, "a restart that works", 30_000);
      for (const [i, key] of keys.entries()) {
        const message = randomMessage();
        expect(hex(await pool.sign(key, message))).toBe(
          hex(blst.sign(blst.importSecretKey(secrets[i] as Uint8Array), message)),
        );
      }
    },
    { timeout: 60_000 },
  );

  test("a worker that cannot be restarted fails its jobs at once, and is tried again later", async () => {
    const watched = watchedSpawn();
    let broken = false;
    const spawn = () => {
      if (broken) throw new Error("no threads left");
      return watched.spawn();
    };
    const { pool, logs } = await startPool(blst, { workers: 1, spawn });
    const secret = randomSecret();
    const key = pool.importSecretKey(secret);
    const message = randomMessage();
    expect(pool.verify(key.publicKey, message, await pool.sign(key, message))).toBe(true);

    broken = true;
    watched.workers[0]?.terminate();
    await until(
      () => logs.some((l) => l.msg === "BLS signing worker could not start"),
      "the failed restart",
    );
    expect(logs.find((l) => l.msg === "BLS signing worker could not start")?.fields).toMatchObject({
      reason: "it could not be created: no threads left",
    });
    await expect(pool.sign(key, message)).rejects.toThrow("is down and being restarted");

    broken = false;
    await until(() => watched.workers.length === 2, "the next restart attempt");
    const again = randomMessage();
    expect(hex(await pool.sign(key, again))).toBe(
      hex(blst.sign(blst.importSecretKey(secret), again)),
    );
  });
});

describe("createPooledBackend start-up", () => {
  /** A worker from source text: what an incomplete or broken worker build would do. */
  const scriptWorker = (source: string) => () =>
    new Worker(URL.createObjectURL(new Blob([source], { type: "application/javascript" })));

  test("a worker whose self-test signature is wrong stops the pool from starting", async () => {
    const fake = scriptWorker(
      "addEventListener('message', () => postMessage({ type: 'ready', selfTestSignature: new Uint8Array(96) }));",
    );
    await expect(startPool(blst, { spawn: fake })).rejects.toThrow(
      /did not start: .*self-test signature differs/,
    );
  });

  test("a worker that exits at once stops the pool from starting", async () => {
    await expect(startPool(blst, { spawn: scriptWorker("process.exit(7);") })).rejects.toThrow(
      /did not start: .*stopped while starting/,
    );
  });

  test("a worker that cannot be created stops the pool from starting", async () => {
    const spawn = () => {
      throw new Error("no threads left");
    };
    await expect(startPool(blst, { spawn })).rejects.toThrow(
      "the BLS worker pool did not start: BLS signing worker 0: it could not be created: no threads left",
    );
  });

  test("zero workers is not a pool", async () => {
    await expect(createPooledBackend(blst, { workers: 0, backendName: "blst" })).rejects.toThrow(
      /at least one worker/,
    );
  });
});

test("defaultBlsWorkers is one per core, and at least 1", () => {
  expect(defaultBlsWorkers(0)).toBe(1);
  expect(defaultBlsWorkers(1)).toBe(1);
  expect(defaultBlsWorkers(2)).toBe(2);
  expect(defaultBlsWorkers(8)).toBe(8);
  expect(defaultBlsWorkers()).toBe(Math.max(1, availableParallelism()));
});
