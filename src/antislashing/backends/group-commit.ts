import type { Database } from "bun:sqlite";

/** Most checks one commit may carry: bounds how long the event loop is held by one batch. */
export const MAX_GROUP_COMMIT = 256;

/**
 * Group commit. bun:sqlite is synchronous, so every commit's fsync (synchronous = FULL) blocks the
 * event loop; one fsync per check caps a busy signer at the disk's fsync rate. Checks submitted
 * while the loop was busy are run together at the next turn: ONE immediate transaction, each check
 * in its own savepoint (a failing check rolls back alone and rejects alone), in arrival order, so
 * each sees the records inserted by the checks before it — exactly as if they had run one by one.
 * Nothing resolves before the commit: a signature still never leaves before its record is durable.
 */
export class GroupCommit<T> {
  private pending: {
    run: () => T;
    resolve: (d: T) => void;
    reject: (e: unknown) => void;
  }[] = [];
  private scheduled = false;

  constructor(private readonly db: Database) {}

  submit(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs everything pending now (also called on close). */
  flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_GROUP_COMMIT);
      const outcomes: ({ ok: true; decision: T } | { ok: false; error: unknown })[] = [];
      try {
        this.db
          .transaction(() => {
            for (const item of batch) {
              try {
                // A nested transaction is a savepoint: only this check rolls back if it throws.
                outcomes.push({ ok: true, decision: this.db.transaction(item.run)() });
              } catch (error) {
                outcomes.push({ ok: false, error });
              }
            }
          })
          .immediate();
      } catch (error) {
        // The commit itself failed (lock timeout, disk): nothing of the batch is recorded.
        for (const item of batch) item.reject(error);
        continue;
      }
      batch.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome?.ok) item.resolve(outcome.decision);
        else item.reject(outcome?.error);
      });
    }
  }
}
