import type { KeyWriter, NewKey } from "./sources/source";
import { writeFailureReason } from "./sources/source";

/** How a batch runs: `cutoff` ends the time it may start writes in (see `writeCutoff`). */
export interface WriteOptions {
  readonly cutoff: AbortSignal;
  /** Writes at once; default: the writer's own limit. */
  readonly concurrency?: number;
}

/** What stopped a batch: a write that failed, or the time the request had for its writes. */
export type BatchStop =
  | { readonly kind: "failed"; readonly pubkey: string; readonly reason: string }
  | { readonly kind: "out_of_time" };

export type BatchOutcome =
  | {
      readonly ok: true;
      /** Persisted and committed: loadable now. */
      readonly written: readonly NewKey[];
      /** The source already had these pubkeys (left as they are). */
      readonly existing: readonly NewKey[];
    }
  | {
      readonly ok: false;
      readonly stop: BatchStop;
      /** This request's writes that were undone (pubkeys). */
      readonly removed: readonly string[];
      /** This request's writes that could not be undone: they stay in the source. */
      readonly left: readonly { readonly pubkey: string; readonly reason: string }[];
      readonly existing: readonly NewKey[];
    };

/**
 * Writes a batch of new keys through one writer, all or nothing: every key is persisted (not
 * loadable yet), then every key committed. The first failure, or `cutoff`, stops the batch: no
 * write not yet started is sent, the writes in flight are awaited, and every key this batch
 * wrote is removed again, each removal touching only what this batch wrote. The outcome names
 * what could not be undone. When this resolves, no write of the batch is pending: nothing
 * reaches the source after the caller answers.
 */
export async function writeBatch(
  writer: KeyWriter,
  keys: readonly NewKey[],
  options: WriteOptions,
): Promise<BatchOutcome> {
  const { cutoff } = options;
  const limit = options.concurrency ?? writer.concurrency;
  const written: NewKey[] = [];
  const existing: NewKey[] = [];
  /** Every key whose persist was sent: a write that failed in flight may still have landed. */
  const sent: NewKey[] = [];
  let failure: BatchStop | undefined;
  const stopped = () => failure !== undefined || cutoff.aborted;
  const fail = (key: NewKey, error: unknown) => {
    failure ??= { kind: "failed", pubkey: key.pubkey, reason: writeFailureReason(error) };
  };

  await eachBounded(keys, limit, stopped, async (key) => {
    sent.push(key);
    try {
      if ((await writer.persist(key)) === "written") written.push(key);
      else existing.push(key);
    } catch (error) {
      fail(key, error);
    }
  });
  if (!stopped()) {
    await eachBounded(written, limit, stopped, async (key) => {
      try {
        await writer.commit(key);
      } catch (error) {
        fail(key, error);
      }
    });
  }
  if (!stopped()) return { ok: true, written, existing };

  const removed: string[] = [];
  const left: { pubkey: string; reason: string }[] = [];
  const undo = sent.filter((key) => !existing.includes(key));
  await eachBounded(undo, limit, neverStop, async (key) => {
    try {
      if ((await writer.remove(key.pubkey, key)) === "removed") removed.push(key.pubkey);
    } catch (error) {
      left.push({ pubkey: key.pubkey, reason: writeFailureReason(error) });
    }
  });
  return { ok: false, stop: failure ?? { kind: "out_of_time" }, removed, left, existing };
}

const neverStop = () => false;

/**
 * Runs `task` over `items` with at most `limit` at once, in order. Once `stop` is true no task
 * starts; resolves when every started task has settled.
 */
async function eachBounded<T>(
  items: readonly T[],
  limit: number,
  stop: () => boolean,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (!stop() && next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

/**
 * The time a batch may start writes in: the request's deadline less a reserve for undoing them,
 * so that a batch that runs out of time is undone and answered before the listener's deadline
 * answers 503 for it. The reserve is a fifth of the deadline, at most 30 seconds.
 */
export function writeCutoff(deadline: AbortSignal, timeoutMs: number): AbortSignal {
  const reserve = Math.min(30_000, timeoutMs / 5);
  return AbortSignal.any([deadline, AbortSignal.timeout(Math.max(0, timeoutMs - reserve))]);
}
