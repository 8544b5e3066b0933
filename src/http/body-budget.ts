import { SigilError } from "../errors";

/**
 * A cap on the bytes of request bodies being read at once for callers nobody has authenticated
 * yet (public routes, and operator routes whose credential the service checks after the body).
 * A read reserves the body's declared length (or the route's limit, for a chunked body) and gives
 * it back when done; one that would take the total past the cap is refused at once, 503
 * `queue_full` with Retry-After, before it reads anything. One read is always admitted, so a
 * single body up to its route's limit is never refused.
 */
export class BodyBudget {
  #inUse = 0;

  constructor(private readonly capBytes: number) {}

  get inUse(): number {
    return this.#inUse;
  }

  async within<T>(request: Request, limitBytes: number, read: () => Promise<T>): Promise<T> {
    const declared = Number(request.headers.get("content-length") ?? Number.NaN);
    const bytes =
      Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, limitBytes) : limitBytes;
    if (this.#inUse > 0 && this.#inUse + bytes > this.capBytes) {
      throw new SigilError(
        "queue_full",
        `too many request bodies being read before authentication (${this.#inUse} bytes in flight, cap ${this.capBytes})`,
        1,
      );
    }
    this.#inUse += bytes;
    try {
      return await read();
    } finally {
      this.#inUse -= bytes;
    }
  }
}
