/**
 * The signer's sqlite slashing store, run on a thread of its own ("the slashing thread",
 * thread-worker.ts). The main thread keeps only this proxy: the checks, their transactions, the
 * WAL sync and its completion, the file watch and the checkpoints' bookkeeping all run on that
 * thread, which opens the database with openSqliteStore (store.ts) exactly as the CLI opens it in
 * process: the same checks of the files, the same locks, the same errors.
 *
 * One connection, one owner: every method is forwarded to the one store on that thread, so no
 * second connection and no cache to keep coherent. The checks of one main-thread turn go in one
 * message and come back in one (thread-protocol.ts); each check resolves at its commit with the
 * barrier that makes it durable, which settles when the thread says so: the StagedDecision
 * contract holds across the threads (nothing leaves before `durable` has resolved).
 *
 * If the thread dies (or cannot be reached), every check pending and every later one rejects,
 * like a failed sync: 503 slashing_db_unavailable and /healthcheck DOWN until sigil is restarted.
 * A record whose commit the thread made before it died may exist without its signature (none left:
 * its barrier never resolved), which is safe, as after a crash of the whole process.
 */
import type { Logger } from "../../../observability/log";
import { assertAttestationVote, assertBlockProposal } from "../../encoding";
import { collectInterchange, interchangeSource } from "../../interchange";
import {
  type AttestationVote,
  type BlockProposal,
  type Decision,
  durableDecision,
  type ImportReport,
  type InterchangeMetadata,
  type InterchangeSource,
  type InterchangeValidator,
  type PubkeyHex,
  type SlashingStore,
  type StagedDecision,
  type StoreMaintenance,
} from "../../store";
import type { DatabaseWatermarks, WatermarkChange } from "../../watermarks";
import {
  type CheckToSend,
  type DecidedMessage,
  decisionAt,
  decodeError,
  type ForwardedMethod,
  type FromThread,
  KIND_ATTESTATION,
  KIND_BLOCK,
  OUTCOME_ERROR,
  packChecks,
  readDecided,
  type ThreadOpenOptions,
  type ToThread,
} from "./thread-protocol";
import { checkpointWorkerUrl } from "./wal-checkpoint";

/** Set by scripts/build/compile.ts in the compiled binary: the worker's path from the bundle's root. */
declare const SIGIL_SLASHING_WORKER: string | undefined;

/** Starts the slashing thread (tests start it themselves, to keep hold of it). */
export function spawnSlashingThread(): Worker {
  const path =
    typeof SIGIL_SLASHING_WORKER === "undefined" ? "./thread-worker.ts" : SIGIL_SLASHING_WORKER;
  return new Worker(new URL(path, import.meta.url).href);
}

export interface ThreadedSqliteOptions {
  readonly create: boolean;
  readonly checkpoints?: "inline" | "background";
  readonly busyTimeoutMs?: number;
  /** Where the thread's store logs (its lines are sent here). */
  readonly logger?: Pick<Logger, "info" | "warn" | "error">;
  /** Starts the thread (tests keep hold of it, to stop it under a check). */
  readonly spawn?: () => Worker;
}

/** The slashing thread stopped: nothing it was asked will be answered. */
export class SlashingThreadError extends Error {
  override readonly name = "SlashingThreadError";
}

/**
 * Opens the sqlite slashing protection database at `path` on a thread of its own; rejects with
 * the error openSqliteStore would have thrown in process (same class, same message).
 */
export async function openThreadedSqliteStore(
  path: string,
  options: ThreadedSqliteOptions,
): Promise<SlashingStore> {
  const worker = (options.spawn ?? spawnSlashingThread)();
  const opened = Promise.withResolvers<ThreadedSqliteStore>();
  const store = new ThreadedSqliteStore(worker, options.logger, opened);
  const open: ThreadOpenOptions = {
    create: options.create,
    checkpoints: options.checkpoints ?? "inline",
    ...(options.busyTimeoutMs !== undefined && { busyTimeoutMs: options.busyTimeoutMs }),
    ...(options.checkpoints === "background" && { checkpointWorkerUrl: checkpointWorkerUrl() }),
  };
  store.post({ type: "open", path, options: open });
  try {
    return await opened.promise;
  } catch (error) {
    await worker.terminate();
    throw error;
  }
}

interface PendingCheck {
  resolve: (staged: StagedDecision) => void;
  reject: (error: unknown) => void;
}

interface QueuedCheck extends PendingCheck, CheckToSend {}

const ignore = () => {};

class ThreadedSqliteStore implements SlashingStore {
  readonly backend = "sqlite" as const;
  readonly strategy = "complete" as const;
  location = "";
  /** The checkpoints' status the thread sent last (with every ping, and when it changes). */
  private upkeep: StoreMaintenance | null = null;
  private closing = false;
  /** Why the thread can no longer answer; every request rejects with it. */
  private failure: Error | null = null;

  /** Checks of this turn, sent together at the next one. */
  private queued: QueuedCheck[] = [];
  private scheduled = false;
  private nextBatch = 1;
  private readonly sent = new Map<number, PendingCheck[]>();
  private readonly barriers = new Map<number, PromiseWithResolvers<void>>();
  private nextCall = 1;
  private readonly calls = new Map<number, PromiseWithResolvers<unknown>>();

  constructor(
    private readonly worker: Worker,
    private readonly logger: ThreadedSqliteOptions["logger"],
    private opening: PromiseWithResolvers<ThreadedSqliteStore> | null,
  ) {
    worker.addEventListener("message", (event) =>
      this.onMessage((event as MessageEvent<FromThread>).data),
    );
    worker.addEventListener("error", (event) => {
      (event as ErrorEvent).preventDefault?.();
      this.lost(`the slashing protection thread failed: ${(event as ErrorEvent).message}`);
    });
    worker.addEventListener("close", () => this.lost("the slashing protection thread stopped"));
  }

  readonly maintenance = (): StoreMaintenance =>
    this.upkeep ?? { checkpointFailing: null, checkpointFailures: 0, walBytes: 0 };

  post(message: ToThread): void {
    this.worker.postMessage(message);
  }

  async storedGenesisValidatorsRoot(): Promise<Uint8Array | null> {
    return (await this.call("storedGenesisValidatorsRoot")) as Uint8Array | null;
  }

  async bindGenesisValidatorsRoot(root: Uint8Array): Promise<Uint8Array> {
    return (await this.call("bindGenesisValidatorsRoot", root)) as Uint8Array;
  }

  async probeWrite(): Promise<void> {
    await this.call("probeWrite");
  }

  async checkAndInsertBlock(gvr: Uint8Array, proposal: BlockProposal): Promise<Decision> {
    return durableDecision(await this.stageBlock(gvr, proposal));
  }

  async checkAndInsertAttestation(gvr: Uint8Array, vote: AttestationVote): Promise<Decision> {
    return durableDecision(await this.stageAttestation(gvr, vote));
  }

  async stageBlock(gvr: Uint8Array, proposal: BlockProposal): Promise<StagedDecision> {
    this.assertUsable();
    assertBlockProposal(gvr, proposal);
    const { pubkey, slot, signingRoot } = proposal;
    return this.enqueue(KIND_BLOCK, gvr, pubkey, slot, 0n, signingRoot);
  }

  async stageAttestation(gvr: Uint8Array, vote: AttestationVote): Promise<StagedDecision> {
    this.assertUsable();
    assertAttestationVote(gvr, vote);
    const { pubkey, sourceEpoch, targetEpoch, signingRoot } = vote;
    return this.enqueue(KIND_ATTESTATION, gvr, pubkey, sourceEpoch, targetEpoch, signingRoot);
  }

  /**
   * All or nothing as in process: the source is read whole here first (a source that fails part
   * way sends nothing), then imported in one step on the thread. In the signer imports come from
   * the Key Manager API, whose bodies are bounded.
   */
  async importInterchange(source: InterchangeSource): Promise<ImportReport> {
    this.assertUsable();
    const { metadata, validators } = await collectInterchange(source);
    return (await this.call("importInterchange", metadata, validators)) as ImportReport;
  }

  async exportInterchange(pubkeys?: readonly PubkeyHex[]): Promise<InterchangeSource> {
    const { metadata, validators } = (await this.call("exportInterchange", pubkeys)) as {
      metadata: InterchangeMetadata;
      validators: InterchangeValidator[];
    };
    return interchangeSource(metadata, validators);
  }

  async prune(epochs: bigint): Promise<{ blocks: number; attestations: number }> {
    return (await this.call("prune", epochs)) as { blocks: number; attestations: number };
  }

  async databaseWatermarks(): Promise<DatabaseWatermarks> {
    return (await this.call("databaseWatermarks")) as DatabaseWatermarks;
  }

  async changeWatermarks(change: WatermarkChange): Promise<DatabaseWatermarks> {
    return (await this.call("changeWatermarks", change)) as DatabaseWatermarks;
  }

  async ping(): Promise<void> {
    const upkeep = (await this.call("ping")) as StoreMaintenance | null;
    if (upkeep !== null) this.upkeep = upkeep;
  }

  /** Checks already handed over are decided and made durable (or rejected) first. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.flush();
    this.closing = true;
    try {
      if (this.failure === null) await this.call("close");
    } finally {
      this.failure ??= new SlashingThreadError("the slashing protection database is closed");
      this.rejectAll(this.failure);
      await this.worker.terminate();
    }
  }

  private assertUsable(): void {
    if (this.failure !== null) throw this.failure;
    if (this.closing) throw new Error("sqlite slashing protection store is closed");
  }

  private call(method: ForwardedMethod, ...args: unknown[]): Promise<unknown> {
    if (method !== "close") {
      try {
        this.assertUsable();
      } catch (error) {
        return Promise.reject(error);
      }
    }
    // Checks staged before this call go first, in the order they would run in process.
    if (this.queued.length > 0) this.flush();
    const id = this.nextCall++;
    const reply = Promise.withResolvers<unknown>();
    this.calls.set(id, reply);
    this.post({ type: "call", id, method, args });
    return reply.promise;
  }

  private enqueue(
    kind: number,
    gvr: Uint8Array,
    pubkey: string,
    first: bigint,
    second: bigint,
    signingRoot: Uint8Array,
  ): Promise<StagedDecision> {
    return new Promise<StagedDecision>((resolve, reject) => {
      this.queued.push({ kind, gvr, pubkey, first, second, signingRoot, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** This turn's checks, packed into one byte array (thread-protocol.ts, ChecksMessage). */
  private flush(): void {
    this.scheduled = false;
    const batch = this.queued;
    if (batch.length === 0) return;
    this.queued = [];
    if (this.failure !== null) {
      for (const check of batch) check.reject(this.failure);
      return;
    }
    const id = this.nextBatch++;
    this.sent.set(id, batch);
    this.post(packChecks(id, batch));
  }

  private onMessage(message: FromThread): void {
    switch (message.type) {
      case "decided":
        this.decided(message);
        return;
      case "durable": {
        const barrier = this.barriers.get(message.barrier);
        if (!barrier) return;
        this.barriers.delete(message.barrier);
        if (message.error) barrier.reject(decodeError(message.error));
        else barrier.resolve();
        return;
      }
      case "reply": {
        const call = this.calls.get(message.id);
        if (!call) return;
        this.calls.delete(message.id);
        if (message.ok) call.resolve(message.value);
        else call.reject(decodeError(message.error));
        return;
      }
      case "upkeep":
        this.upkeep = message.upkeep;
        return;
      case "log":
        this.logger?.[message.level](message.message, message.fields);
        return;
      case "opened":
        this.location = message.location;
        this.upkeep = message.upkeep;
        this.opening?.resolve(this);
        this.opening = null;
        return;
      case "open_failed":
        this.failOpen(decodeError(message.error));
        return;
    }
  }

  private decided(message: DecidedMessage): void {
    const batch = this.sent.get(message.batch);
    if (!batch) return;
    this.sent.delete(message.batch);
    const { barriers, outcomes } = readDecided(message);
    batch.forEach((check, index) => {
      const outcome = outcomes[index] as number;
      if (outcome === OUTCOME_ERROR) {
        const found = message.details?.find((d) => d.index === index);
        const encoded = found && "error" in found ? found.error : undefined;
        check.reject(encoded ? decodeError(encoded) : new Error("slashing thread: check failed"));
        return;
      }
      check.resolve({
        decision: decisionAt(message, outcome, index),
        durable: this.barrier(barriers[index] as number),
      });
    });
  }

  /** The promise of barrier `id`, settled by its `durable` message (handled: callers may drop it). */
  private barrier(id: number): Promise<void> {
    let barrier = this.barriers.get(id);
    if (!barrier) {
      barrier = Promise.withResolvers<void>();
      barrier.promise.catch(ignore);
      this.barriers.set(id, barrier);
    }
    return barrier.promise;
  }

  private failOpen(error: Error): void {
    this.failure = error;
    this.opening?.reject(error);
    this.opening = null;
  }

  /** The thread is gone: everything asked of it, and everything asked later, rejects. */
  private lost(reason: string): void {
    if (this.failure !== null) return;
    const error = new SlashingThreadError(
      `${reason}; refusing to sign until sigil is restarted (no signature left without its record)`,
    );
    if (this.opening) {
      this.failOpen(error);
      return;
    }
    this.failure = error;
    if (!this.closing) this.logger?.error(error.message, { database: this.location });
    this.rejectAll(error);
    // A thread that threw may still run: it is stopped, so that nothing it does goes unheard.
    void this.worker.terminate();
  }

  private rejectAll(error: Error): void {
    for (const check of this.queued.splice(0)) check.reject(error);
    for (const batch of this.sent.values()) for (const check of batch) check.reject(error);
    this.sent.clear();
    for (const barrier of this.barriers.values()) barrier.reject(error);
    this.barriers.clear();
    for (const call of this.calls.values()) call.reject(error);
    this.calls.clear();
  }
}
