import type { KeyAccess } from "../auth/authenticator";
import { writeCutoff } from "./batch";
import type { DeleteCommand, ImportCommand } from "./import-request";
import type { KeyService } from "./key-service";

/** Bounds concurrent work: `run` starts a job now, queues it, or refuses (503 queue_full). */
export interface Limiter {
  run<T>(job: () => Promise<T> | T, signal?: AbortSignal): Promise<T>;
}

export interface KeyManagerLimits {
  /** key_manager_api.max_concurrent_reads: listings and deletes. */
  readonly reads: Limiter;
  /** key_manager_api.max_concurrent_writes: imports. */
  readonly writes: Limiter;
  /** key_manager_api.request_timeout_seconds, in ms: an import's writes stop before it. */
  readonly timeoutMs: number;
}

/**
 * The Key Manager API (`/eth/v1/keystores`) over the key service: imports go to the filesystem
 * source's keystore files; a delete takes the key out of every source that holds it. GET and
 * DELETE share the read limit and POST has the write limit, as the spec's
 * max_concurrent_reads / max_concurrent_writes say; the limits live here, with the service, as
 * the signing limiter lives in the signing service.
 */
export class KeyManagerService {
  constructor(
    private readonly keys: KeyService,
    private readonly limits: KeyManagerLimits,
  ) {}

  list(access: KeyAccess, deadline: AbortSignal) {
    return this.limits.reads.run(() => ({ data: this.keys.list(access) }), deadline);
  }

  import(command: ImportCommand, access: KeyAccess, deadline: AbortSignal) {
    const cutoff = writeCutoff(deadline, this.limits.timeoutMs);
    return this.limits.writes.run(
      () => this.keys.import("filesystem", command, access, { cutoff }),
      deadline,
    );
  }

  delete(command: DeleteCommand, access: KeyAccess, deadline: AbortSignal) {
    return this.limits.reads.run(() => this.keys.delete("every_source", command, access), deadline);
  }
}
