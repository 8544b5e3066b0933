import { timingSafeEqual } from "node:crypto";
import type { KMSClient } from "@aws-sdk/client-kms";
import { mintManagementToken } from "../auth/admin";
import { hashToken, newToken, OPERATOR_CREDENTIAL_PREFIX } from "../auth/tokens";
import { SigilError } from "../errors";
import type { Logger } from "../observability/log";
import type { SignerStateStore } from "../state/store";
import { alreadyInitialized, badSetupToken, notInitialized } from "./errors";
import { checkShareBelongs, decodeShare, operatorByCredential, replaceOperator } from "./operators";
import {
  addShare,
  expiresAt,
  isExpired,
  operationAllowed,
  type QuorumOperation,
  type QuorumProgress,
  type RotationPlan,
  type SealPhase,
  startProgress,
  wipeProgress,
} from "./quorum";
import { decodeSealRecord, encodeSealRecord, type OperatorRecord, type SealRecord } from "./record";
import type { InitCommand, RegisterCommand, RotationCommand, ShareCommand } from "./requests";
import { combineShares, matchesCheckValue, newMasterKey, wipe } from "./shares";
import { parsePlan, type RegistrationView, splitAndWrap } from "./split";

export interface SealServiceOptions {
  readonly store: SignerStateStore;
  readonly kmsClient: (keyArn: string) => KMSClient;
  /** 0 = partial progress never expires. */
  readonly unsealTimeoutMs: number;
  /** Config defaults for init (key_sources.cloud_kv.kms_key_arns / kms_threshold). */
  readonly defaults: { readonly shareWrap?: readonly string[]; readonly threshold?: number };
  readonly logger: Logger;
  readonly now?: () => number;
}

/** Told when the master key appears (unseal) and goes (seal); cloud_kv keys follow it. */
export interface SealListener {
  unsealed(masterKey: Uint8Array): Promise<void> | void;
  sealed(): void;
}

export interface ProgressView {
  readonly operation: QuorumOperation;
  readonly submitted: number;
  readonly threshold: number;
  readonly submitted_by: readonly string[];
  readonly started_at: string;
  readonly expires_at: string | null;
  readonly new_share_wrap?: readonly string[];
  readonly new_threshold?: number;
}

export interface SealStatusView {
  readonly state: "uninitialized" | "sealed" | "partial_unseal" | "unsealed";
  readonly initialized: boolean;
  readonly sealed: boolean;
  readonly seal_id: string | null;
  readonly threshold: number | null;
  readonly operators: readonly { id: string; share_wrap: string; registered: boolean }[];
  readonly progress: readonly ProgressView[];
  readonly unseal_timeout_minutes: number;
}

/** Lost compare-and-set races on the seal record before giving up (several instances writing). */
const MAX_RECORD_RETRIES = 5;

/**
 * The seal lifecycle of docs/architecture.md ("Seal lifecycle"): init, operator registration,
 * quorum operations (unseal, generate-root, rotate-quorum) and seal. The master key exists only in
 * this object, only while unsealed; shares exist only in progress objects, only until they complete
 * or expire.
 */
export class SealService {
  private masterKey: Uint8Array | undefined;
  private readonly progress = new Map<QuorumOperation, QuorumProgress>();
  private readonly timers = new Map<QuorumOperation, ReturnType<typeof setTimeout>>();
  private readonly now: () => number;
  private readonly log: Logger;
  private listener: SealListener | undefined;
  private shareRejected: (operation: QuorumOperation) => void = () => {};
  /**
   * Whether signer_state held a seal record when last read (start-up, status, init, every
   * operation): what a refused request is told. Another instance's init shows after the next
   * read here (a health check reads it).
   */
  private initializedAsRead: boolean | undefined;

  constructor(private readonly options: SealServiceOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.logger;
  }

  /** Counts every share refused as not its operator's (metrics); never given the share. */
  onShareRejected(count: (operation: QuorumOperation) => void): void {
    this.shareRejected = count;
  }

  /** The composition root attaches the key sources that need the master key (one listener). */
  attach(listener: SealListener): void {
    this.listener = listener;
  }

  /** True only while the master key is in memory: the gate of every signing and management route. */
  isUnsealed(): boolean {
    return this.masterKey !== undefined;
  }

  /**
   * Why a request is refused while not unsealed, and what unblocks it: before init, init (no
   * quorum can unseal a signer that has no shares yet); after it, a quorum's unseal.
   */
  closedReason(): string {
    return this.initializedAsRead === false
      ? "the signer is not initialized: run sigil operator init with the setup token from its start-up log, then a quorum of operators unseals it (docs/ceremony.md)"
      : "the signer is sealed: a quorum of operators must unseal it (sigil operator unseal)";
  }

  /** The master key while unsealed (for the cloud_kv key source), else undefined. */
  currentMasterKey(): Uint8Array | undefined {
    return this.masterKey;
  }

  /**
   * Start-up: an uninitialized signer_state gets a fresh one-time setup token, returned for the
   * caller to log once (only its hash is stored); any earlier setup token stops working.
   */
  async issueSetupTokenIfUninitialized(): Promise<string | undefined> {
    if (await this.readRecord()) return undefined;
    const store = this.options.store;
    for (const old of (await store.listTokens()).filter((t) => t.kind === "setup"))
      await store.revokeToken(old.accessor);
    const minted = newToken();
    await store.createToken({
      accessor: minted.accessor,
      hash: minted.hash,
      kind: "setup",
      policies: [],
      cidrs: [],
      createdAt: this.now(),
    });
    return minted.token;
  }

  async status(): Promise<SealStatusView> {
    const record = await this.readRecord();
    this.dropExpired();
    const timeoutMinutes = this.options.unsealTimeoutMs / 60_000;
    if (!record) {
      return {
        state: "uninitialized",
        initialized: false,
        sealed: true,
        seal_id: null,
        threshold: null,
        operators: [],
        progress: [],
        unseal_timeout_minutes: timeoutMinutes,
      };
    }
    const progress = [...this.progress.values()]
      .filter((p) => p.sealId === record.sealId)
      .map((p) => this.viewProgress(p, record));
    const unsealed = this.isUnsealed();
    const partial = !unsealed && progress.some((p) => p.operation === "unseal" && p.submitted > 0);
    return {
      state: unsealed ? "unsealed" : partial ? "partial_unseal" : "sealed",
      initialized: true,
      sealed: !unsealed,
      seal_id: record.sealId,
      threshold: record.threshold,
      operators: record.operators.map((op) => ({
        id: op.id,
        share_wrap: op.wrap,
        registered: op.credentialHash !== undefined,
      })),
      progress,
      unseal_timeout_minutes: timeoutMinutes,
    };
  }

  /** The init ceremony: a master key, split and wrapped, one registration token per share. */
  async init(command: InitCommand): Promise<{
    seal_id: string;
    threshold: number;
    operators: RegistrationView[];
  }> {
    const setupToken = command.setup_token;
    const plan = parsePlan(
      command.share_wrap ?? this.options.defaults.shareWrap?.map((arn) => `awskms:${arn}`),
      command.threshold ?? this.options.defaults.threshold,
      "key_sources.cloud_kv.kms_key_arns",
    );
    if (await this.readRecord()) throw alreadyInitialized();
    const setupHash = hashToken(setupToken);
    if ((await this.options.store.findToken(setupHash))?.kind !== "setup") throw badSetupToken();
    const masterKey = newMasterKey();
    try {
      const { record, registrations } = await splitAndWrap(
        masterKey,
        plan,
        this.now(),
        this.options.kmsClient,
      );
      // Spent only now: a KMS failure above leaves the setup token usable for another try.
      if ((await this.options.store.consumeToken(setupHash))?.kind !== "setup")
        throw badSetupToken();
      const stored = await this.options.store.putSeal(encodeSealRecord(record), undefined);
      // Either way a seal record exists now: this one, or another instance's.
      this.initializedAsRead = true;
      if (!stored) throw alreadyInitialized();
      this.log.info("initialized: signer is sealed until a quorum of operators unseals it", {
        seal_id: record.sealId,
        threshold: record.threshold,
        operators: record.operators.length,
      });
      return { seal_id: record.sealId, threshold: record.threshold, operators: registrations };
    } finally {
      wipe(masterKey);
    }
  }

  /** Trades a one-use registration token for the operator's credential. */
  async register(command: RegisterCommand): Promise<{
    operator: string;
    share_wrap: string;
    credential: string;
  }> {
    const hash = hashToken(command.registration_token);
    return this.updateRecord((record) => {
      const operator = record.operators.find((op) => op.registrationHash === hash);
      if (!operator)
        throw new SigilError("invalid_token", "invalid or already used registration token");
      const minted = newToken(OPERATOR_CREDENTIAL_PREFIX);
      const registered: OperatorRecord = {
        ...operator,
        registrationHash: undefined,
        credentialHash: minted.hash,
        registeredAt: this.now(),
      };
      return {
        record: replaceOperator(record, registered),
        result: { operator: operator.id, share_wrap: operator.wrap, credential: minted.token },
        after: () => this.log.info("operator registered", { operator: operator.id }),
      };
    });
  }

  /** The wrapped share of the credential's operator, for the CLI to unwrap locally. */
  async share(credential: string): Promise<{
    operator: string;
    seal_id: string;
    share_wrap: string;
    wrapped_share: string;
  }> {
    const record = await this.requireRecord();
    const operator = operatorByCredential(record, credential);
    return {
      operator: operator.id,
      seal_id: record.sealId,
      share_wrap: operator.wrap,
      wrapped_share: operator.wrappedShare,
    };
  }

  /** One operator's share towards a quorum operation. */
  async submit(
    operation: QuorumOperation,
    credential: string,
    command: ShareCommand,
  ): Promise<Record<string, unknown>> {
    const share = decodeShare(command.share);
    const record = await this.requireRecord();
    const operator = operatorByCredential(record, credential);
    this.requirePhase(operation);
    try {
      checkShareBelongs(record, operator, share);
    } catch (error) {
      // A wrong share is an operator's mistake or someone else's key material: say so, never what.
      this.log.warn(`${operation}: share rejected`, {
        operator: operator.id,
        reason: error instanceof SigilError ? error.message : String(error),
      });
      this.shareRejected(operation);
      throw error;
    }
    // From here to the outcome nothing awaits: concurrent submissions see one consistent progress.
    this.dropExpired();
    let progress = this.progress.get(operation);
    if (progress && progress.sealId !== record.sealId) {
      this.dropProgress(operation);
      progress = undefined;
    }
    if (!progress) {
      if (operation === "rotate-quorum")
        throw new SigilError(
          "no_rotation",
          "no quorum rotation is in progress: start one with sigil operator rotate quorum --token … --share-wrap … --threshold …",
        );
      progress = startProgress(operation, record.sealId, this.now());
    }
    const outcome = addShare(progress, operator.id, share, record.threshold);
    if (outcome.outcome === "duplicate") {
      share.fill(0);
      throw new SigilError(
        "duplicate_share",
        `${operator.id} already submitted a share for this ${operation} (${progress.shares.size} of ${record.threshold}); each operator counts once`,
      );
    }
    if (outcome.outcome === "pending") {
      this.setProgress(operation, outcome.progress);
      this.log.info(`${operation}: share accepted`, {
        operator: operator.id,
        submitted: outcome.progress.shares.size,
        threshold: record.threshold,
      });
      return { complete: false, progress: this.viewProgress(outcome.progress, record) };
    }
    const plan = progress.rotation;
    this.dropProgress(operation, false);
    const combined = await combineShares([...outcome.shares]);
    for (const used of outcome.shares) wipe(used);
    try {
      if (!matchesCheckValue(combined, record.checkValue)) {
        this.log.error(`${operation}: the rebuilt master key does not match the check value`, {
          seal_id: record.sealId,
        });
        throw new SigilError(
          "internal_error",
          "the rebuilt master key does not match the stored check value: the seal record may be damaged; shares were discarded",
        );
      }
      return await this.complete(operation, operator.id, combined, plan, record.sealId);
    } finally {
      if (this.masterKey !== combined) wipe(combined);
    }
  }

  /** Starts a quorum rotation (management token, unsealed); operators then submit shares. */
  async startRotation(command: RotationCommand): Promise<ProgressView> {
    this.requirePhase("rotate-quorum");
    const plan = parsePlan(command.share_wrap, command.threshold);
    const record = await this.requireRecord();
    this.dropExpired();
    const running = this.progress.get("rotate-quorum");
    if (running && running.sealId === record.sealId) {
      throw new SigilError(
        "rotation_in_progress",
        `a quorum rotation is already in progress (started ${new Date(running.startedAt).toISOString()}); cancel it first`,
      );
    }
    const progress = startProgress("rotate-quorum", record.sealId, this.now(), plan);
    this.setProgress("rotate-quorum", progress);
    this.log.info("rotate-quorum started", {
      new_threshold: plan.threshold,
      new_operators: plan.shareWrap.length,
    });
    return this.viewProgress(progress, record);
  }

  cancelRotation(): void {
    this.requirePhase("rotate-quorum");
    if (!this.progress.has("rotate-quorum"))
      throw new SigilError("no_rotation", "no quorum rotation is in progress");
    this.dropProgress("rotate-quorum");
    this.log.info("rotate-quorum cancelled");
  }

  /** Wipes the master key and every pending share; signing stops until the next unseal. */
  seal(): void {
    if (!this.masterKey) throw new SigilError("sealed", "the signer is already sealed");
    this.wipeAll();
    this.listener?.sealed();
    this.log.warn("sealed: signing and management stop until a quorum of operators unseals");
  }

  /** Shutdown: nothing secret outlives the process's last moments longer than needed. */
  close(): void {
    this.wipeAll();
  }

  private async complete(
    operation: QuorumOperation,
    operatorId: string,
    combined: Uint8Array,
    plan: RotationPlan | undefined,
    sealId: string,
  ): Promise<Record<string, unknown>> {
    if (operation === "unseal") {
      this.masterKey = combined;
      this.log.info("unsealed: quorum reached", { completed_by: operatorId });
      try {
        await this.listener?.unsealed(combined);
      } catch (error) {
        this.log.error("unsealed, but loading the keys that need the master key failed", {
          error: error instanceof Error ? error.message : String(error),
        });
      }
      return { complete: true, state: "unsealed" };
    }
    if (operation === "generate-root") {
      const minted = await mintManagementToken(this.options.store, this.now());
      this.log.warn("management token generated by quorum", {
        accessor: minted.accessor,
        completed_by: operatorId,
      });
      return { complete: true, token: minted.token, accessor: minted.accessor };
    }
    if (!plan || !this.masterKey || !sameBytes(combined, this.masterKey))
      throw new SigilError("internal_error", "quorum rotation lost its plan or master key");
    const masterKey = this.masterKey;
    const now = this.now();
    const { record, registrations } = await splitAndWrap(
      masterKey,
      plan,
      now,
      this.options.kmsClient,
    );
    return this.updateRecord((current) => {
      if (current.sealId !== sealId)
        throw new SigilError(
          "seal_conflict",
          "the quorum was rotated by another instance meanwhile; nothing changed",
        );
      return {
        record: { ...record, initializedAt: current.initializedAt },
        result: {
          complete: true,
          seal_id: record.sealId,
          threshold: record.threshold,
          operators: registrations,
        },
        after: () =>
          this.log.warn("quorum rotated: earlier operator credentials no longer work", {
            seal_id: record.sealId,
            threshold: record.threshold,
            operators: record.operators.length,
            completed_by: operatorId,
          }),
      };
    });
  }

  private requirePhase(operation: QuorumOperation): void {
    const phase: SealPhase = this.masterKey ? "unsealed" : "sealed";
    if (operationAllowed(operation, phase)) return;
    if (operation === "unseal")
      throw new SigilError("already_unsealed", "the signer is already unsealed");
    throw new SigilError("sealed", `the signer is sealed: ${operation} needs an unsealed signer`);
  }

  private async readRecord(): Promise<SealRecord | undefined> {
    const slot = await this.options.store.getSeal();
    this.initializedAsRead = Boolean(slot);
    return slot ? decodeSealRecord(slot.body) : undefined;
  }

  private async requireRecord(): Promise<SealRecord> {
    const record = await this.readRecord();
    if (!record) throw notInitialized();
    return record;
  }

  /** Read-modify-write of the seal record with compare-and-set, retried when another writer wins. */
  private async updateRecord<T>(
    change: (record: SealRecord) => { record: SealRecord; result: T; after?: () => void },
  ): Promise<T> {
    for (let attempt = 0; attempt < MAX_RECORD_RETRIES; attempt++) {
      const slot = await this.options.store.getSeal();
      if (!slot) throw notInitialized();
      const next = change(decodeSealRecord(slot.body));
      if (await this.options.store.putSeal(encodeSealRecord(next.record), slot.version)) {
        next.after?.();
        return next.result;
      }
    }
    throw new SigilError(
      "seal_conflict",
      "the seal record kept changing under this request (another instance writing); try again",
    );
  }

  private viewProgress(progress: QuorumProgress, record: SealRecord): ProgressView {
    const expiry = expiresAt(progress, this.options.unsealTimeoutMs);
    return {
      operation: progress.operation,
      submitted: progress.shares.size,
      threshold: record.threshold,
      submitted_by: [...progress.shares.keys()],
      started_at: new Date(progress.startedAt).toISOString(),
      expires_at: expiry === undefined ? null : new Date(expiry).toISOString(),
      ...(progress.rotation
        ? {
            new_share_wrap: progress.rotation.shareWrap,
            new_threshold: progress.rotation.threshold,
          }
        : {}),
    };
  }

  private setProgress(operation: QuorumOperation, progress: QuorumProgress): void {
    const isNew = this.progress.get(operation)?.startedAt !== progress.startedAt;
    this.progress.set(operation, progress);
    const timeoutMs = this.options.unsealTimeoutMs;
    if (!isNew || timeoutMs <= 0) return;
    clearTimeout(this.timers.get(operation));
    // Expiry also happens lazily on every access; the timer wipes shares promptly from memory.
    const timer = setTimeout(() => this.dropExpired(), timeoutMs + 5);
    timer.unref?.();
    this.timers.set(operation, timer);
  }

  private dropExpired(): void {
    const now = this.now();
    for (const [operation, progress] of this.progress) {
      if (!isExpired(progress, now, this.options.unsealTimeoutMs)) continue;
      this.log.warn(
        `partial ${operation} expired: submitted shares discarded; operators must resubmit`,
        {
          submitted: progress.shares.size,
          unseal_timeout_minutes: this.options.unsealTimeoutMs / 60_000,
        },
      );
      this.dropProgress(operation);
    }
  }

  private dropProgress(operation: QuorumOperation, wipeShares = true): void {
    if (wipeShares) wipeProgress(this.progress.get(operation));
    this.progress.delete(operation);
    clearTimeout(this.timers.get(operation));
    this.timers.delete(operation);
  }

  private wipeAll(): void {
    for (const operation of [...this.progress.keys()]) this.dropProgress(operation);
    if (this.masterKey) wipe(this.masterKey);
    this.masterKey = undefined;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
