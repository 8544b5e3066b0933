/**
 * Attestation checks that arrive in the same event-loop turn go to PostgreSQL together: one
 * statement calling the same check function once per check, so one round trip, one transaction
 * and one commit for all of them. A slot's burst of attestations otherwise costs the signer's main
 * thread one query each (protocol, socket write, result parsing) and the server one transaction
 * each.
 *
 * Why it stays safe:
 *   - The batch is one statement, so one transaction: every accepted check in it is committed
 *     together or not at all, and the callers hear of nothing before the commit.
 *   - Each check is the same function a single check calls, under READ COMMITTED: each of its
 *     statements takes a fresh snapshot, so a check sees the records of the checks before it in
 *     the batch. Still, a validator has one statement in flight at most: a second check of it
 *     waits, queued here, until the first one's statement has ended.
 *   - Validators are locked in the order of their public keys, so two batches (of this process or
 *     another) never wait on each other in a cycle.
 *   - Anything else that locks several validators (an import, a prune) locks them in another
 *     order. The batch gives up waiting for a lock after `BATCH_LOCK_TIMEOUT` (lock_timeout, set
 *     for its transaction alone), long before PostgreSQL's deadlock detection (deadlock_timeout,
 *     1 s by default) would normally pick the import as the victim.
 *   - A batch the server refused (that lock timeout, or another error of the statement) wrote
 *     nothing: its checks are then made one at a time, each in its own transaction, as if never
 *     batched. A connection that breaks or cannot be had (the error classes in `failsWholeBatch`)
 *     fails every check of the batch (the caller answers 503; a client's retry of a check that was
 *     in fact committed gets "same data").
 *   - At most `maxInFlight` statements of this batcher run at once (batches, and lone checks).
 *     A batch that fell back frees its place when its statement ends: its checks, made one at a
 *     time, wait for their validators' locks as long as it takes, and are bounded by the signing
 *     service's job limiter instead. (A single check waiting for a lock still holds its
 *     connection, and postgres.js may pipeline other statements behind it: docs/antislashing.md,
 *     "A validator locked by an import waits for it".)
 */
import postgres from "postgres";

/** What the check function returns (migrations.ts, sigil_check_and_insert_attestation_bounded). */
export interface AttestationRow {
  outcome: string;
  reason: string | null;
  other_source: string | null;
  other_target: string | null;
  other_root: Buffer | null;
  low_watermark: string | null;
  recorded_gvr: Buffer | null;
  /** The database-wide watermark that refused it (watermark-repair); null otherwise. */
  bound: string | null;
}

/** One check's arguments, already validated. */
export interface AttestationArgs {
  readonly gvr: Buffer;
  readonly pubkey: Buffer;
  /** Decimal uint64. */
  readonly source: string;
  readonly target: string;
  readonly root: Buffer;
}

/** Checks per statement at most; more wait for the next statement (sent at once). */
export const MAX_BATCH = 128;
/** lock_timeout of a batch's transaction (see above). */
export const BATCH_LOCK_TIMEOUT = "100ms";

interface Queued {
  readonly args: AttestationArgs;
  readonly pubkeyHex: string;
  readonly resolve: (row: AttestationRow | undefined) => void;
  readonly reject: (error: unknown) => void;
}

type Sql = postgres.Sql;

export class AttestationBatcher {
  private queue: Queued[] = [];
  private scheduled = false;
  /** Statements in flight: batches and lone checks, not a refused batch's single checks. */
  private inFlight = 0;
  /** Validators (hex) with a statement in flight: their next check waits for it to end. */
  private readonly busy = new Set<string>();

  constructor(
    private readonly sql: Sql,
    /** One check in its own statement (the store's single-check query). */
    private readonly single: (args: AttestationArgs) => Promise<AttestationRow | undefined>,
    /**
     * Statements in flight at most: the pool's connections. Checks arriving while every
     * connection has one wait, and go together in the next batch, rather than queue behind a
     * statement on a busy connection.
     */
    private readonly maxInFlight: number,
  ) {}

  check(args: AttestationArgs): Promise<AttestationRow | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ args, pubkeyHex: args.pubkey.toString("hex"), resolve, reject });
      this.schedule();
    });
  }

  /** A flush after the turn's other requests have queued their checks. */
  private schedule(): void {
    if (this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    // Checks of a validator with a statement in flight; sent once it has ended (`release`).
    const deferred: Queued[] = [];
    let waiting = this.queue;
    this.queue = [];
    while (waiting.length > 0) {
      if (this.inFlight >= this.maxInFlight) {
        // Sent when a statement in flight ends.
        deferred.push(...waiting);
        break;
      }
      const batch: Queued[] = [];
      const rest: Queued[] = [];
      const validators = new Set<string>();
      for (const item of waiting) {
        if (this.busy.has(item.pubkeyHex) || validators.has(item.pubkeyHex)) deferred.push(item);
        else if (batch.length < MAX_BATCH) {
          validators.add(item.pubkeyHex);
          batch.push(item);
        } else rest.push(item);
      }
      if (batch.length > 0) this.send(batch);
      waiting = rest;
    }
    this.queue = deferred.concat(this.queue);
  }

  private send(batch: Queued[]): void {
    for (const item of batch) this.busy.add(item.pubkeyHex);
    // A lone check is a statement in flight as a batch is, so that under load checks keep
    // gathering into batches instead of leaving one by one.
    this.inFlight += 1;
    const [only] = batch;
    if (batch.length === 1 && only !== undefined) {
      this.sendSingle(only, () => {
        this.inFlight -= 1;
      });
    } else void this.sendBatch(batch);
  }

  private sendSingle(item: Queued, ended?: () => void): void {
    let row: Promise<AttestationRow | undefined>;
    try {
      row = this.single(item.args);
    } catch (error) {
      row = Promise.reject(error);
    }
    void row.then(item.resolve, item.reject).finally(() => {
      ended?.();
      this.release([item]);
    });
  }

  /**
   * Settles every check of the batch, whatever happens; never rejects. Its place among the
   * statements in flight (taken by `send`) is given back when the statement ends.
   */
  private async sendBatch(batch: Queued[]): Promise<void> {
    batch.sort((a, b) => (a.pubkeyHex < b.pubkeyHex ? -1 : 1));
    let rows: AttestationRow[];
    try {
      rows = await this.query(batch);
    } catch (error) {
      if (failsWholeBatch(error)) return this.fail(batch, error);
      // The server rolled the statement back: nothing of it was written. Each check is made
      // alone, out of the batch's place among those in flight.
      for (const item of batch) this.sendSingle(item);
      return;
    } finally {
      // Checks waiting for a place among the statements in flight may take the one just freed.
      this.inFlight -= 1;
      this.schedule();
    }
    if (rows.length !== batch.length) {
      const problem = `slashing protection: ${batch.length} checks in one statement returned ${rows.length} rows`;
      return this.fail(batch, new Error(problem));
    }
    for (const [i, item] of batch.entries()) item.resolve(rows[i]);
    this.release(batch);
  }

  private fail(batch: readonly Queued[], error: unknown): void {
    for (const item of batch) item.reject(error);
    this.release(batch);
  }

  /** The statement of these checks has ended: their validators' next checks may go. */
  private release(items: readonly Queued[]): void {
    for (const item of items) this.busy.delete(item.pubkeyHex);
    this.schedule();
  }

  /**
   * The lock timeout is set by the first FROM item, which every call of the check function
   * references: PostgreSQL has to evaluate it before the first call.
   */
  private query(batch: readonly Queued[]): Promise<AttestationRow[]> {
    const hex = (bytes: Buffer) => bytes.toString("hex");
    const gvrs = batch.map((q) => hex(q.args.gvr));
    const pubkeys = batch.map((q) => q.pubkeyHex);
    const sources = batch.map((q) => q.args.source);
    const targets = batch.map((q) => q.args.target);
    const roots = batch.map((q) => hex(q.args.root));
    return this.sql<AttestationRow[]>`
      SELECT r.outcome, r.reason, r.other_source::text AS other_source,
        r.other_target::text AS other_target, r.other_root, r.low_watermark::text AS low_watermark,
        r.recorded_gvr, r.bound::text AS bound
      FROM (SELECT set_config('lock_timeout', ${BATCH_LOCK_TIMEOUT}, true) AS lock_timeout) c
      CROSS JOIN unnest(${gvrs}::text[], ${pubkeys}::text[], ${sources}::text[],
        ${targets}::text[], ${roots}::text[]) WITH ORDINALITY AS t (gvr, pubkey, source, target, root, ord)
      CROSS JOIN LATERAL sigil_check_and_insert_attestation_bounded(
        CASE WHEN c.lock_timeout IS NOT NULL THEN decode(t.gvr, 'hex') END,
        decode(t.pubkey, 'hex'), t.source::numeric, t.target::numeric, decode(t.root, 'hex')) r
      ORDER BY t.ord`;
  }
}

/**
 * Errors after which no check of the batch is made again one by one: a broken connection (not a
 * server error: the driver's own), and the server's connection exception, insufficient resources
 * and operator intervention classes (08, 53, 57: no connection, too many connections, shutting
 * down, a cancelled statement), which would refuse every single check the same way.
 */
export function failsWholeBatch(error: unknown): boolean {
  if (!(error instanceof postgres.PostgresError)) return true;
  return /^(08|53|57)/.test(error.code);
}
