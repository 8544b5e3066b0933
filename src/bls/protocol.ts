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

/**
 * Several jobs in one message when they queue up; the worker signs them in order. Packed into
 * three flat arrays rather than an object per job: a structured clone costs per object and per
 * typed array, and this message crosses for every signature (docs/performance.md, issue 40).
 */
export interface SignMessage {
  type: "sign";
  /** job number and key id of each job, in order: [job0, id0, job1, id1, ...]. */
  jobs: Float64Array;
  /** The jobs' messages back to back; `ends[i]` is where job i's ends. */
  messages: Uint8Array;
  ends: Uint32Array;
}

/** The packed form of `jobs`, for the worker's `sign` message. */
export function packSignJobs(jobs: readonly SignJob[]): SignMessage {
  const ids = new Float64Array(jobs.length * 2);
  const ends = new Uint32Array(jobs.length);
  let length = 0;
  jobs.forEach((job, i) => {
    ids[2 * i] = job.job;
    ids[2 * i + 1] = job.id;
    length += job.message.length;
    ends[i] = length;
  });
  const messages = new Uint8Array(length);
  jobs.forEach((job, i) => {
    messages.set(job.message, (ends[i] as number) - job.message.length);
  });
  return { type: "sign", jobs: ids, messages, ends };
}

/** The jobs of a `sign` message, in order (the messages are views into `messages`). */
export function unpackSignJobs(message: SignMessage): SignJob[] {
  const jobs: SignJob[] = [];
  let start = 0;
  for (let i = 0; i < message.ends.length; i++) {
    const end = message.ends[i] as number;
    jobs.push({
      job: message.jobs[2 * i] as number,
      id: message.jobs[2 * i + 1] as number,
      message: message.messages.subarray(start, end),
    });
    start = end;
  }
  return jobs;
}

/** A compressed G2 signature, the size of every signature in a `signed` message. */
export const SIGNATURE_BYTES = 96;

/**
 * The answer to a `sign` message, packed as it is: `jobs[i]` was signed when `errors` is null or
 * `errors[i]` is null, its signature at `signatures[96 i, 96 i + 96)` (zeros where it failed).
 */
export interface SignedMessage {
  type: "signed";
  jobs: Float64Array;
  signatures: Uint8Array;
  errors: (string | null)[] | null;
}

export type ToWorker = InitMessage | AddMessage | ImportMessage | ForgetMessage | SignMessage;

export type FromWorker =
  | { type: "ready"; selfTestSignature: Uint8Array }
  | { type: "failed"; reason: string }
  | SignedMessage
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
