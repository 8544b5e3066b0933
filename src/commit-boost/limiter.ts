/**
 * The auth failure limiter of the Commit-Boost listener: a client address with `limit` failed
 * authentications within `windowMs` is refused (429) for `blockMs` after its last failure, even
 * with a valid token: guessing a module's secret costs a block per few tries. Memory is bounded:
 * at most `maxClients` addresses are tracked (the oldest entry goes first), each with at most
 * `limit` timestamps, so a flood of addresses cannot grow it.
 */
export interface FailureLimiterOptions {
  readonly limit: number;
  readonly windowMs: number;
  readonly blockMs: number;
  readonly maxClients?: number;
  readonly now?: () => number;
}

interface ClientFailures {
  /** Times of the most recent failures, oldest first, at most `limit`. */
  times: number[];
  blockedUntil: number;
}

export class AuthFailureLimiter {
  readonly #clients = new Map<string, ClientFailures>();
  readonly #options: Required<FailureLimiterOptions>;

  constructor(options: FailureLimiterOptions) {
    this.#options = { maxClients: 100_000, now: Date.now, ...options };
  }

  /** Milliseconds `client` stays blocked, 0 when it may try. */
  blockedFor(client: string): number {
    const entry = this.#clients.get(client);
    if (!entry) return 0;
    const now = this.#options.now();
    if (entry.blockedUntil > now) return entry.blockedUntil - now;
    const { windowMs } = this.#options;
    if (entry.times.every((t) => now - t > windowMs)) this.#clients.delete(client);
    return 0;
  }

  /** Counts a failure; true when it (now) blocks the client. */
  fail(client: string): boolean {
    const { limit, windowMs, blockMs, maxClients, now: clock } = this.#options;
    const now = clock();
    let entry = this.#clients.get(client);
    if (entry)
      this.#clients.delete(client); // re-inserted last: the map stays oldest-first
    else entry = { times: [], blockedUntil: 0 };
    entry.times = entry.times.filter((t) => now - t <= windowMs);
    entry.times.push(now);
    if (entry.times.length > limit) entry.times.shift();
    if (entry.times.length >= limit) entry.blockedUntil = now + blockMs;
    this.#clients.set(client, entry);
    while (this.#clients.size > maxClients) {
      const oldest = this.#clients.keys().next().value;
      if (oldest === undefined) break;
      this.#clients.delete(oldest);
    }
    return entry.blockedUntil > now;
  }

  /** Addresses tracked (for the metrics gauge). */
  get tracked(): number {
    return this.#clients.size;
  }

  /** Addresses blocked now. */
  blockedCount(): number {
    const now = this.#options.now();
    let n = 0;
    for (const entry of this.#clients.values()) if (entry.blockedUntil > now) n++;
    return n;
  }
}
