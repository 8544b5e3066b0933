/**
 * WAL checkpoints of the slashing protection database, off the event loop.
 *
 * SQLite checkpoints a WAL database from inside the COMMIT that takes the WAL past
 * `wal_autocheckpoint` pages (1,000 by default): it copies the WAL into the database file and
 * fsyncs both. bun:sqlite is synchronous, so that COMMIT holds the event loop for the copy and
 * two fsyncs: at 1,000 checks a second, a stall of 3–15 ms several times a second on this
 * machine's disk, which every request arriving meanwhile waits out (docs/performance.md).
 *
 * Here a worker thread with its own connection (wal-checkpoint-worker.ts) runs PASSIVE
 * checkpoints instead, at most one at a time and at most every CHECKPOINT_INTERVAL_MS while
 * checks are committed. The main connection's own threshold is raised to BACKSTOP_PAGES, so it
 * only checkpoints when the worker falls far behind, and goes back to SQLite's default when the
 * worker cannot start or fails (with a warning): checkpoints then stall the loop as before, and
 * nothing else changes.
 *
 * Safety does not depend on the worker. A checkpoint only copies committed frames, syncs the WAL
 * before and the database file after (synchronous = FULL on its connection), and SQLite reuses
 * the WAL only once every frame is in the synced database file. A worker that dies mid-copy
 * leaves a WAL that the next checkpoint, or the next open, copies again. Records are made
 * durable by the fdatasync of the WAL (wal-sync.ts), not by checkpoints.
 *
 * A PASSIVE checkpoint copies the frames committed before it started; the WAL can be reused only
 * once a checkpoint has caught up with the last commit. When one finishes behind, the next starts
 * at once, up to MAX_CATCH_UP_ROUNDS in a row.
 *
 * A checkpoint that fails (the database file immutable or read-only, a full disk, an I/O error)
 * costs no record: they are durable in the WAL. But the WAL then grows without bound, and SQLite's
 * own checkpoints would fail just as silently. So the worker stays, and tries again after a pause
 * that doubles from RETRY_FIRST_MS up to RETRY_MAX_MS, with or without commits; status() reports
 * the failure (the health check turns DOWN, a metric says it) until a checkpoint succeeds again.
 * One warning when checkpoints start failing, one line when they succeed again.
 */
import type { Database } from "bun:sqlite";
import type { Logger } from "../../../observability/log";
import type { CheckpointReply, CheckpointRequest } from "./wal-checkpoint-protocol";
import { mainDatabaseFile } from "./wal-sync";

/** SQLite's default `wal_autocheckpoint`, restored when checkpoints go back to the main thread. */
export const SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;
/** The main connection's threshold while the worker checkpoints (40 MiB of WAL at 4 KiB pages). */
export const BACKSTOP_PAGES = 10_000;
/** Checkpoints start at most this often while checks are committed. */
export const CHECKPOINT_INTERVAL_MS = 100;
/** Checkpoints started back to back while the previous one ended behind the last commit. */
export const MAX_CATCH_UP_ROUNDS = 8;
/** The first pause before a failed checkpoint is tried again; it doubles up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 1_000;
export const RETRY_MAX_MS = 60_000;
/** How long the worker may take to open the database, and to close it. */
const WORKER_REPLY_TIMEOUT_MS = 10_000;

/** How checkpoints go (health, metrics). */
export interface CheckpointStatus {
  /** Why the last checkpoint failed; null while they succeed. */
  readonly failing: string | null;
  /** Checkpoints that failed since the database was opened. */
  readonly failures: number;
}

export interface WalCheckpoints {
  /** After each commit: a checkpoint is started when one is due. */
  committed(): void;
  status(): CheckpointStatus;
  /** Waits for a checkpoint in flight, then closes the worker's connection (before the main one). */
  close(): Promise<void>;
}

/** SQLite's own checkpoints, inside the COMMITs of the main connection. */
export const INLINE_CHECKPOINTS: WalCheckpoints = {
  committed: () => {},
  status: () => ({ failing: null, failures: 0 }),
  close: async () => {},
};

export interface BackgroundCheckpointOptions {
  readonly logger?: Pick<Logger, "warn" | "info">;
  /** Starts the worker thread; tests replace it. */
  readonly spawn?: () => Worker;
  readonly intervalMs?: number;
  /** The first pause after a failed checkpoint (tests shorten it). Default RETRY_FIRST_MS. */
  readonly retryFirstMs?: number;
  /**
   * Asked before each checkpoint: false skips it (the database file no longer holds the database,
   * and a checkpoint would write the log's pages into what is left of it).
   */
  readonly mayCheckpoint?: () => boolean;
}

/** Set by scripts/build/compile.ts in the compiled binary: the worker's path from the bundle's root. */
declare const SIGIL_CHECKPOINT_WORKER: string | undefined;

/**
 * The checkpoint worker's entry. Resolved on the main thread: the slashing thread (thread-store.ts)
 * is given it, as a worker's own import.meta.url does not say where the binary keeps the others.
 */
export function checkpointWorkerUrl(): string {
  const path =
    typeof SIGIL_CHECKPOINT_WORKER === "undefined"
      ? "./wal-checkpoint-worker.ts"
      : SIGIL_CHECKPOINT_WORKER;
  return new URL(path, import.meta.url).href;
}

function spawnCheckpointWorker(): Worker {
  return new Worker(checkpointWorkerUrl());
}

/**
 * Starts the checkpoint worker for the database file of `db` and raises the main connection's
 * threshold; when the worker cannot open the database, warns and keeps SQLite's own checkpoints.
 */
export async function startBackgroundCheckpoints(
  db: Database,
  options: BackgroundCheckpointOptions = {},
): Promise<WalCheckpoints> {
  const path = mainDatabaseFile(db);
  if (path === "") return INLINE_CHECKPOINTS;
  let checkpoints: BackgroundCheckpoints | undefined;
  try {
    checkpoints = new BackgroundCheckpoints(db, options);
    await checkpoints.open(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (checkpoints) checkpoints.fallBack(reason);
    else warnInline(options, reason);
    return INLINE_CHECKPOINTS;
  }
  options.logger?.info("slashing database checkpoints run in a worker thread", {
    backstop_pages: BACKSTOP_PAGES,
  });
  return checkpoints;
}

class BackgroundCheckpoints implements WalCheckpoints {
  readonly #worker: Worker;
  readonly #intervalMs: number;
  readonly #waiting: PromiseWithResolvers<CheckpointReply>[] = [];
  #inFlight = false;
  #due = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastStart = Number.NEGATIVE_INFINITY;
  #catchUpRounds = 0;
  #stopped = false;
  #failing: string | null = null;
  #failures = 0;
  #retryMs = 0;
  /** The worker thread ended: its answers are not a checkpoint's own failure. */
  #lost = false;

  constructor(
    private readonly db: Database,
    private readonly options: BackgroundCheckpointOptions,
  ) {
    this.#intervalMs = options.intervalMs ?? CHECKPOINT_INTERVAL_MS;
    this.#worker = (options.spawn ?? spawnCheckpointWorker)();
    this.#worker.unref();
    this.#worker.addEventListener("message", (event) =>
      this.#onReply((event as MessageEvent<CheckpointReply>).data),
    );
    this.#worker.addEventListener("error", (event) =>
      this.#onWorkerLost((event as ErrorEvent).message || "the checkpoint worker failed"),
    );
    this.#worker.addEventListener("close", () =>
      this.#onWorkerLost("the checkpoint worker stopped"),
    );
  }

  async open(path: string): Promise<void> {
    const reply = await this.#request({ type: "open", path });
    if (reply.type !== "ready") throw new Error(describe(reply));
    this.db.run(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  }

  committed(): void {
    if (this.#stopped) return;
    if (this.#inFlight || this.#timer !== undefined) {
      this.#due = true;
      return;
    }
    const wait = this.#lastStart + this.#intervalMs - performance.now();
    if (wait <= 0) {
      this.#start();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#due = false;
      this.#start();
    }, wait);
    this.#timer.unref();
  }

  status(): CheckpointStatus {
    return { failing: this.#failing, failures: this.#failures };
  }

  async close(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    // A checkpoint in flight finishes first: the worker answers requests in order.
    const closed = await this.#request({ type: "close" });
    await this.#worker.terminate();
    if (closed.type === "failed") {
      this.options.logger?.warn("the slashing database's checkpoint worker did not close cleanly", {
        reason: closed.reason,
      });
    }
  }

  /** Checkpoints go back to the main connection, as SQLite does them by default. */
  fallBack(reason: string): void {
    const wasStopped = this.#stopped;
    this.#stopped = true;
    clearTimeout(this.#timer);
    void this.#worker.terminate();
    if (wasStopped) return;
    this.db.run(`PRAGMA wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES}`);
    warnInline(this.options, reason);
  }

  #start(): void {
    if (this.options.mayCheckpoint?.() === false) return;
    this.#inFlight = true;
    this.#lastStart = performance.now();
    this.#request({ type: "checkpoint" }).then((reply) => this.#finished(reply));
  }

  #finished(reply: CheckpointReply): void {
    this.#inFlight = false;
    if (this.#stopped) return;
    if (reply.type === "failed" && !this.#lost) {
      this.#failed(reply.reason);
      return;
    }
    if (reply.type !== "checkpointed") {
      this.fallBack(describe(reply));
      return;
    }
    if (this.#failing !== null) {
      this.options.logger?.info("slashing database checkpoints succeed again", {
        failed: this.#failures,
      });
      this.#failing = null;
      this.#retryMs = 0;
    }
    const behind = reply.busy || reply.checkpointedFrames < reply.walFrames;
    if (behind && this.#catchUpRounds < MAX_CATCH_UP_ROUNDS) {
      this.#catchUpRounds++;
      this.#start();
      return;
    }
    this.#catchUpRounds = 0;
    if (this.#due) {
      this.#due = false;
      this.committed();
    }
  }

  /** A checkpoint failed, the worker still runs: said once, tried again after a growing pause. */
  #failed(reason: string): void {
    this.#failures++;
    this.#catchUpRounds = 0;
    if (this.#failing === null) {
      this.options.logger?.warn(
        "slashing database checkpoints fail: the records stay safe in the -wal file, which grows " +
          "until one succeeds; /healthcheck is DOWN meanwhile",
        { reason },
      );
    }
    this.#failing = reason;
    this.#retryMs = Math.min(
      RETRY_MAX_MS,
      this.#retryMs === 0 ? (this.options.retryFirstMs ?? RETRY_FIRST_MS) : this.#retryMs * 2,
    );
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#due = false;
      this.#start();
    }, this.#retryMs);
    this.#timer.unref();
  }

  /** The worker answers requests one by one, in the order they were sent. */
  #request(message: CheckpointRequest): Promise<CheckpointReply> {
    const answer = Promise.withResolvers<CheckpointReply>();
    this.#waiting.push(answer);
    const timeout =
      message.type === "checkpoint"
        ? undefined
        : setTimeout(
            () =>
              answer.resolve({ type: "failed", reason: `no answer to ${message.type} in time` }),
            WORKER_REPLY_TIMEOUT_MS,
          );
    this.#worker.postMessage(message);
    return answer.promise.finally(() => clearTimeout(timeout));
  }

  #onReply(reply: CheckpointReply): void {
    const answer = this.#waiting.shift();
    if (answer) answer.resolve(reply);
    else if (reply.type === "failed" && !this.#stopped) this.fallBack(reply.reason);
  }

  /** The worker is gone: nothing it was asked will be answered. */
  #onWorkerLost(reason: string): void {
    this.#lost = true;
    const waiting = this.#waiting.splice(0);
    for (const answer of waiting) answer.resolve({ type: "failed", reason });
    if (waiting.length === 0 && !this.#stopped) this.fallBack(reason);
  }
}

function warnInline(options: BackgroundCheckpointOptions, reason: string): void {
  options.logger?.warn(
    "slashing database checkpoints are back on the event loop (requests may stall while one runs)",
    { reason },
  );
}

function describe(reply: CheckpointReply): string {
  return reply.type === "failed" ? reply.reason : `unexpected answer ${reply.type}`;
}
