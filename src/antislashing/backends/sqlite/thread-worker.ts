/**
 * Entry of the slashing thread (thread-store.ts starts it): the signer's sqlite slashing
 * protection database, opened here with openSqliteStore and used by nothing else. Every check,
 * its transaction, the WAL sync (an fdatasync run on this thread itself, not handed to the thread
 * pool) and the file watch run on this thread; the main thread sends the
 * checks of each of its turns in one message and gets the decisions back at the commit, then a
 * message per barrier once the records are on disk (thread-protocol.ts).
 *
 * The compiled binary must name this file as an extra entrypoint (scripts/build/compile.ts).
 */

import type { Logger } from "../../../observability/log";
import { nameThisThread, THREAD_NAMES } from "../../../os/thread-name";
import { collectInterchange, interchangeSource } from "../../interchange";
import type {
  AttestationVote,
  BlockProposal,
  InterchangeMetadata,
  InterchangeValidator,
  SlashingStore,
  StagedDecision,
  StoreMaintenance,
} from "../../store";
import { openSqliteStore } from "./store";
import {
  type ChecksMessage,
  type DecisionDetail,
  decidedAnswer,
  encodeError,
  type ForwardedMethod,
  type FromThread,
  KIND_BLOCK,
  OUTCOME_ERROR,
  OUTCOME_NEW,
  OUTCOME_REFUSED,
  OUTCOME_SAME_DATA,
  type ThreadOpenOptions,
  type ToThread,
  unpackChecks,
} from "./thread-protocol";
import { fdatasyncWalOnThisThread } from "./wal-sync";

nameThisThread(THREAD_NAMES.slashing);

/** How often the checkpoints' status is looked at, and sent when it changed. */
const UPKEEP_POLL_MS = 1000;

let store: SlashingStore | undefined;
/** Barriers told to the main thread and not settled yet, by the promise GroupCommit handed out. */
const barrierIds = new Map<Promise<void>, number>();
let nextBarrier = 1;
/** The `durable` messages still to be sent: close waits for them. */
const notices = new Set<Promise<void>>();
let upkeepTimer: ReturnType<typeof setInterval> | undefined;
let lastUpkeep = "";

function send(message: FromThread): void {
  postMessage(message);
}

/** The store's log lines go to the main thread's logger (they carry no secret: stores know none). */
const logger: Pick<Logger, "info" | "warn" | "error"> = {
  info: (message, fields) => send({ type: "log", level: "info", message, fields }),
  warn: (message, fields) => send({ type: "log", level: "warn", message, fields }),
  error: (message, fields) => send({ type: "log", level: "error", message, fields }),
};

async function open(path: string, options: ThreadOpenOptions): Promise<void> {
  try {
    const url = options.checkpointWorkerUrl;
    store = await openSqliteStore(path, {
      create: options.create,
      checkpoints: options.checkpoints,
      logger,
      // This thread does nothing else: the WAL's fdatasync runs here, not on the thread pool.
      syncWal: fdatasyncWalOnThisThread,
      ...(options.busyTimeoutMs !== undefined && { busyTimeoutMs: options.busyTimeoutMs }),
      ...(url !== undefined && { spawnCheckpointWorker: () => new Worker(url) }),
    });
  } catch (error) {
    send({ type: "open_failed", error: encodeError(error) });
    return;
  }
  send({ type: "opened", location: store.location, upkeep: upkeep() });
  upkeepTimer = setInterval(sendUpkeepIfChanged, UPKEEP_POLL_MS);
}

function upkeep(): StoreMaintenance | null {
  return store?.maintenance?.() ?? null;
}

function sendUpkeepIfChanged(): void {
  const now = upkeep();
  if (now === null) return;
  const key = `${now.checkpointFailing}|${now.checkpointFailures}|${now.walBytes}`;
  if (key === lastUpkeep) return;
  lastUpkeep = key;
  send({ type: "upkeep", upkeep: now });
}

/** One turn's checks: staged together (one transaction), answered together. */
async function checks(message: ChecksMessage, opened: SlashingStore): Promise<void> {
  const staged: Promise<StagedDecision>[] = [];
  for (const check of unpackChecks(message)) {
    const { gvr, pubkey, first, signingRoot } = check;
    if (check.kind === KIND_BLOCK) {
      const proposal: BlockProposal = { pubkey, slot: first, signingRoot };
      staged.push(opened.stageBlock?.(gvr, proposal) ?? Promise.reject(noStaging()));
    } else {
      const vote: AttestationVote = {
        pubkey,
        sourceEpoch: first,
        targetEpoch: check.second,
        signingRoot,
      };
      staged.push(opened.stageAttestation?.(gvr, vote) ?? Promise.reject(noStaging()));
    }
  }
  const settled = await Promise.allSettled(staged);
  const { message: decided, barriers, outcomes } = decidedAnswer(message.batch, settled.length);
  const details: DecisionDetail[] = [];
  const fresh: [Promise<void>, number][] = [];
  settled.forEach((result, index) => {
    if (result.status === "rejected") {
      outcomes[index] = OUTCOME_ERROR;
      details.push({ index, error: encodeError(result.reason) });
      return;
    }
    const { decision, durable } = result.value;
    let barrier = barrierIds.get(durable);
    if (barrier === undefined) {
      barrier = nextBarrier++;
      barrierIds.set(durable, barrier);
      fresh.push([durable, barrier]);
    }
    barriers[index] = barrier;
    if (decision.outcome === "new") outcomes[index] = OUTCOME_NEW;
    else if (decision.outcome === "same_data") outcomes[index] = OUTCOME_SAME_DATA;
    else {
      outcomes[index] = OUTCOME_REFUSED;
      details.push({ index, reason: decision.reason, detail: decision.detail });
    }
  });
  if (details.length > 0) decided.details = details;
  send(decided);
  // After `decided`: the main thread learns of a barrier before it hears that it settled.
  for (const [durable, barrier] of fresh) {
    // Forgotten in the same step as the notice is sent: a later `decided` naming this barrier
    // would otherwise reach the main thread after its notice, and wait for ever.
    const notice = durable.then(
      () => {
        barrierIds.delete(durable);
        send({ type: "durable", barrier });
      },
      (error: unknown) => {
        barrierIds.delete(durable);
        send({ type: "durable", barrier, error: encodeError(error) });
      },
    );
    notices.add(notice);
    notice.then(() => notices.delete(notice));
  }
}

function noStaging(): Error {
  return new Error("the slashing thread's store does not stage its checks");
}

async function call(opened: SlashingStore, method: ForwardedMethod, args: unknown[]) {
  switch (method) {
    case "storedGenesisValidatorsRoot":
      return opened.storedGenesisValidatorsRoot();
    case "bindGenesisValidatorsRoot":
      return opened.bindGenesisValidatorsRoot(args[0] as Uint8Array);
    case "probeWrite":
      return opened.probeWrite();
    case "importInterchange": {
      const [metadata, validators] = args as [InterchangeMetadata, InterchangeValidator[]];
      return opened.importInterchange(interchangeSource(metadata, validators));
    }
    case "exportInterchange":
      return collectInterchange(
        await opened.exportInterchange(args[0] as readonly string[] | undefined),
      );
    case "prune":
      if (!opened.prune) throw new Error("this store does not prune");
      return opened.prune(args[0] as bigint);
    case "databaseWatermarks":
      return opened.databaseWatermarks();
    case "changeWatermarks":
      return opened.changeWatermarks(args[0] as Parameters<SlashingStore["changeWatermarks"]>[0]);
    case "ping":
      // With the checkpoints' status as it is now: the health check reads both.
      await opened.ping();
      return upkeep();
    case "close":
      clearInterval(upkeepTimer);
      await opened.close();
      // Every barrier's notice is out before the close is answered.
      await Promise.all([...notices]);
      return undefined;
  }
}

addEventListener("message", (event) => {
  const message = (event as MessageEvent<ToThread>).data;
  if (message.type === "open") {
    void open(message.path, message.options);
    return;
  }
  if (store === undefined) throw new Error("the slashing thread has no database open");
  if (message.type === "checks") {
    void checks(message, store);
    return;
  }
  const { id, method, args } = message;
  call(store, method, args).then(
    (value) => send({ type: "reply", id, ok: true, value }),
    (error: unknown) => send({ type: "reply", id, ok: false, error: encodeError(error) }),
  );
});
