/**
 * The slashing thread's answers, read message by message: every barrier a `decided` names is
 * said settled exactly once, and only in a LATER `durable` message, and every check is answered
 * (now that the thread runs its WAL syncs itself, between the messages it handles). The proxy (thread-store.ts) would
 * otherwise release an answer before its record is on disk, or wait for ever.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import {
  type FromThread,
  KIND_ATTESTATION,
  packChecks,
  readDecided,
  type ToThread,
} from "../../src/antislashing/backends/sqlite/thread-protocol";
import { spawnSlashingThread } from "../../src/antislashing/backends/sqlite/thread-store";
import { TempDir } from "../support/cli";
import { GVR_A, pubkey, root } from "./support";

const dir = new TempDir();
afterAll(() => dir.remove());

test("each barrier is named before it is said synced, and said synced once", async () => {
  const worker = spawnSlashingThread();
  try {
    const received: FromThread[] = [];
    const opened = Promise.withResolvers<void>();
    const done = Promise.withResolvers<void>();
    const BATCHES = 300;
    const PER_BATCH = 4;
    let decidedCount = 0;
    const named = new Set<number>();
    const settled = new Set<number>();
    worker.addEventListener("message", (event) => {
      const message = (event as MessageEvent<FromThread>).data;
      received.push(message);
      if (message.type === "opened") opened.resolve();
      if (message.type === "open_failed") opened.reject(new Error(message.error.message));
      if (message.type === "decided") {
        for (const id of readDecided(message).barriers) named.add(id);
        decidedCount++;
      }
      if (message.type === "durable") {
        expect(message.error).toBeUndefined();
        expect(named.has(message.barrier)).toBe(true);
        expect(settled.has(message.barrier)).toBe(false);
        settled.add(message.barrier);
      }
      if (decidedCount === BATCHES && [...named].every((id) => settled.has(id))) done.resolve();
    });
    const post = (message: ToThread) => worker.postMessage(message);
    post({
      type: "open",
      path: join(dir.path, "messages.sqlite"),
      options: { create: true, checkpoints: "inline" },
    });
    await opened.promise;
    // Batches sent a turn apart, as the proxy sends them: many arrive while a sync runs.
    for (let b = 1; b <= BATCHES; b++) {
      const checks = Array.from({ length: PER_BATCH }, (_, i) => ({
        kind: KIND_ATTESTATION,
        gvr: GVR_A,
        pubkey: pubkey(b * PER_BATCH + i),
        first: 1n,
        second: 2n,
        signingRoot: root("messages", b, i),
      }));
      post(packChecks(b, checks));
      if (b % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await done.promise;
    const decided = received.filter((m) => m.type === "decided");
    expect(decided.map((m) => m.batch)).toEqual(Array.from({ length: BATCHES }, (_, i) => i + 1));
    for (const message of decided) {
      expect([...readDecided(message).outcomes]).toEqual(new Array(PER_BATCH).fill(0)); // new
    }
    expect(named.size).toBeGreaterThan(0);
  } finally {
    await worker.terminate();
  }
});
