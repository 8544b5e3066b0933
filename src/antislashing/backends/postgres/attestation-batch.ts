/**
 * Attestation checks that arrive in the same event-loop turn go to PostgreSQL together: one
 * statement, `sigil_check_attestations` (migrations.ts, V7), which decides them one after the
 * other, so one round trip, one transaction and one commit for all of them. A slot's burst of
 * attestations otherwise costs the signer's main thread one query each (protocol, socket write,
 * result parsing) and the server one transaction each. A lone check is a batch of one.
 *
 * Why it stays safe:
 *   - The batch is one statement, so one transaction: every accepted check in it is committed
 *     together or not at all, and the callers hear of nothing before the commit.
 *   - Each check locks its validator and then reads its records in statements of their own,
 *     under READ COMMITTED: each statement takes a fresh snapshot, so a check sees the records of
 *     the checks before it in the batch and of every transaction that held the lock before it.
 *     Still, a validator has one check per statement at most (the function refuses a batch that
 *     repeats one): a second check of it waits, queued here, until the first one's statement has
 *     ended.
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

/** What the check function returns for a check (migrations.ts, sigil_check_attestations). */
export interface AttestationRow {
  /** The check's position in the batch, from 1. */
  ord: number;
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
      // A statement's checks share a genesis root (a signer has one; another goes in its own).
      let gvr: Buffer | undefined;
      for (const item of waiting) {
        if (this.busy.has(item.pubkeyHex) || validators.has(item.pubkeyHex)) deferred.push(item);
        else if (batch.length < MAX_BATCH && (gvr === undefined || gvr.equals(item.args.gvr))) {
          gvr ??= item.args.gvr;
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

  /** A check in a statement of its own, which waits for its validator's lock as long as it takes. */
  private sendSingle(item: Queued, ended?: () => void): void {
    let rows: Promise<AttestationRow[]>;
    try {
      rows = this.query([item], null);
    } catch (error) {
      rows = Promise.reject(error);
    }
    const row = rows.then((found) => {
      checkRows(found, 1);
      return found[0];
    });
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
      rows = await this.query(batch, BATCH_LOCK_TIMEOUT);
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
    try {
      checkRows(rows, batch.length);
    } catch (error) {
      return this.fail(batch, error);
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
   * One statement for these checks, all of one genesis root, in ascending order of public key
   * (which `sigil_check_attestations` insists on). Keys and roots travel as one byte string
   * each: one parameter to encode instead of one per check.
   */
  private query(batch: readonly Queued[], lockTimeout: string | null): Promise<AttestationRow[]> {
    const gvr = batch[0]?.args.gvr;
    if (gvr === undefined) return Promise.resolve([]);
    const pubkeys = Buffer.concat(batch.map((q) => q.args.pubkey));
    const roots = Buffer.concat(batch.map((q) => q.args.root));
    const sources = batch.map((q) => q.args.source);
    const targets = batch.map((q) => q.args.target);
    return this.sql<AttestationRow[]>`
      SELECT ord, outcome, reason, other_source, other_target, other_root, low_watermark,
        recorded_gvr, bound
      FROM sigil_check_attestations(${gvr}, ${pubkeys}, ${sources}::numeric[],
        ${targets}::numeric[], ${roots}, ${lockTimeout}::text)`;
  }
}

/** Throws unless the statement answered each of `checks` checks, in order. */
function checkRows(rows: readonly AttestationRow[], checks: number): void {
  const inOrder = rows.length === checks && rows.every((row, i) => row.ord === i + 1);
  if (!inOrder) {
    throw new Error(
      `slashing protection: ${checks} checks in one statement returned ${rows.length} rows` +
        (rows.length === checks ? " out of order" : ""),
    );
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
