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
 *     the batch. A batch still never holds two checks of one validator: a second one waits for the
 *     next batch.
 *   - Validators are locked in the order of their public keys, so two batches (of this process or
 *     another) never wait on each other in a cycle.
 *   - Anything else that locks several validators (an import, a prune) locks them in another
 *     order. The batch gives up waiting for a lock after `BATCH_LOCK_TIMEOUT` (lock_timeout, set
 *     for its transaction alone), well before PostgreSQL's deadlock detection (deadlock_timeout,
 *     1 s by default) could pick the import as the victim.
 *   - A batch the server refuses (that lock timeout, or any other server error) wrote nothing: its
 *     checks are then made one at a time, each in its own transaction, as if never batched. A
 *     connection that breaks fails every check of the batch (the caller answers 503; a client's
 *     retry of a check that was in fact committed gets "same data").
 */
import postgres from "postgres";

/** What the check function returns (migrations.ts, sigil_check_and_insert_attestation). */
export interface AttestationRow {
  outcome: string;
  reason: string | null;
  other_source: string | null;
  other_target: string | null;
  other_root: Buffer | null;
  low_watermark: string | null;
  recorded_gvr: Buffer | null;
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
  private inFlight = 0;

  constructor(
    private readonly sql: Sql,
    /** One check in its own statement (the store's single-check query). */
    private readonly single: (args: AttestationArgs) => Promise<AttestationRow | undefined>,
    /**
     * Batches in flight at most: the pool's connections. Checks arriving while every connection
     * has a batch wait, and go together in the next one, rather than queue behind a batch on a
     * busy connection.
     */
    private readonly maxInFlight: number,
  ) {}

  check(args: AttestationArgs): Promise<AttestationRow | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ args, pubkeyHex: args.pubkey.toString("hex"), resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // After the turn's other requests have queued theirs.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    let waiting = this.queue;
    this.queue = [];
    while (waiting.length > 0) {
      if (this.inFlight >= this.maxInFlight) {
        // Sent when a batch in flight ends.
        this.queue = waiting.concat(this.queue);
        return;
      }
      const batch: Queued[] = [];
      const later: Queued[] = [];
      const validators = new Set<string>();
      for (const item of waiting) {
        if (batch.length < MAX_BATCH && !validators.has(item.pubkeyHex)) {
          validators.add(item.pubkeyHex);
          batch.push(item);
        } else {
          later.push(item);
        }
      }
      this.inFlight += 1;
      void this.send(batch).finally(() => {
        this.inFlight -= 1;
        if (this.queue.length > 0 && !this.scheduled) {
          this.scheduled = true;
          setImmediate(() => this.flush());
        }
      });
      waiting = later;
    }
  }

  /** Settles every check of the batch, whatever happens. */
  private async send(batch: Queued[]): Promise<void> {
    try {
      await this.sendOrFallBack(batch);
    } catch (error) {
      for (const item of batch) item.reject(error);
    }
  }

  private async sendOrFallBack(batch: Queued[]): Promise<void> {
    const [only] = batch;
    if (batch.length === 1 && only !== undefined) {
      await this.settle(only, this.single(only.args));
      return;
    }
    batch.sort((a, b) => (a.pubkeyHex < b.pubkeyHex ? -1 : 1));
    let rows: AttestationRow[];
    try {
      rows = await this.query(batch);
    } catch (error) {
      // A broken connection: `send` fails every check of the batch.
      if (!(error instanceof postgres.PostgresError)) throw error;
      // The server rolled the batch back: nothing of it was written.
      await Promise.all(batch.map((item) => this.settle(item, this.single(item.args))));
      return;
    }
    if (rows.length !== batch.length) {
      throw new Error(
        `slashing protection: ${batch.length} checks in one statement returned ${rows.length} rows`,
      );
    }
    for (const [i, item] of batch.entries()) item.resolve(rows[i]);
  }

  private settle(item: Queued, row: Promise<AttestationRow | undefined>): Promise<void> {
    return row.then(item.resolve, item.reject);
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
        r.recorded_gvr
      FROM (SELECT set_config('lock_timeout', ${BATCH_LOCK_TIMEOUT}, true) AS lock_timeout) c
      CROSS JOIN unnest(${gvrs}::text[], ${pubkeys}::text[], ${sources}::text[],
        ${targets}::text[], ${roots}::text[]) WITH ORDINALITY AS t (gvr, pubkey, source, target, root, ord)
      CROSS JOIN LATERAL sigil_check_and_insert_attestation(
        CASE WHEN c.lock_timeout IS NOT NULL THEN decode(t.gvr, 'hex') END,
        decode(t.pubkey, 'hex'), t.source::numeric, t.target::numeric, decode(t.root, 'hex')) r
      ORDER BY t.ord`;
  }
}
