/** Runs at most `limit` tasks at once; the others wait in FIFO order. No queue bound, no timeouts. */
export interface Semaphore {
  run<T>(task: () => Promise<T> | T): Promise<T>;
}

export function createSemaphore(limit: number): Semaphore {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`semaphore limit must be an integer >= 1, got ${limit}`);
  }
  let active = 0;
  const waiting: (() => void)[] = [];

  const release = () => {
    const next = waiting.shift();
    // Hand the slot straight to the next waiter so a caller arriving meanwhile cannot overtake it.
    if (next) next();
    else active--;
  };

  return {
    async run<T>(task: () => Promise<T> | T): Promise<T> {
      if (active < limit) active++;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      try {
        return await task();
      } finally {
        release();
      }
    },
  };
}
