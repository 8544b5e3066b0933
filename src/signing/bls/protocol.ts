/**
 * The messages between the BLS worker pool (pool.ts, main thread) and its workers (worker.ts).
 * Keys are named by a number the pool assigns; secrets cross only in `add`, once per worker start.
 */
import type { BlsBackendName } from "./backend";

/** Sent first; the worker answers `ready` (with its self-test signature) or `failed`. */
export interface InitMessage {
  type: "init";
  backend: BlsBackendName;
  /** A fixed, non-secret key and message: the pool checks the worker signs them as it does. */
  selfTest: { secret: Uint8Array; message: Uint8Array };
}

export interface AddMessage {
  type: "add";
  id: number;
  /** 32 bytes, transferred: the worker zeroes it once imported. */
  secret: Uint8Array;
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

export type ToWorker = InitMessage | AddMessage | ForgetMessage | SignMessage;

export type SignResult = { job: number; signature: Uint8Array } | { job: number; error: string };

export type FromWorker =
  | { type: "ready"; selfTestSignature: Uint8Array }
  | { type: "failed"; reason: string }
  | { type: "signed"; results: SignResult[] };
