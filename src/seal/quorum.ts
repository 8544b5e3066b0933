/**
 * Quorum operations as plain data and plain functions (docs/architecture.md, "Seal lifecycle"):
 * unseal, generate-root and rotate-quorum each collect shares from distinct operators until the
 * threshold is met. Shares live in memory only, in one progress object per operation, which expires
 * as a whole.
 */

export type QuorumOperation = "unseal" | "generate-root" | "rotate-quorum";

export type SealPhase = "uninitialized" | "sealed" | "unsealed";

/** What a quorum rotation will produce once its quorum is met. */
export interface RotationPlan {
  readonly shareWrap: readonly string[];
  readonly threshold: number;
}

export interface QuorumProgress {
  readonly operation: QuorumOperation;
  /** The split the shares belong to: a rotation elsewhere makes them worthless. */
  readonly sealId: string;
  readonly startedAt: number;
  /** Operator id → share. Insertion order is submission order. */
  readonly shares: ReadonlyMap<string, Uint8Array>;
  readonly rotation?: RotationPlan;
}

/** Which operation each phase allows: unseal only while sealed, the others only while unsealed. */
export function operationAllowed(operation: QuorumOperation, phase: SealPhase): boolean {
  if (phase === "uninitialized") return false;
  return operation === "unseal" ? phase === "sealed" : phase === "unsealed";
}

/** `timeoutMs` 0 means never (unseal_timeout_minutes = 0 or unset). */
export function expiresAt(progress: QuorumProgress, timeoutMs: number): number | undefined {
  return timeoutMs > 0 ? progress.startedAt + timeoutMs : undefined;
}

export function isExpired(progress: QuorumProgress, now: number, timeoutMs: number): boolean {
  const at = expiresAt(progress, timeoutMs);
  return at !== undefined && now >= at;
}

export function startProgress(
  operation: QuorumOperation,
  sealId: string,
  now: number,
  rotation?: RotationPlan,
): QuorumProgress {
  return { operation, sealId, startedAt: now, shares: new Map(), rotation };
}

export type Submission =
  | { readonly outcome: "duplicate" }
  | { readonly outcome: "pending"; readonly progress: QuorumProgress }
  | { readonly outcome: "complete"; readonly shares: readonly Uint8Array[] };

/**
 * Adds one operator's (already verified) share. A second share from the same operator is refused:
 * one operator must never count twice towards a quorum.
 */
export function addShare(
  progress: QuorumProgress,
  operator: string,
  share: Uint8Array,
  threshold: number,
): Submission {
  if (progress.shares.has(operator)) return { outcome: "duplicate" };
  const shares = new Map(progress.shares).set(operator, share);
  if (shares.size >= threshold) return { outcome: "complete", shares: [...shares.values()] };
  return { outcome: "pending", progress: { ...progress, shares } };
}

/** Overwrites every share of a progress being dropped (expired, completed or superseded). */
export function wipeProgress(progress: QuorumProgress | undefined): void {
  for (const share of progress?.shares.values() ?? []) share.fill(0);
}
