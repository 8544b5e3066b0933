/**
 * Whether the last durable write of slashing protection failed, for the health check: while it
 * has, `/healthcheck` answers 503 with `slashing_protection` DOWN, until a write succeeds again
 * (a signature's record, or the health check's own probe, SlashingStore.probeWrite). A database
 * that still answers reads can refuse every write (a full disk, an immutable or read-only file, a
 * PostgreSQL replica after a failover): a read-only ping would call it UP while every block and
 * attestation gets 503.
 */
export class WriteHealth {
  private failure: string | null = null;

  /** A write that had to reach the disk did not: the reason, for the health check's data. */
  failed(error: unknown): void {
    this.failure = error instanceof Error ? error.message : String(error);
  }

  succeeded(): void {
    this.failure = null;
  }

  /** Why the last write failed, or null when it succeeded (or none was made yet). */
  get lastFailure(): string | null {
    return this.failure;
  }
}
