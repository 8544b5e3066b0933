/**
 * Entry of one BLS signing worker (pool.ts starts them). It holds the secret keys the pool gives
 * it, by the pool's id, inside its own blst or noble backend (deriving their public keys for the
 * pool when asked, `import`), and signs the jobs of each `sign` message in order. Messages are handled one at a time, in arrival order, so the jobs of a key
 * are signed in the order the pool sent them.
 *
 * The compiled binary must name this file as an extra entrypoint (scripts/build.ts).
 */
import { nameThisThread, THREAD_NAMES } from "../os/thread-name";
import { bytesEqual } from "../wire/hex";
import {
  type BlsSecretKey,
  type LocalBlsBackend,
  PUBLIC_KEY_BYTES,
  PUBLIC_KEY_MISMATCH,
  SECRET_KEY_BYTES,
} from "./backend";
import { createNobleBackend } from "./noble";
import {
  type FromWorker,
  type ImportMessage,
  type InitMessage,
  SIGNATURE_BYTES,
  type SignMessage,
  signedAnswer,
  type ToWorker,
  unpackSignJobs,
} from "./protocol";
import { loadBlstBackend } from "./select";

nameThisThread(THREAD_NAMES.bls);

let backend: LocalBlsBackend | undefined;
const keys = new Map<number, BlsSecretKey>();

/**
 * Keys imported since the last full collection. An import leaves garbage the collector does not
 * see the size of (blst's native key objects, the batch's buffers), so a worker importing tens of
 * thousands of keys at start-up grew far past what it holds; a full collection after every
 * IMPORT_COLLECT_KEYS keys, or a quarter of the keys held when that is more (so the collections of
 * a large share cost about as much as one), took 16 workers with 100,000 keys from about 550 to
 * about 465 MiB peak. A collection of this worker's heap only: the others sign meanwhile.
 */
const IMPORT_COLLECT_KEYS = 2048;
let importedSinceCollect = 0;

function reply(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  postMessage(message, transfer);
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function init(message: InitMessage): Promise<void> {
  try {
    const loaded = message.backend === "blst" ? await loadBlstBackend() : createNobleBackend();
    const key = loaded.importSecretKey(message.selfTest.secret);
    const selfTestSignature = loaded.sign(key, message.selfTest.message);
    loaded.forget(key);
    backend = loaded;
    reply({ type: "ready", selfTestSignature });
  } catch (error) {
    reply({ type: "failed", reason: reasonOf(error) });
  }
}

function sign(message: SignMessage): void {
  const jobs = unpackSignJobs(message);
  const answer = signedAnswer(jobs.length);
  const { jobs: ids, signatures } = answer;
  let errors: (string | null)[] | null = null;
  const fail = (i: number, reason: string) => {
    errors ??= new Array<string | null>(jobs.length).fill(null);
    errors[i] = reason;
  };
  jobs.forEach(({ job, id, message: bytes }, i) => {
    ids[i] = job;
    const key = keys.get(id);
    if (backend === undefined || key === undefined) {
      fail(i, "BLS key is not held by this signing worker (removed?)");
      return;
    }
    try {
      const signature = backend.sign(key, bytes);
      if (signature.length !== SIGNATURE_BYTES) throw new Error("signature of unexpected length");
      signatures.set(signature, i * SIGNATURE_BYTES);
    } catch (error) {
      fail(i, reasonOf(error));
    }
  });
  answer.message.errors = errors;
  reply(answer.message);
}

/**
 * Imports a key with its claimed public key (checked before its first signature), or derives the
 * public key when none is claimed. A backend without `importClaimedKey` derives, and refuses a
 * claim that differs at once.
 */
function importKey(
  loaded: LocalBlsBackend,
  secret: Uint8Array,
  claim: Uint8Array | undefined,
): BlsSecretKey {
  if (claim === undefined) return loaded.importSecretKey(secret);
  if (loaded.importClaimedKey) return loaded.importClaimedKey(secret, claim);
  const key = loaded.importSecretKey(secret);
  if (!bytesEqual(key.publicKey, claim)) {
    loaded.forget(key);
    throw new Error(PUBLIC_KEY_MISMATCH);
  }
  return key;
}

function isZero(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** Imports each key and answers its public key, or why the backend refused it. */
function importKeys(message: ImportMessage): void {
  const { ids, secrets, claimed } = message;
  const publicKeys = new Uint8Array(ids.length * PUBLIC_KEY_BYTES);
  const errors: (string | null)[] = [];
  try {
    ids.forEach((id, i) => {
      try {
        if (backend === undefined) throw new Error("BLS signing worker is not ready");
        const secret = secrets.subarray(i * SECRET_KEY_BYTES, (i + 1) * SECRET_KEY_BYTES);
        const claim = claimed.subarray(i * PUBLIC_KEY_BYTES, (i + 1) * PUBLIC_KEY_BYTES);
        const known = isZero(claim) ? undefined : claim;
        const key = importKey(backend, secret, known);
        keys.set(id, key);
        publicKeys.set(known ?? key.publicKey, i * PUBLIC_KEY_BYTES);
        errors.push(null);
      } catch (error) {
        errors.push(reasonOf(error));
      }
    });
  } finally {
    secrets.fill(0);
  }
  reply({ type: "imported", ids, publicKeys, errors }, [publicKeys.buffer]);
  importedSinceCollect += ids.length;
  if (importedSinceCollect >= Math.max(IMPORT_COLLECT_KEYS, keys.size / 4)) {
    importedSinceCollect = 0;
    Bun.gc(true);
  }
}

function handle(message: ToWorker): void {
  switch (message.type) {
    case "init":
      void init(message);
      return;
    case "add":
      // The pool validated the key before sending it; a failure here surfaces when signing, and
      // so does a public key that does not match (the claim is checked before the first one).
      try {
        if (backend) keys.set(message.id, importKey(backend, message.secret, message.publicKey));
      } catch {
        // Not imported: signing with this id answers "not held by this signing worker".
      } finally {
        message.secret.fill(0);
      }
      return;
    case "import":
      importKeys(message);
      return;
    case "forget": {
      const key = keys.get(message.id);
      keys.delete(message.id);
      if (key) backend?.forget(key);
      return;
    }
    case "sign":
      sign(message);
      return;
  }
}

addEventListener("message", (event) => {
  handle((event as MessageEvent<ToWorker>).data);
});
