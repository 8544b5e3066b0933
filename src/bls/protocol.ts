/**
 * The messages between the BLS worker pool (pool.ts, main thread) and its workers (worker.ts).
 * Keys are named by a number the pool assigns; secrets cross only in `add` or `import`, once per
 * worker start.
 */
import type { BlsBackendName } from "./backend";

/** Sent first; the worker answers `ready` (with its self-test signature) or `failed`. */
export interface InitMessage {
  type: "init";
  backend: BlsBackendName;
  /** A fixed, non-secret key and message: the pool checks the worker signs them as it does. */
  selfTest: { secret: Uint8Array; message: Uint8Array };
}

/** A key the pool holds already (a restarted worker gets them again): no answer. */
export interface AddMessage {
  type: "add";
  id: number;
  /** 32 bytes, transferred: the worker zeroes it once imported. */
  secret: Uint8Array;
  /**
   * The key's public key as the pool knows it (48 bytes): imported as a claim, so the worker
   * checks it before the key's first signature instead of deriving it now.
   */
  publicKey: Uint8Array;
}

/**
 * Keys to import and answer for: the worker derives each public key (the costly part of an
 * import), or takes the claimed one, and answers `imported`. Secrets cross once per worker
 * start, in `add` or here.
 */
export interface ImportMessage {
  type: "import";
  ids: number[];
  /** The secrets of `ids`, 32 bytes each, back to back; transferred, zeroed once imported. */
  secrets: Uint8Array;
  /**
   * Public keys claimed for `ids`, 48 bytes each, back to back; all zero where none is (no
   * compressed G1 point is all zero). A claimed key is imported as `importClaimedKey` does:
   * checked before its first signature.
   */
  claimed: Uint8Array;
}

export interface ForgetMessage {
  type: "forget";
  id: number;
}

export interface SignJob {
  job: number;
  id: number;
  message: Uint8Array;
}

/** Several jobs in one message when they queue up; the worker signs them in order. */
export interface SignMessage {
  type: "sign";
  jobs: SignJob[];
}

export type ToWorker = InitMessage | AddMessage | ImportMessage | ForgetMessage | SignMessage;

export type SignResult = { job: number; signature: Uint8Array } | { job: number; error: string };

export type FromWorker =
  | { type: "ready"; selfTestSignature: Uint8Array }
  | { type: "failed"; reason: string }
  | { type: "signed"; results: SignResult[] }
  | ImportedMessage;

/** The answer to an `import`, in its order: a key either has its public key or an error. */
export interface ImportedMessage {
  type: "imported";
  ids: number[];
  /** 48 bytes per id, back to back (zeros where the import failed). */
  publicKeys: Uint8Array;
  /** Null where the key was imported; else why not (never containing the secret). */
  errors: (string | null)[];
}
