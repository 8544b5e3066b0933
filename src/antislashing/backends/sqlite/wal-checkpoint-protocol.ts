/** The messages between wal-checkpoint.ts (main thread) and wal-checkpoint-worker.ts. */

export type CheckpointRequest =
  | { type: "open"; path: string }
  | { type: "checkpoint" }
  | { type: "close" };

export type CheckpointReply =
  | { type: "ready" }
  /** PRAGMA wal_checkpoint(PASSIVE): frames in the WAL, and how many of them are now copied. */
  | { type: "checkpointed"; busy: boolean; walFrames: number; checkpointedFrames: number }
  | { type: "closed" }
  | { type: "failed"; reason: string };
