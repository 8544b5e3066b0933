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
 * one byte array rather than an object per job, or an array per field: a structured clone costs
 * per object and per typed array (measured alone: 5.2–5.9 µs of CPU per message of eight jobs in
 * three arrays, 3.2–3.9 in one), and this message crosses for every signature
 * (docs/performance.md, issue 40). Layout, for `count` jobs: the job number and key id of each
 * (float64 pairs, at 0), where each job's message ends (uint32, at 16·count), then the messages
 * back to back (at 20·count).
 */
export interface SignMessage {
  type: "sign";
  count: number;
  packed: Uint8Array;
}

/** The packed form of `jobs`, for the worker's `sign` message. */
export function packSignJobs(jobs: readonly SignJob[]): SignMessage {
  const count = jobs.length;
  let length = 0;
  for (const job of jobs) length += job.message.length;
  const packed = new Uint8Array(20 * count + length);
  const ids = new Float64Array(packed.buffer, 0, 2 * count);
  const ends = new Uint32Array(packed.buffer, 16 * count, count);
  let end = 0;
  for (let i = 0; i < count; i++) {
    const job = jobs[i] as SignJob;
    ids[2 * i] = job.job;
    ids[2 * i + 1] = job.id;
    packed.set(job.message, 20 * count + end);
    end += job.message.length;
    ends[i] = end;
  }
  return { type: "sign", count, packed };
}

/** The jobs of a `sign` message, in order (the messages are views into `packed`). */
export function unpackSignJobs(message: SignMessage): SignJob[] {
  const { count } = message;
  const packed = aligned(message.packed);
  const ids = new Float64Array(packed.buffer, packed.byteOffset, 2 * count);
  const ends = new Uint32Array(packed.buffer, packed.byteOffset + 16 * count, count);
  const jobs: SignJob[] = [];
  let start = 20 * count;
  for (let i = 0; i < count; i++) {
    const end = 20 * count + (ends[i] as number);
    jobs.push({
      job: ids[2 * i] as number,
      id: ids[2 * i + 1] as number,
      message: packed.subarray(start, end),
    });
    start = end;
  }
  return jobs;
}

/** A compressed G2 signature, the size of every signature in a `signed` message. */
export const SIGNATURE_BYTES = 96;

/**
 * The answer to a `sign` message, in one byte array as well: the `count` job numbers (float64,
 * at 0), then their signatures, 96 bytes each (at 8·count; zeros where it failed). Job i was
 * signed when `errors` is null or `errors[i]` is null.
 */
export interface SignedMessage {
  type: "signed";
  count: number;
  packed: Uint8Array;
  errors: (string | null)[] | null;
}

/** An empty `signed` answer for `count` jobs: fill in `jobs` and `signatures`, then send `message`. */
export function signedAnswer(count: number): {
  message: SignedMessage;
  jobs: Float64Array;
  signatures: Uint8Array;
} {
  const packed = new Uint8Array(count * (8 + SIGNATURE_BYTES));
  const message: SignedMessage = { type: "signed", count, packed, errors: null };
  return {
    message,
    jobs: new Float64Array(packed.buffer, 0, count),
    signatures: packed.subarray(8 * count),
  };
}

/** The job numbers and signatures of a `signed` answer. */
export function readSigned(message: SignedMessage): { jobs: Float64Array; signatures: Uint8Array } {
  const packed = aligned(message.packed);
  return {
    jobs: new Float64Array(packed.buffer, packed.byteOffset, message.count),
    signatures: packed.subarray(8 * message.count),
  };
}

/** The bytes at an offset a float64 view can start at (a clone keeps the sender's, 0). */
function aligned(packed: Uint8Array): Uint8Array {
  return packed.byteOffset % 8 === 0 ? packed : packed.slice();
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
