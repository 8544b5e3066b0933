import { describe, expect, test } from "bun:test";
import { errorOf } from "../../test/support/errors";
import { JobLimiter } from "./limiter";

/** A job that records when it starts and settles only when the test says so. */
function controllable(started: string[], name: string) {
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  const job = () => {
    started.push(name);
    return promise;
  };
  return { job, resolve: () => resolve(name), reject: (err: Error) => reject(err) };
}

/** Lets promise callbacks (slot release, next job start) run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("JobLimiter", () => {
  test("starts exactly maxConcurrent jobs and runs queued ones in FIFO order", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 2, maxQueued: 3 });
    const started: string[] = [];
    const jobs = ["a", "b", "c", "d", "e"].map((name) => controllable(started, name));
    const results = jobs.map((j) => limiter.run(j.job));

    expect(started).toEqual(["a", "b"]);
    expect(limiter.running).toBe(2);
    expect(limiter.queued).toBe(3);

    jobs[1]?.resolve();
    await flush();
    expect(started).toEqual(["a", "b", "c"]);
    jobs[0]?.resolve();
    await flush();
    expect(started).toEqual(["a", "b", "c", "d"]);
    expect(limiter.running).toBe(2);
    expect(limiter.queued).toBe(1);

    for (const j of jobs) j.resolve();
    expect(await Promise.all(results)).toEqual(["a", "b", "c", "d", "e"]);
    expect(limiter.running).toBe(0);
    expect(limiter.queued).toBe(0);
  });

  test("rejects the job beyond maxConcurrent + maxQueued with queue_full and never runs it", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 1, retryAfterSeconds: 5 });
    const started: string[] = [];
    const a = controllable(started, "a");
    const b = controllable(started, "b");
    const c = controllable(started, "c");
    const ra = limiter.run(a.job);
    const rb = limiter.run(b.job);
    const err = await errorOf(limiter.run(c.job));

    expect(err.code).toBe("queue_full");
    expect(err.retryAfterSeconds).toBe(5);
    expect(err.message).toBe("signing queue is full (1 running, 1 waiting)");
    a.resolve();
    b.resolve();
    await Promise.all([ra, rb]);
    expect(started).toEqual(["a", "b"]);
  });

  test("retryAfterSeconds defaults to 1", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 0 });
    const held = controllable([], "a");
    const ra = limiter.run(held.job);
    expect((await errorOf(limiter.run(() => "x"))).retryAfterSeconds).toBe(1);
    held.resolve();
    await ra;
  });

  test("a rejecting job frees its slot and its error reaches the caller", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 1 });
    const started: string[] = [];
    const a = controllable(started, "a");
    const b = controllable(started, "b");
    const ra = limiter.run(a.job);
    const rb = limiter.run(b.job);

    a.reject(new Error("boom"));
    await expect(ra).rejects.toThrow("boom");
    expect(started).toEqual(["a", "b"]);
    b.resolve();
    expect(await rb).toBe("b");
    expect(limiter.running).toBe(0);
  });

  test("a synchronously throwing job is a rejection and frees its slot", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 1 });
    const throwing = limiter.run(() => {
      throw new Error("sync boom");
    });
    const next = limiter.run(() => "next");
    await expect(throwing).rejects.toThrow("sync boom");
    expect(await next).toBe("next");
    expect(limiter.running).toBe(0);
  });

  test("synchronous jobs returning plain values resolve with them", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 0 });
    expect(await limiter.run(() => 42)).toBe(42);
  });

  test("aborting a queued job removes it, frees its queue slot and rejects with request_timeout", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 1 });
    const started: string[] = [];
    const a = controllable(started, "a");
    const b = controllable(started, "b");
    const c = controllable(started, "c");
    const ra = limiter.run(a.job);
    const controller = new AbortController();
    const rb = limiter.run(b.job, controller.signal);
    expect(limiter.queued).toBe(1);

    controller.abort();
    const err = await errorOf(rb);
    expect(err.code).toBe("request_timeout");
    expect(err.message).toBe("request timed out before signing started");
    expect(limiter.queued).toBe(0);

    const rc = limiter.run(c.job);
    expect(limiter.queued).toBe(1);
    a.resolve();
    c.resolve();
    expect(await Promise.all([ra, rc])).toEqual(["a", "c"]);
    expect(started).toEqual(["a", "c"]);
  });

  test("an already aborted signal rejects at once and never runs the job", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 1 });
    let ran = false;
    const err = await errorOf(
      limiter.run(() => {
        ran = true;
      }, AbortSignal.abort()),
    );
    expect(err.code).toBe("request_timeout");
    expect(ran).toBe(false);
    expect(limiter.running).toBe(0);
  });

  test("aborting after the job started does not cancel it", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 1 });
    const a = controllable([], "a");
    const b = controllable([], "b");
    const controller = new AbortController();
    const ra = limiter.run(a.job);
    const rb = limiter.run(b.job, controller.signal);
    a.resolve();
    await ra;
    await flush();
    controller.abort();
    b.resolve();
    expect(await rb).toBe("b");
  });

  test("idle() resolves only after every running and queued job settles", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 1, maxQueued: 1 });
    await limiter.idle();
    const a = controllable([], "a");
    const b = controllable([], "b");
    const ra = limiter.run(a.job);
    const rb = limiter.run(b.job);
    let idle = false;
    const idlePromise = limiter.idle().then(() => {
      idle = true;
    });

    a.resolve();
    await ra;
    await flush();
    expect(idle).toBe(false);
    b.resolve();
    await rb;
    await idlePromise;
    expect(idle).toBe(true);
  });

  test("maxQueued 0 runs up to maxConcurrent and rejects the rest", async () => {
    const limiter = new JobLimiter({ maxConcurrent: 2, maxQueued: 0 });
    const started: string[] = [];
    const a = controllable(started, "a");
    const b = controllable(started, "b");
    const ra = limiter.run(a.job);
    const rb = limiter.run(b.job);
    expect((await errorOf(limiter.run(() => "c"))).code).toBe("queue_full");
    a.resolve();
    b.resolve();
    await Promise.all([ra, rb]);
    expect(await limiter.run(() => "d")).toBe("d");
    expect(started).toEqual(["a", "b"]);
  });

  test("constructor rejects invalid limits", () => {
    expect(() => new JobLimiter({ maxConcurrent: 0, maxQueued: 0 })).toThrow(RangeError);
    expect(() => new JobLimiter({ maxConcurrent: 1.5, maxQueued: 0 })).toThrow(RangeError);
    expect(() => new JobLimiter({ maxConcurrent: 1, maxQueued: -1 })).toThrow(RangeError);
    expect(() => new JobLimiter({ maxConcurrent: 1, maxQueued: 0.5 })).toThrow(RangeError);
    expect(() => new JobLimiter({ maxConcurrent: Number.NaN, maxQueued: 0 })).toThrow(RangeError);
    expect(() => new JobLimiter({ maxConcurrent: 1, maxQueued: 0 })).not.toThrow();
  });
});
