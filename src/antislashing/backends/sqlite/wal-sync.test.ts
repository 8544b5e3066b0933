import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { settledFlags, turns } from "../../../../test/support/settle";
import {
  CoalescingSync,
  DatabaseFileChangedError,
  fdatasyncWalOnThisThread,
  openWalSync,
  WalSyncError,
} from "./wal-sync";

/** A sync the test finishes by hand; `started` counts the calls. */
function manualSync() {
  const calls: PromiseWithResolvers<void>[] = [];
  return {
    calls,
    sync: () => {
      const call = Promise.withResolvers<void>();
      calls.push(call);
      return call.promise;
    },
  };
}

describe("coalescing WAL sync", () => {
  test("a wait when idle starts a sync at once and resolves with it", async () => {
    const { calls, sync } = manualSync();
    const syncs = new CoalescingSync(sync);
    const flags = settledFlags([syncs.wait()]);
    expect(calls.length).toBe(1);
    await turns();
    expect(flags).toEqual(["pending"]);
    calls[0]?.resolve();
    await turns();
    expect(flags).toEqual(["resolved"]);
  });

  test("waits during a sync do not resolve with it: they share ONE next sync, started after it", async () => {
    const { calls, sync } = manualSync();
    const syncs = new CoalescingSync(sync);
    const first = syncs.wait();
    const later = Array.from({ length: 50 }, () => syncs.wait());
    const flags = settledFlags([first, ...later]);
    expect(calls.length).toBe(1); // one in flight at most
    calls[0]?.resolve();
    await turns();
    expect(flags[0]).toBe("resolved");
    expect(flags.slice(1).every((f) => f === "pending")).toBe(true);
    expect(calls.length).toBe(2); // the next one started when the first ended
    const afterSecondStarted = syncs.wait(); // must not ride on a sync already running
    calls[1]?.resolve();
    await turns();
    expect(flags.every((f) => f === "resolved")).toBe(true);
    expect(calls.length).toBe(3);
    calls[2]?.resolve();
    await afterSecondStarted;
    expect(calls.length).toBe(3);
  });

  test("a failed sync rejects its waiters and every later wait, without syncing again", async () => {
    const { calls, sync } = manualSync();
    const syncs = new CoalescingSync(sync);
    const both = Promise.allSettled([syncs.wait(), syncs.wait()]);
    calls[0]?.reject(new Error("EIO: i/o error, fdatasync"));
    const [failing, queued] = await both;
    expect(failing?.status === "rejected" && failing.reason).toBeInstanceOf(WalSyncError);
    expect(queued?.status === "rejected" && String(queued.reason)).toContain("EIO");
    await expect(syncs.wait()).rejects.toThrow("could not be synced");
    expect(() => syncs.assertHealthy()).toThrow(WalSyncError);
    expect(calls.length).toBe(1);
  });

  test("a sync that throws instead of rejecting fails the same way", async () => {
    const syncs = new CoalescingSync(() => {
      throw new Error("EBADF");
    });
    await expect(syncs.wait()).rejects.toThrow("EBADF");
    expect(() => syncs.assertHealthy()).toThrow(WalSyncError);
  });

  test("close lets the syncs asked for finish; later waits fail", async () => {
    const { calls, sync } = manualSync();
    const syncs = new CoalescingSync(sync);
    const first = syncs.wait();
    const second = syncs.wait();
    let closed = false;
    const closing = syncs.close().then(() => {
      closed = true;
    });
    calls[0]?.resolve();
    await turns();
    expect(closed).toBe(false); // the queued sync still has to run
    calls[1]?.resolve();
    await closing;
    await first;
    await second;
    await expect(syncs.wait()).rejects.toThrow("closed");
    expect(calls.length).toBe(2);
  });

  test("a database without a file has nothing to sync", async () => {
    const db = new Database(":memory:");
    let called = 0;
    const wal = openWalSync(db, async () => {
      called++;
    });
    await wal.barrier();
    wal.assertHealthy();
    await wal.close();
    expect(called).toBe(0);
    db.close();
  });
});

describe("the WAL sync run on the slashing thread itself", () => {
  test("starts in a later turn, never inside the barrier's call, and resolves once synced", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sigil-walsync-"));
    try {
      const path = join(dir, "x-wal");
      writeFileSync(path, "frames");
      // A descriptor closed right after the call: a sync run inside the call would succeed.
      const closedFd = openSync(path, "r");
      const early = fdatasyncWalOnThisThread(closedFd);
      closeSync(closedFd);
      await expect(early).rejects.toThrow("EBADF");

      const fd = openSync(path, "r");
      await fdatasyncWalOnThisThread(fd);
      // The file gone from its path while open: the sync proves nothing, and says so.
      unlinkSync(path);
      await expect(fdatasyncWalOnThisThread(fd)).rejects.toBeInstanceOf(DatabaseFileChangedError);
      closeSync(fd);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
