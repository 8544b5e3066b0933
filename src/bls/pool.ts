/**
 * A BLS backend that signs in worker threads (worker.ts), so that signing uses every core while
 * the main thread does HTTP, authorization and slashing protection.
 *
 * - Keys: each key goes to one worker, the one holding the fewest keys, for the key's whole life.
 *   `importSecretKey` checks the secret and computes the public key on the main thread with the
 *   local backend (callers get the public key at once, as before). `importSecretKeys`, for loading
 *   many keys at start-up, lets each key's worker derive its public key instead (the costly part
 *   of an import: 0.15 ms with blst), so the workers do it in parallel while the main thread goes
 *   on reading key files; a worker down or failing to start falls back to the main thread.
 * - Order: every job of a key goes to that key's worker, which signs its messages one after the
 *   other, so the signatures of one validator come back in the order `sign` was called.
 * - Batching (worker-slot.ts): at most MAX_BATCHES_IN_FLIGHT messages are outstanding per worker; jobs that queue
 *   up meanwhile leave together in one message, at most MAX_BATCH jobs each.
 * - Failure: when a worker stops, its outstanding jobs fail with `internal_error` (no signature
 *   rather than a doubtful one), it is started again and given its keys again, and the jobs
 *   still queued for it go to the new worker.
 *
 * To give a restarted worker its keys, the pool keeps a copy of each secret on the main thread:
 * a secret cannot be obtained again (keystores need their password and seconds of KDF). Before
 * the pool the main thread held every secret anyway. A copy is zeroed when its key is forgotten
 * (or its handle is garbage-collected) and when the pool closes.
 */
import { availableParallelism } from "node:os";
import { SigilError } from "../errors";
import type { Logger } from "../observability/log";
import {
  type BlsBackend,
  type BlsBackendName,
  type BlsImportResult,
  type BlsSecretKey,
  type LocalBlsBackend,
  SECRET_KEY_BYTES,
} from "./backend";
import { createKeyHandle, parseSecretScalar } from "./key";
import { SELF_TEST_KEY, SELF_TEST_MESSAGE } from "./select";
import { type BlsWorkerStats, type KeyRecord, reasonOf, WorkerSlot } from "./worker-slot";

export type { BlsWorkerStats } from "./worker-slot";

export interface BlsWorkerPoolOptions {
  /** Worker threads, at least 1. */
  workers: number;
  /** The backend each worker signs with. */
  backendName: BlsBackendName;
  logger?: Pick<Logger, "error" | "warn" | "info">;
  /** Starts one worker thread; tests wrap it to get hold of the workers. */
  spawn?: () => Worker;
}

export interface BlsWorkerPool extends BlsBackend {
  importSecretKeys(secrets: readonly Uint8Array[]): Promise<BlsImportResult[]>;
  sign(key: BlsSecretKey, message: Uint8Array, cancel?: AbortSignal): Promise<Uint8Array>;
  readonly workers: number;
  /** Per worker: keys held, jobs queued here, jobs sent and not yet answered. */
  stats(): BlsWorkerStats[];
  /** Terminates the workers; jobs still outstanding fail with `shutting_down`. */
  close(): Promise<void>;
}

/**
 * Default `bls.workers`: one per core. A blst signature costs a worker more CPU than the main
 * thread spends on the rest of the request (HTTP, JSON, signing root, slashing protection), so
 * with a core kept free for the main thread the workers are the bottleneck; measured on 2 cores,
 * 2 workers served about 13% more requests than 1 (and 3 no more than 2).
 */
export function defaultBlsWorkers(cores: number = availableParallelism()): number {
  return Math.max(1, cores);
}

/** Set by scripts/build.ts in the compiled binary: the worker's path from the bundle's root. */
declare const SIGIL_BLS_WORKER: string | undefined;

/**
 * From source, import.meta.url is this file and the worker sits beside it. In the compiled binary
 * every module is bundled into one file at the root of Bun's embedded file system, so
 * import.meta.url is that root and the worker entrypoint is found by its path from there.
 */
function spawnWorker(): Worker {
  const path = typeof SIGIL_BLS_WORKER === "undefined" ? "./worker.ts" : SIGIL_BLS_WORKER;
  return new Worker(new URL(path, import.meta.url).href);
}

/**
 * Starts `options.workers` workers and resolves once each has signed the self-test exactly as
 * `inner` does; rejects (after stopping them) when one cannot start.
 */
export async function createPooledBackend(
  inner: LocalBlsBackend,
  options: BlsWorkerPoolOptions,
): Promise<BlsWorkerPool> {
  const count = options.workers;
  if (!Number.isInteger(count) || count < 1) {
    throw new Error(`a BLS worker pool needs at least one worker, got ${String(count)}`);
  }
  const reference = inner.importSecretKey(SELF_TEST_KEY);
  const selfTestSignature = inner.sign(reference, SELF_TEST_MESSAGE);
  inner.forget(reference);
  const derivePublicKey = (secret: Uint8Array): Uint8Array => {
    const local = inner.importSecretKey(secret);
    inner.forget(local);
    return local.publicKey;
  };
  const slotOptions = {
    backendName: options.backendName,
    spawn: options.spawn ?? spawnWorker,
    selfTestSignature,
    logger: options.logger,
    derivePublicKey,
  };
  const slots = Array.from({ length: count }, (_, i) => new WorkerSlot(i, slotOptions));
  const closeAll = () => Promise.all(slots.map((slot) => slot.close())).then(() => {});
  try {
    await Promise.all(slots.map((slot) => slot.start()));
  } catch (error) {
    await closeAll();
    throw new Error(`the BLS worker pool did not start: ${reasonOf(error)}`);
  }

  const records = new WeakMap<BlsSecretKey, KeyRecord>();
  // A handle dropped without `forget` (a key imported only for its public key, a duplicate that
  // was never stored) still releases its worker key and secret copy once collected.
  const collected = new FinalizationRegistry<KeyRecord>((record) => record.slot.forget(record.id));
  let nextId = 1;
  let closed = false;

  const leastLoaded = (): WorkerSlot =>
    slots.reduce((best, slot) => (slot.keyCount < best.keyCount ? slot : best));

  const newHandle = (record: KeyRecord, publicKey: Uint8Array): BlsSecretKey => {
    const handle = createKeyHandle(inner.name, publicKey);
    records.set(handle, record);
    collected.register(handle, record, handle);
    return handle;
  };

  const importOne = async (secret: Uint8Array): Promise<BlsImportResult> => {
    try {
      // Wrong types and lengths fail here as importSecretKey fails; zero and values not below
      // the curve order fail in the worker's backend, with the same message.
      if (!(secret instanceof Uint8Array) || secret.length !== SECRET_KEY_BYTES) {
        parseSecretScalar(secret);
      }
      const record: KeyRecord = { id: nextId++, slot: leastLoaded() };
      const publicKey = await record.slot.importKey(record.id, secret);
      return { ok: true, key: newHandle(record, publicKey) };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? error : new Error(String(error)) };
    }
  };

  return Object.freeze({
    name: inner.name,
    workers: count,

    importSecretKey(secret: Uint8Array): BlsSecretKey {
      if (closed) throw new Error("the BLS worker pool is closed");
      // Validates the secret and derives the public key here, then drops the local backend's
      // key: the only copy left on this thread is the slot's, kept for restarts.
      const publicKey = derivePublicKey(secret);
      const record: KeyRecord = { id: nextId++, slot: leastLoaded() };
      record.slot.add(record.id, secret);
      return newHandle(record, publicKey);
    },

    async importSecretKeys(secrets: readonly Uint8Array[]): Promise<BlsImportResult[]> {
      if (closed) throw new Error("the BLS worker pool is closed");
      // Every call below copies its secret before returning (the contract of importSecretKeys).
      return Promise.all(secrets.map(importOne));
    },

    sign(key: BlsSecretKey, message: Uint8Array, cancel?: AbortSignal): Promise<Uint8Array> {
      if (closed) {
        return Promise.reject(new SigilError("shutting_down", "the signer is stopping"));
      }
      const record = records.get(key);
      if (record === undefined) {
        return Promise.reject(
          new Error("BLS key was not imported by this worker pool, or was removed"),
        );
      }
      if (!(message instanceof Uint8Array)) {
        return Promise.reject(new Error("BLS message must be a byte array"));
      }
      // A copy: the caller may reuse its bytes, and a view would clone its whole buffer.
      return record.slot.sign(record.id, message.slice(), cancel);
    },

    stats: () => slots.map((slot) => slot.stats()),

    verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
      return inner.verify(publicKey, message, signature);
    },

    forget(key: BlsSecretKey): void {
      const record = records.get(key);
      if (record === undefined) return;
      records.delete(key);
      collected.unregister(key);
      record.slot.forget(record.id);
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await closeAll();
    },
  });
}
