import { SigilError } from "../errors";

export interface JobLimiterOptions {
  maxConcurrent: number;
  maxQueued: number;
  /** Sent to clients rejected because the queue is full. Default 1. */
  retryAfterSeconds?: number;
}

interface Waiter {
  start(): void;
}

const notStarted = () =>
  new SigilError("request_timeout", "request timed out before signing started");

/**
 * Bounds signing work: at most `maxConcurrent` jobs run, at most `maxQueued` wait (FIFO),
 * and anything beyond that is rejected at once, so overload shows up as fast 503s instead
 * of unbounded memory and latency.
 */
export class JobLimiter {
  readonly #maxConcurrent: number;
  readonly #maxQueued: number;
  readonly #retryAfterSeconds: number;
  #running = 0;
  // A Set keeps insertion order and deletes in O(1), which an aborted waiter needs.
  readonly #queue = new Set<Waiter>();
  #idleWaiters: (() => void)[] = [];

  constructor(options: JobLimiterOptions) {
    const { maxConcurrent, maxQueued, retryAfterSeconds = 1 } = options;
    if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
      throw new RangeError(`maxConcurrent must be an integer >= 1, got ${maxConcurrent}`);
    }
    if (!Number.isInteger(maxQueued) || maxQueued < 0) {
      throw new RangeError(`maxQueued must be an integer >= 0, got ${maxQueued}`);
    }
    this.#maxConcurrent = maxConcurrent;
    this.#maxQueued = maxQueued;
    this.#retryAfterSeconds = retryAfterSeconds;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#queue.size;
  }

  run<T>(job: () => Promise<T> | T, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(notStarted());
    if (this.#running < this.#maxConcurrent) {
      // Counted before any await so that calls made in the same tick see the slot as taken.
      this.#running++;
      return this.#start(job);
    }
    if (this.#queue.size >= this.#maxQueued) {
      return Promise.reject(
        new SigilError(
          "queue_full",
          `signing queue is full (${this.#maxConcurrent} running, ${this.#maxQueued} waiting)`,
          this.#retryAfterSeconds,
        ),
      );
    }
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.#queue.delete(waiter);
        reject(notStarted());
      };
      const waiter: Waiter = {
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          this.#start(job).then(resolve, reject);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.add(waiter);
    });
  }

  idle(): Promise<void> {
    if (this.#running === 0 && this.#queue.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Runs a job whose slot has already been counted in `#running`. */
  #start<T>(job: () => Promise<T> | T): Promise<T> {
    let result: Promise<T>;
    try {
      result = Promise.resolve(job());
    } catch (err) {
      result = Promise.reject(err);
    }
    // Not `finally`: it makes two promises more per job, and this is every sign request.
    return result.then(
      (value) => {
        this.#release();
        return value;
      },
      (error: unknown) => {
        this.#release();
        throw error;
      },
    );
  }

  #release(): void {
    const next = this.#queue.values().next();
    if (!next.done) {
      // The slot passes straight to the next waiter, so `running` never dips and a
      // concurrent `run` cannot jump the queue.
      this.#queue.delete(next.value);
      next.value.start();
      return;
    }
    this.#running--;
    if (this.#running === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}
