/**
 * Entry of one BLS signing worker (pool.ts starts them). It holds the secret keys the pool gives
 * it, by the pool's id, inside its own blst or noble backend, and signs the jobs of each `sign`
 * message in order. Messages are handled one at a time, in arrival order, so the jobs of a key
 * are signed in the order the pool sent them.
 *
 * The compiled binary must name this file as an extra entrypoint (scripts/build.ts).
 */
import type { BlsSecretKey, LocalBlsBackend } from "./backend";
import { createNobleBackend } from "./noble";
import type { FromWorker, InitMessage, SignMessage, SignResult, ToWorker } from "./protocol";
import { loadBlstBackend } from "./select";

let backend: LocalBlsBackend | undefined;
const keys = new Map<number, BlsSecretKey>();

function reply(message: FromWorker): void {
  postMessage(message);
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
