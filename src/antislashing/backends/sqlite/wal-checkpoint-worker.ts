/**
 * Entry of the slashing protection database's checkpoint worker (wal-checkpoint.ts starts it). It
 * holds a second connection to the database and runs PASSIVE checkpoints when asked, so that
 * copying the WAL into the database file, and the two fsyncs that go with it, happen on this
 * thread instead of holding the event loop. It never writes a record.
 *
 * The compiled binary must name this file as an extra entrypoint (scripts/build/compile.ts).
 */
import { Database } from "bun:sqlite";
import { nameThisThread } from "./thread-name";
import type { CheckpointReply, CheckpointRequest } from "./wal-checkpoint-protocol";

let db: Database | undefined;

function reply(message: CheckpointReply): void {
  postMessage(message);
}

function open(path: string): void {
  const connection = new Database(path, { readwrite: true, create: false, safeIntegers: false });
  try {
    const mode = connection.query("PRAGMA journal_mode").get() as { journal_mode?: string } | null;
    if (mode?.journal_mode !== "wal") throw new Error(`${path} is not in WAL mode`);
    // A checkpoint syncs the WAL before copying it and the database file before the WAL may be
    // reused; with synchronous = OFF it would do neither.
    connection.run("PRAGMA synchronous = FULL");
    connection.run("PRAGMA busy_timeout = 0");
  } catch (error) {
    connection.close(false);
    throw error;
  }
  db = connection;
}

function checkpoint(): CheckpointReply {
  if (db === undefined) throw new Error("the checkpoint worker has no database open");
  const row = db.query("PRAGMA wal_checkpoint(PASSIVE)").get() as {
    busy: number;
    log: number;
    checkpointed: number;
  } | null;
  return {
    type: "checkpointed",
    busy: row?.busy === 1,
    walFrames: row?.log ?? -1,
    checkpointedFrames: row?.checkpointed ?? -1,
  };
}

nameThisThread("sigil-checkpnt");

addEventListener("message", (event) => {
  const message = (event as MessageEvent<CheckpointRequest>).data;
  try {
    switch (message.type) {
      case "open":
        open(message.path);
        reply({ type: "ready" });
        return;
      case "checkpoint":
        reply(checkpoint());
        return;
      case "close":
        db?.close(false);
        db = undefined;
        reply({ type: "closed" });
        return;
    }
  } catch (error) {
    reply({ type: "failed", reason: error instanceof Error ? error.message : String(error) });
  }
});
