/**
 * A BLS backend that signs in worker threads (worker.ts), so that signing uses every core while
 * the main thread does HTTP, authorization and slashing protection.
 *
 * - Keys: each key goes to one worker, the one holding the fewest keys, for the key's whole life.
 *   `importSecretKey` checks the secret and computes the public key on the main thread with the
 *   local backend (callers get the public key at once, as before). `importSecretKeys`, for loading
 *   many keys at start-up, lets each key's worker derive its public key instead (the costly part
 *   of an import: 0.1–0.15 ms with blst), so the workers do it in parallel while the main thread
 *   goes on reading key files; a worker down or failing to start falls back to the main thread.
 *   A key given with its claimed public key (a cache's) is not derived at all: the worker checks
 *   the claim before the key's first signature (`importClaimedKey`), and a restarted worker gets
 *   every key with its public key the same way.
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
  asError,
  type BlsBackend,
  type BlsBackendName,
  type BlsImportResult,
  type BlsSecretKey,
  type LocalBlsBackend,
  PUBLIC_KEY_BYTES,
  SECRET_KEY_BYTES,
} from "./backend";
import { checkSecretScalar, createKeyHandle } from "./key";
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
  importSecretKeys(
    secrets: readonly Uint8Array[],
    claimed?: readonly (Uint8Array | undefined)[],
  ): Promise<BlsImportResult[]>;
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

/** Above the most workers a pool can have (bls.workers ≤ 256): a key's ref is id × this + slot. */
const SLOT_RANGE = 1024;

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
  if (count > SLOT_RANGE) throw new Error(`a BLS worker pool has at most ${SLOT_RANGE} workers`);
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

  // Each handle's key as one number, id × SLOT_RANGE + slot index: no object per key (100,000
  // of them at start-up).
  const records = new WeakMap<BlsSecretKey, number>();
  const recordOf = (ref: number): KeyRecord => ({
    id: Math.floor(ref / SLOT_RANGE),
    slot: slots[ref % SLOT_RANGE] as WorkerSlot,
  });
  // A handle dropped without `forget` (a key imported only for its public key, a duplicate that
  // was never stored) still releases its worker key and secret copy once collected.
  const collected = new FinalizationRegistry<number>((ref) => {
    const { slot, id } = recordOf(ref);
    slot.forget(id);
  });
  let nextId = 1;
  let closed = false;

  const leastLoaded = (): WorkerSlot =>
    slots.reduce((best, slot) => (slot.keyCount < best.keyCount ? slot : best));

  const newHandle = (record: KeyRecord, publicKey: Uint8Array): BlsSecretKey => {
    const handle = createKeyHandle(inner.name, publicKey);
    const ref = record.id * SLOT_RANGE + record.slot.index;
    records.set(handle, ref);
    collected.register(handle, ref, handle);
    return handle;
  };

  const PUBLIC_KEY_SHAPE = `a claimed BLS public key must be ${PUBLIC_KEY_BYTES} bytes`;

  /**
   * Spreads the keys over the slots as `leastLoaded` would one by one, then hands each slot its
   * share in one call: one promise per slot, not one per key.
   */
  const importMany = async (
    secrets: readonly Uint8Array[],
    claimed: readonly (Uint8Array | undefined)[] | undefined,
  ): Promise<BlsImportResult[]> => {
    const results: BlsImportResult[] = new Array(secrets.length);
    const counts = slots.map((slot) => slot.keyCount);
    const shares = slots.map(() => ({
      indexes: [] as number[],
      ids: [] as number[],
      secrets: [] as Uint8Array[],
      claimed: [] as (Uint8Array | undefined)[],
    }));
    secrets.forEach((secret, index) => {
      try {
        // Wrong types and lengths fail here as importSecretKey fails; zero and values not below
        // the curve order fail in the worker's backend, with the same message.
        if (!(secret instanceof Uint8Array) || secret.length !== SECRET_KEY_BYTES) {
          checkSecretScalar(secret);
        }
        const claim = claimed?.[index];
        if (claim !== undefined && claim.length !== PUBLIC_KEY_BYTES) {
          throw new Error(PUBLIC_KEY_SHAPE);
        }
        let least = 0;
        for (let i = 1; i < counts.length; i++) {
          if ((counts[i] as number) < (counts[least] as number)) least = i;
        }
        counts[least] = (counts[least] as number) + 1;
        const share = shares[least] as (typeof shares)[number];
        share.indexes.push(index);
        share.ids.push(nextId++);
        share.secrets.push(secret);
        share.claimed.push(claim);
      } catch (error) {
        results[index] = { ok: false, error: asError(error) };
      }
    });
    await Promise.all(
      shares.map(async (share, i) => {
        if (share.ids.length === 0) return;
        const slot = slots[i] as WorkerSlot;
        const answers = await slot.importKeys(share.ids, share.secrets, share.claimed);
        answers.forEach((answer, k) => {
          const index = share.indexes[k] as number;
          results[index] =
            answer instanceof Error
              ? { ok: false, error: answer }
              : { ok: true, key: newHandle({ id: share.ids[k] as number, slot }, answer) };
        });
      }),
    );
    return results;
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
      record.slot.add(record.id, secret, publicKey);
      return newHandle(record, publicKey);
    },

    async importSecretKeys(
      secrets: readonly Uint8Array[],
      claimed?: readonly (Uint8Array | undefined)[],
    ): Promise<BlsImportResult[]> {
      if (closed) throw new Error("the BLS worker pool is closed");
      // The slots copy every secret before importMany's first await (the contract).
      return importMany(secrets, claimed);
    },

    sign(key: BlsSecretKey, message: Uint8Array, cancel?: AbortSignal): Promise<Uint8Array> {
      if (closed) {
        return Promise.reject(new SigilError("shutting_down", "the signer is stopping"));
      }
      const ref = records.get(key);
      if (ref === undefined) {
        return Promise.reject(
          new Error("BLS key was not imported by this worker pool, or was removed"),
        );
      }
      if (!(message instanceof Uint8Array)) {
        return Promise.reject(new Error("BLS message must be a byte array"));
      }
      const { slot, id } = recordOf(ref);
      // A copy: the caller may reuse its bytes, and a view would clone its whole buffer.
      return slot.sign(id, message.slice(), cancel);
    },

    stats: () => slots.map((slot) => slot.stats()),

    verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
      return inner.verify(publicKey, message, signature);
    },

    forget(key: BlsSecretKey): void {
      const ref = records.get(key);
      if (ref === undefined) return;
      records.delete(key);
      collected.unregister(key);
      const { slot, id } = recordOf(ref);
      slot.forget(id);
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await closeAll();
    },
  });
}
