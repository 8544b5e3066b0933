/**
 * One BLS worker thread of the pool (pool.ts) and everything needed to replace it: its keys
 * (secret copies, see pool.ts), its queued jobs and imports, its restart schedule.
 */
import { SigilError } from "../errors";
import type { Logger } from "../observability/log";
import {
  asError,
  type BlsBackendName,
  PUBLIC_KEY_BYTES,
  PUBLIC_KEY_MISMATCH,
  SECRET_KEY_BYTES,
} from "./backend";
import { toHex } from "./key";
import {
  type FromWorker,
  packSignJobs,
  readSigned,
  SIGNATURE_BYTES,
  type SignedMessage,
  type SignJob,
  type ToWorker,
} from "./protocol";
import { SELF_TEST_KEY, SELF_TEST_MESSAGE } from "./select";

/** Jobs per `sign` message: bounds how long the first job of a batch waits for the last. */
const MAX_BATCH = 16;
/** Two, so that a worker has its next batch in hand when it finishes one. */
const MAX_BATCHES_IN_FLIGHT = 2;
/** Keys per `import` message: answers come back, and handles are made, while workers go on. */
const MAX_IMPORT_BATCH = 256;
const READY_TIMEOUT_MS = 30_000;
const MAX_RESTART_DELAY_MS = 30_000;
const CLOSE_WAIT_MS = 2_000;

export interface BlsWorkerStats {
  keys: number;
  queued: number;
  inFlight: number;
}

interface Job extends SignJob {
  readonly cancel: AbortSignal | undefined;
  resolve(signature: Uint8Array): void;
  reject(error: Error): void;
}

/** One `importKeys` call: settles once every key has its public key or its error. */
interface ImportBatch {
  readonly results: (Uint8Array | Error)[];
  left: number;
  done(results: (Uint8Array | Error)[]): void;
}

/** A key being imported: its call and its place there. */
interface Importing {
  readonly batch: ImportBatch;
  readonly index: number;
}

/** What the slot keeps of a key: secret ‖ public key (zero until known), in one allocation. */
const KEY_RECORD_BYTES = SECRET_KEY_BYTES + PUBLIC_KEY_BYTES;
const secretOf = (record: Uint8Array) => record.subarray(0, SECRET_KEY_BYTES);
const publicKeyOf = (record: Uint8Array) => record.subarray(SECRET_KEY_BYTES);

export interface KeyRecord {
  readonly id: number;
  readonly slot: WorkerSlot;
}

/** Job numbers are unique across the pool's workers, for the life of the process. */
let nextJob = 1;

type SlotState = "starting" | "ready" | "down" | "closed";

export function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** One worker thread and everything needed to replace it: its keys and its queued jobs. */
export class WorkerSlot {
  #state: SlotState = "starting";
  #worker: Worker | undefined;
  #exited: Promise<void> = Promise.resolve();
  #startWaiter: { resolve(): void; reject(error: Error): void } | undefined;
  #readyTimer: ReturnType<typeof setTimeout> | undefined;
  #restartTimer: ReturnType<typeof setTimeout> | undefined;
  /** False until the first start succeeds: a pool that cannot start at all does not retry. */
  #everReady = false;
  /** Deaths and failed starts since the last answered batch; drives the restart delay. */
  #failures = 0;
  /**
   * This worker's keys by id: the secret copy (see the module comment) and the public key, as
   * one record (KEY_RECORD_BYTES). The public key is zero while the worker derives it.
   */
  readonly #keys = new Map<number, Uint8Array>();
  /** Keys being imported (`importKeys`) and not yet answered, by id. */
  readonly #importing = new Map<number, Importing>();
  /** Ids of `#importing` not yet sent to the worker. */
  #importQueue: number[] = [];
  #importFlushScheduled = false;
  /** Jobs not yet sent to the worker, in call order. */
  readonly #waiting: Job[] = [];
  /** Keys whose public key the worker found wrong (logged once each). */
  readonly #mismatched = new Set<number>();
  /** Jobs sent and not yet answered. */
  readonly #sent = new Map<number, Job>();
  #batchesInFlight = 0;
  #flushScheduled = false;

  constructor(
    readonly index: number,
    private readonly options: {
      backendName: BlsBackendName;
      spawn: () => Worker;
      selfTestSignature: Uint8Array;
      logger: Pick<Logger, "error" | "warn" | "info"> | undefined;
      /** The main thread's own derivation, for when the worker cannot do it. */
      derivePublicKey: (secret: Uint8Array) => Uint8Array;
    },
  ) {}

  get keyCount(): number {
    return this.#keys.size;
  }

  stats(): BlsWorkerStats {
    return { keys: this.#keys.size, queued: this.#waiting.length, inFlight: this.#sent.size };
  }

  /** Resolves when the worker answered its self-test correctly; rejects when it cannot start. */
  start(): Promise<void> {
    this.#state = "starting";
    const started = new Promise<void>((resolve, reject) => {
      this.#startWaiter = { resolve, reject };
    });
    let worker: Worker;
    try {
      worker = this.options.spawn();
    } catch (error) {
      this.#startFailed(`it could not be created: ${reasonOf(error)}`);
      return started;
    }
    this.#worker = worker;
    this.#exited = new Promise((done) => {
      worker.addEventListener("close", (event) => {
        done();
        this.#onClose(worker, (event as CloseEvent).code);
      });
    });
    worker.addEventListener("message", (event) => {
      if (worker === this.#worker) this.#onMessage((event as MessageEvent<FromWorker>).data);
    });
    worker.addEventListener("error", (event) => {
      if (worker !== this.#worker) return;
      // Worker code puts no secret into an error message; the worker stops right after this.
      this.options.logger?.error("BLS signing worker failed", {
        worker: this.index,
        error: (event as ErrorEvent).message,
      });
    });
    this.#readyTimer = setTimeout(
      () => this.#startFailed(`no answer within ${READY_TIMEOUT_MS / 1000} s`),
      READY_TIMEOUT_MS,
    );
    this.#post({
      type: "init",
      backend: this.options.backendName,
      selfTest: { secret: SELF_TEST_KEY.slice(), message: SELF_TEST_MESSAGE.slice() },
    });
    return started;
  }

  /** Keeps a key whose public key the caller derived, and gives it to the worker. */
  add(id: number, secret: Uint8Array, publicKey: Uint8Array): void {
    const record = this.#record(id, secret, publicKey);
    // A worker still starting gets every key of the slot once it is ready.
    if (this.#state === "ready") this.#sendKey(id, record);
  }

  /**
   * Keeps the keys as `add` does and resolves, in their order, with each one's public key once
   * the worker derived it, or took the claimed one (the main thread does both when the worker is
   * down), or with the backend's reason when it refused the secret (the key is then not kept).
   * One promise for the call, not one per key: start-up imports 100,000 keys this way.
   */
  importKeys(
    ids: readonly number[],
    secrets: readonly Uint8Array[],
    claimed: readonly (Uint8Array | undefined)[],
  ): Promise<(Uint8Array | Error)[]> {
    return new Promise((resolve) => {
      const batch: ImportBatch = {
        results: new Array(ids.length),
        left: ids.length,
        done: resolve,
      };
      if (ids.length === 0) resolve(batch.results);
      ids.forEach((id, index) => {
        this.#record(id, secrets[index] as Uint8Array, claimed[index]);
        this.#importing.set(id, { batch, index });
      });
      if (this.#state === "down") {
        for (const id of ids) this.#importLocally(id);
        return;
      }
      // A worker still starting gets them with the rest of the slot's keys once it is ready.
      if (this.#state !== "ready") return;
      for (const id of ids) this.#importQueue.push(id);
      if (this.#importFlushScheduled) return;
      // Imports asked for in the same turn leave together.
      this.#importFlushScheduled = true;
      queueMicrotask(() => {
        this.#importFlushScheduled = false;
        this.#sendImports();
      });
    });
  }

  #record(id: number, secret: Uint8Array, publicKey: Uint8Array | undefined): Uint8Array {
    const record = new Uint8Array(KEY_RECORD_BYTES);
    record.set(secret);
    if (publicKey !== undefined) record.set(publicKey, SECRET_KEY_BYTES);
    this.#keys.set(id, record);
    return record;
  }

  /** Settles one key of an import: its public key (a copy) or its error. */
  #settle(id: number, result: Uint8Array | Error): void {
    const importing = this.#importing.get(id);
    if (importing === undefined) return;
    this.#importing.delete(id);
    const { batch, index } = importing;
    batch.results[index] = result;
    if (--batch.left === 0) batch.done(batch.results);
  }

  forget(id: number): void {
    const copy = this.#keys.get(id);
    if (copy === undefined) return;
    copy.fill(0);
    this.#keys.delete(id);
    if (this.#state !== "ready") return;
    // Jobs queued before the forget are signed before it, as they were asked for first.
    this.#flush(true);
    this.#post({ type: "forget", id });
  }

  sign(id: number, message: Uint8Array, cancel?: AbortSignal): Promise<Uint8Array> {
    if (this.#state === "down") {
      return Promise.reject(
        new SigilError(
          "internal_error",
          `BLS signing worker ${this.index} is down and being restarted; the request was not signed`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ job: nextJob++, id, message, cancel, resolve, reject });
      if (this.#flushScheduled) return;
      // Jobs asked for in the same turn leave in one message.
      this.#flushScheduled = true;
      queueMicrotask(() => {
        this.#flushScheduled = false;
        this.#flush(false);
      });
    });
  }

  async close(): Promise<void> {
    this.#state = "closed";
    clearTimeout(this.#readyTimer);
    clearTimeout(this.#restartTimer);
    const stopping = () => new SigilError("shutting_down", "the signer is stopping");
    this.#startWaiter?.reject(stopping());
    this.#startWaiter = undefined;
    this.#failAll(stopping);
    for (const id of [...this.#importing.keys()]) this.#settle(id, stopping());
    this.#importQueue = [];
    for (const copy of this.#keys.values()) copy.fill(0);
    this.#keys.clear();
    this.#worker?.terminate();
    this.#worker = undefined;
    await Promise.race([this.#exited, Bun.sleep(CLOSE_WAIT_MS)]);
  }

  /** Sends queued jobs while fewer than MAX_BATCHES_IN_FLIGHT are out (any number if `force`). */
  #flush(force: boolean): void {
    if (this.#state !== "ready") return;
    while (this.#waiting.length > 0 && (force || this.#batchesInFlight < MAX_BATCHES_IN_FLIGHT)) {
      // A job whose request has been answered already (it timed out while waiting) is dropped.
      const jobs = this.#waiting.splice(0, MAX_BATCH).filter((job) => {
        if (!job.cancel?.aborted) return true;
        job.reject(new SigilError("request_timeout", "request timed out before signing started"));
        return false;
      });
      if (jobs.length === 0) continue;
      for (const job of jobs) this.#sent.set(job.job, job);
      this.#batchesInFlight++;
      this.#post(packSignJobs(jobs));
    }
  }

  #sendImports(): void {
    if (this.#state !== "ready") return;
    const queue = this.#importQueue;
    this.#importQueue = [];
    for (let from = 0; from < queue.length; from += MAX_IMPORT_BATCH) {
      const ids = queue.slice(from, from + MAX_IMPORT_BATCH).filter((id) => this.#keys.has(id));
      // One buffer for the batch, transferred: no copy of it stays behind in this thread.
      const secrets = new Uint8Array(ids.length * SECRET_KEY_BYTES);
      const claimed = new Uint8Array(ids.length * PUBLIC_KEY_BYTES);
      ids.forEach((id, i) => {
        // Byte by byte: a `subarray` of each small record would cost it a buffer of its own.
        const record = this.#keys.get(id) as Uint8Array;
        for (let b = 0; b < SECRET_KEY_BYTES; b++) {
          secrets[i * SECRET_KEY_BYTES + b] = record[b] as number;
        }
        for (let b = 0; b < PUBLIC_KEY_BYTES; b++) {
          claimed[i * PUBLIC_KEY_BYTES + b] = record[SECRET_KEY_BYTES + b] as number;
        }
      });
      this.#post({ type: "import", ids, secrets, claimed }, [secrets.buffer, claimed.buffer]);
    }
  }

  #onImported(ids: number[], publicKeys: Uint8Array, errors: (string | null)[]): void {
    ids.forEach((id, i) => {
      if (!this.#importing.has(id)) return;
      const error = errors[i];
      if (error === null || error === undefined) {
        const publicKey = publicKeys.subarray(i * PUBLIC_KEY_BYTES, (i + 1) * PUBLIC_KEY_BYTES);
        this.#keys.get(id)?.set(publicKey, SECRET_KEY_BYTES);
        // A view: the key handle keeps its own copy.
        this.#settle(id, publicKey);
      } else {
        this.#drop(id);
        this.#settle(id, new Error(error));
      }
    });
  }

  /**
   * The main thread imports: the worker cannot now. A claimed public key is taken as it is (the
   * next worker checks it before the key's first signature); otherwise it is derived here.
   */
  #importLocally(id: number): void {
    const record = this.#keys.get(id);
    if (!this.#importing.has(id) || record === undefined) return;
    const claimed = publicKeyOf(record);
    if (claimed.some((byte) => byte !== 0)) {
      this.#settle(id, claimed.slice());
      return;
    }
    try {
      const publicKey = this.options.derivePublicKey(secretOf(record));
      claimed.set(publicKey);
      this.#settle(id, publicKey);
    } catch (error) {
      this.#drop(id);
      this.#settle(id, asError(error));
    }
  }

  /** Says once per key that its claimed public key was wrong: the key never signs (backend.ts). */
  #mismatch(id: number): void {
    if (this.#mismatched.has(id)) return;
    this.#mismatched.add(id);
    const record = this.#keys.get(id);
    this.options.logger?.error(
      "BLS key refused to sign: its public key does not match its secret",
      {
        worker: this.index,
        pubkey: record ? `0x${toHex(publicKeyOf(record))}` : undefined,
        reason:
          "its public key came from a cache entry made for it, but wrong; the key never signs",
      },
    );
  }

  /** Zeroes and lets go of a key the worker never held (a refused import). */
  #drop(id: number): void {
    this.#keys.get(id)?.fill(0);
    this.#keys.delete(id);
  }

  #onMessage(message: FromWorker): void {
    switch (message.type) {
      case "ready":
        this.#onReady(message.selfTestSignature);
        return;
      case "failed":
        this.#startFailed(`it could not load ${this.options.backendName}: ${message.reason}`);
        return;
      case "signed":
        this.#onSigned(message);
        return;
      case "imported":
        this.#onImported(message.ids, message.publicKeys, message.errors);
        return;
    }
  }

  #onSigned(message: SignedMessage): void {
    const { errors } = message;
    const { jobs, signatures } = readSigned(message);
    for (let i = 0; i < jobs.length; i++) {
      const job = this.#sent.get(jobs[i] as number);
      if (job === undefined) continue;
      this.#sent.delete(job.job);
      const error = errors?.[i] ?? null;
      if (error === null) {
        job.resolve(signatures.subarray(i * SIGNATURE_BYTES, (i + 1) * SIGNATURE_BYTES));
      } else {
        if (error === PUBLIC_KEY_MISMATCH) this.#mismatch(job.id);
        job.reject(new Error(`BLS signing failed: ${error}`));
      }
    }
    this.#batchesInFlight--;
    this.#failures = 0;
    this.#flush(false);
  }

  #onReady(signature: Uint8Array): void {
    if (this.#state !== "starting") return;
    if (toHex(signature) !== toHex(this.options.selfTestSignature)) {
      this.#startFailed("its self-test signature differs from the main thread's");
      return;
    }
    clearTimeout(this.#readyTimer);
    this.#state = "ready";
    this.#everReady = true;
    // Imports still waiting (asked for while starting, or lost with the previous worker) are
    // sent again as imports: their callers still wait for the public key.
    this.#importQueue = [...this.#importing.keys()];
    for (const [id, copy] of this.#keys) if (!this.#importing.has(id)) this.#sendKey(id, copy);
    this.#sendImports();
    this.#startWaiter?.resolve();
    this.#startWaiter = undefined;
    this.#flush(false);
  }

  #startFailed(reason: string): void {
    if (this.#state !== "starting") return;
    clearTimeout(this.#readyTimer);
    const worker = this.#worker;
    this.#worker = undefined;
    worker?.terminate();
    this.#state = "down";
    this.#failures++;
    const error = new SigilError(
      "internal_error",
      `BLS signing worker ${this.index} could not start; the request was not signed`,
    );
    this.#failAll(() => error);
    this.#importQueue = [];
    for (const id of [...this.#importing.keys()]) this.#importLocally(id);
    this.options.logger?.error("BLS signing worker could not start", {
      worker: this.index,
      reason,
    });
    this.#startWaiter?.reject(new Error(`BLS signing worker ${this.index}: ${reason}`));
    this.#startWaiter = undefined;
    if (this.#everReady) this.#scheduleRestart();
  }

  #onClose(worker: Worker, code: number): void {
    if (worker !== this.#worker) return;
    if (this.#state === "starting") {
      this.#startFailed(`it stopped while starting (exit code ${code})`);
      return;
    }
    if (this.#state !== "ready") return;
    this.#worker = undefined;
    this.#state = "starting";
    this.#failures++;
    // Imports sent and not answered stay in #importing: the next worker gets them again.
    this.#importQueue = [];
    const lost = this.#sent.size;
    this.#failAll(
      () =>
        new SigilError(
          "internal_error",
          `BLS signing worker ${this.index} stopped before answering; the request was not signed`,
        ),
      { keepWaiting: true },
    );
    this.options.logger?.error("BLS signing worker stopped; restarting it", {
      worker: this.index,
      exit_code: code,
      failed_jobs: lost,
      queued_jobs: this.#waiting.length,
    });
    this.#scheduleRestart();
  }

  /** Immediately after a first failure, then backing off while the worker keeps failing. */
  #scheduleRestart(): void {
    const delay =
      this.#failures <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 250 * 2 ** this.#failures);
    this.#restartTimer = setTimeout(() => {
      if (this.#state === "closed") return;
      this.start().then(
        () => this.options.logger?.info("BLS signing worker restarted", { worker: this.index }),
        () => {}, // #startFailed logged it and scheduled the next attempt
      );
    }, delay);
  }

  #failAll(error: () => Error, options: { keepWaiting?: boolean } = {}): void {
    for (const job of this.#sent.values()) job.reject(error());
    this.#sent.clear();
    this.#batchesInFlight = 0;
    if (options.keepWaiting) return;
    for (const job of this.#waiting.splice(0)) job.reject(error());
  }

  #sendKey(id: number, record: Uint8Array): void {
    // The worker gets its own copy, transferred: nothing of it stays behind in this thread.
    const secret = secretOf(record).slice();
    const publicKey = publicKeyOf(record).slice();
    this.#post({ type: "add", id, secret, publicKey }, [secret.buffer, publicKey.buffer]);
  }

  #post(message: ToWorker, transfer: ArrayBuffer[] = []): void {
    this.#worker?.postMessage(message, transfer);
  }
}
