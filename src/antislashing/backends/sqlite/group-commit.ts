import type { Database, Statement } from "bun:sqlite";
import { durableDecision, type Staged } from "../../store";

/** Most checks one commit may carry: bounds how long the event loop is held by one batch. */
export const MAX_GROUP_COMMIT = 256;

/** What makes a commit durable after it returned (wal-sync.ts); a no-op without a file. */
export interface Durability {
  /** Resolves once everything committed before the call is on disk. */
  barrier(): Promise<void>;
  /** Throws once the disk has failed a sync: no later commit can be made durable. */
  assertHealthy(): void;
}

type Outcome<T> = { ok: true; decision: T } | { ok: false; error: unknown };

/**
 * Given to a check that runs with a lazy savepoint: call `guard()` before any write that is not
 * the check's last statement (see GroupCommit.stage).
 */
export interface CheckScope {
  guard(): void;
}

/**
 * Something a batch's checks learn that holds only once their writes are kept: told after each
 * check whether its writes stayed in the transaction, and after the batch whether it committed.
 */
export interface BatchParticipant {
  checkEnded(kept: boolean): void;
  batchEnded(committed: boolean): void;
}

/**
 * "eager": the check runs in its own savepoint from its start. "lazy": only from its first
 * `guard()`; a check that never calls it must make at most one write, its last statement.
 */
export type SavepointMode = "eager" | "lazy";

interface Pending<T> {
  run: (scope: CheckScope) => T;
  savepoint: SavepointMode;
  resolve: (staged: Staged<T>) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit. Checks submitted while the event loop was busy are run together at the next
 * turn: ONE immediate transaction, each check in its own savepoint or as one final statement (a
 * failing check rolls back alone and rejects alone; see stage), in arrival order, so each sees the records inserted by the checks
 * before it — exactly as if they had run one by one. bun:sqlite is synchronous, so the
 * transaction holds the event loop; the database runs with synchronous = NORMAL, so COMMIT does
 * not fsync and that hold is short. The fsync comes after, off the loop: a check's record is
 * durable once the durability barrier asked for after its commit has resolved. `submit` settles
 * only then (new, same_data or refused alike: a same_data or a refusal may rest on a record
 * another batch or process wrote and nobody has synced yet). `stage` settles at the commit and
 * hands the barrier over, for a caller that works meanwhile and acts on the decision only once
 * it is durable (the signing service computes the signature while the disk syncs). Batches
 * committed while one sync is in flight share the next one.
 */
export class GroupCommit<T> {
  private pending: Pending<T>[] = [];
  private scheduled = false;
  /** Batches committed whose barrier has not settled yet. */
  private readonly settling = new Set<Promise<void>>();
  /**
   * Prepared once (`query` caches them, and `close` finalizes them): a nested `db.transaction()`
   * per check would build a new wrapper function each time, which cost as much as the check's own
   * queries.
   */
  private readonly savepoint: Statement;
  private readonly release: Statement;
  private readonly rollbackToSavepoint: Statement;
  /** Whether the check running now is inside its savepoint. */
  private inSavepoint = false;
  private readonly scope: CheckScope = {
    guard: () => {
      if (this.inSavepoint) return;
      this.savepoint.run();
      this.inSavepoint = true;
    },
  };

  constructor(
    private readonly db: Database,
    private readonly durability: Durability,
    private readonly participants: readonly BatchParticipant[] = [],
  ) {
    this.savepoint = db.query("SAVEPOINT group_commit_check");
    this.release = db.query("RELEASE group_commit_check");
    this.rollbackToSavepoint = db.query("ROLLBACK TO group_commit_check");
    this.commitBatch = db.transaction((batch: Pending<T>[], outcomes: Outcome<T>[]) => {
      for (const item of batch) outcomes.push(this.runCheck(item));
    });
  }

  /** One batch in one immediate transaction; the wrapper is built once, not per batch. */
  private readonly commitBatch: {
    immediate: (batch: Pending<T>[], outcomes: Outcome<T>[]) => void;
  };

  /** Resolves with the check's decision once its record is on disk. */
  async submit(run: (scope: CheckScope) => T, savepoint: SavepointMode = "eager"): Promise<T> {
    return durableDecision(await this.stage(run, savepoint));
  }

  /**
   * Resolves at the commit, with the decision and the barrier that makes it durable (a rejection
   * of that barrier is handled here too, for callers that drop it); rejects
   * when the check throws (its savepoint rolled back: nothing of it recorded; once the batch's
   * barrier has settled) or the commit fails (at once).
   *
   * `savepoint`: "eager" (the default) opens the check's savepoint before it runs. "lazy" opens it
   * at the check's first `scope.guard()`, which it calls before any write that more work follows
   * (another write, or code that may throw). A check that writes once, as its last statement,
   * then needs none: SQLite makes every statement atomic (one that fails is undone by itself, or
   * the whole transaction is: then the batch is abandoned, see runCheck), and nothing runs after
   * it that could throw. That is the sign path's usual check (one insert into known tables), and
   * a SAVEPOINT and a RELEASE per check were two of its five statements.
   */
  stage(run: (scope: CheckScope) => T, savepoint: SavepointMode = "eager"): Promise<Staged<T>> {
    return new Promise<Staged<T>>((resolve, reject) => {
      this.pending.push({ run, savepoint, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Commits everything pending now; each batch's barrier is asked for after its commit. */
  flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_GROUP_COMMIT);
      const outcomes: Outcome<T>[] = [];
      try {
        this.durability.assertHealthy();
        this.commitBatch.immediate(batch, outcomes);
      } catch (error) {
        // The commit itself failed (lock timeout, disk): nothing of the batch is recorded.
        this.batchEnded(false);
        for (const item of batch) item.reject(error);
        continue;
      }
      this.batchEnded(true);
      const durable = this.durability.barrier();
      const settled = durable.then(ignore, ignore);
      this.settling.add(settled);
      settled.then(() => this.settling.delete(settled));
      batch.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome?.ok) item.resolve({ decision: outcome.decision, durable });
        // A check that threw settles with its batch, as every decision does under submit.
        else settled.then(() => item.reject(outcome?.error));
      });
    }
  }

  /**
   * Runs one check; only this check rolls back if it throws: inside its savepoint, or (lazy, never
   * guarded) by SQLite's own undo of the one statement that failed.
   */
  private runCheck(item: Pending<T>): Outcome<T> {
    this.inSavepoint = false;
    if (item.savepoint === "eager") this.scope.guard();
    try {
      const decision = item.run(this.scope);
      if (this.inSavepoint) this.release.run();
      this.checkEnded(true);
      return { ok: true, decision };
    } catch (error) {
      this.checkEnded(false);
      // A failure to roll back escapes: the whole transaction, and so the batch, is abandoned.
      if (this.inSavepoint) {
        this.rollbackToSavepoint.run();
        this.release.run();
      } else if (!this.db.inTransaction) {
        // SQLite undid the whole transaction (an I/O error, a full disk, RAISE(ROLLBACK)): the
        // checks before this one lost their writes too, and the ones after must not run outside it.
        throw error;
      }
      return { ok: false, error };
    }
  }

  private checkEnded(kept: boolean): void {
    for (const participant of this.participants) participant.checkEnded(kept);
  }

  private batchEnded(committed: boolean): void {
    for (const participant of this.participants) participant.batchEnded(committed);
  }

  /** Commits everything pending and waits until every committed batch's barrier has settled (close). */
  async drain(): Promise<void> {
    this.flush();
    await Promise.all([...this.settling]);
  }
}

const ignore = () => {};
