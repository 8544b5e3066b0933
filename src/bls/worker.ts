/**
 * Entry of one BLS signing worker (pool.ts starts them). It holds the secret keys the pool gives
 * it, by the pool's id, inside its own blst or noble backend (deriving their public keys for the
 * pool when asked, `import`), and signs the jobs of each `sign` message in order. Messages are handled one at a time, in arrival order, so the jobs of a key
 * are signed in the order the pool sent them.
 *
 * The compiled binary must name this file as an extra entrypoint (scripts/build.ts).
 */
import {
  type BlsSecretKey,
  type LocalBlsBackend,
  PUBLIC_KEY_BYTES,
  SECRET_KEY_BYTES,
} from "./backend";
import { createNobleBackend } from "./noble";
import type {
  FromWorker,
  ImportMessage,
  InitMessage,
  SignMessage,
  SignResult,
  ToWorker,
} from "./protocol";
import { loadBlstBackend } from "./select";

let backend: LocalBlsBackend | undefined;
const keys = new Map<number, BlsSecretKey>();

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
  const results: SignResult[] = [];
  for (const { job, id, message: bytes } of message.jobs) {
    const key = keys.get(id);
    if (backend === undefined || key === undefined) {
      results.push({ job, error: "BLS key is not held by this signing worker (removed?)" });
      continue;
    }
    try {
      results.push({ job, signature: backend.sign(key, bytes) });
    } catch (error) {
      results.push({ job, error: reasonOf(error) });
    }
  }
  reply({ type: "signed", results });
}

/** Imports each key and answers its public key, or why the backend refused it. */
function importKeys(message: ImportMessage): void {
  const { ids, secrets } = message;
  const publicKeys = new Uint8Array(ids.length * PUBLIC_KEY_BYTES);
  const errors: (string | null)[] = [];
  try {
    ids.forEach((id, i) => {
      try {
        if (backend === undefined) throw new Error("BLS signing worker is not ready");
        const secret = secrets.subarray(i * SECRET_KEY_BYTES, (i + 1) * SECRET_KEY_BYTES);
        const key = backend.importSecretKey(secret);
        keys.set(id, key);
        publicKeys.set(key.publicKey, i * PUBLIC_KEY_BYTES);
        errors.push(null);
      } catch (error) {
        errors.push(reasonOf(error));
      }
    });
  } finally {
    secrets.fill(0);
  }
  reply({ type: "imported", ids, publicKeys, errors }, [publicKeys.buffer]);
}

function handle(message: ToWorker): void {
  switch (message.type) {
    case "init":
      void init(message);
      return;
    case "add":
      // The pool validated the key before sending it; a failure here surfaces when signing.
      try {
        if (backend) keys.set(message.id, backend.importSecretKey(message.secret));
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
