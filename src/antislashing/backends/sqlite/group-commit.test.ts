import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { settledFlags, turns } from "../../../../test/support/settle";
import { type Durability, GroupCommit, MAX_GROUP_COMMIT } from "./group-commit";
import { openWalSync } from "./wal-sync";

function counterDb(): Database {
  const db = new Database(":memory:");
  db.run("CREATE TABLE marks (n INTEGER PRIMARY KEY)");
  return db;
}
const count = (db: Database) =>
  (db.query("SELECT count(*) AS c FROM marks").get() as { c: number }).c;

describe("sqlite group commit", () => {
  test("checks submitted together run in order in one transaction; each sees the ones before it", async () => {
    const db = counterDb();
    const commits = new GroupCommit<number>(db, openWalSync(db));
    let transactionsSeen = 0;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        commits.submit(() => {
          if (db.inTransaction) transactionsSeen++;
          db.run("INSERT INTO marks (n) VALUES (?)", [i]);
          return count(db);
        }),
      ),
    );
    expect(results).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(transactionsSeen).toBe(10);
    expect(count(db)).toBe(10);
  });

  test("a failing check rolls back alone: the others of its batch commit and resolve", async () => {
    const db = counterDb();
    const commits = new GroupCommit<string>(db, openWalSync(db));
    const outcomes = await Promise.allSettled([
      commits.submit(() => {
        db.run("INSERT INTO marks (n) VALUES (1)");
        return "one";
      }),
      commits.submit(() => {
        db.run("INSERT INTO marks (n) VALUES (2)");
        throw new Error("check two fails");
      }),
      commits.submit(() => {
        db.run("INSERT INTO marks (n) VALUES (3)");
        return "three";
      }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(db.query("SELECT n FROM marks ORDER BY n").all()).toEqual([{ n: 1 }, { n: 3 }]);
  });

  test("a failed commit rejects the whole batch and records nothing of it", async () => {
    const db = counterDb();
    const commits = new GroupCommit<number>(db, openWalSync(db));
    // Another connection's open write transaction would block it; simplest: a closed database.
    const pending = commits.submit(() => 1);
    db.close();
    await expect(pending).rejects.toThrow();
  });

  test("more checks than one batch holds are split over several commits, none lost", async () => {
    const db = counterDb();
    const commits = new GroupCommit<number>(db, openWalSync(db));
    const total = MAX_GROUP_COMMIT * 2 + 7;
    await Promise.all(
      Array.from({ length: total }, (_, i) =>
        commits.submit(() => db.run("INSERT INTO marks (n) VALUES (?)", [i]).changes),
      ),
    );
    expect(count(db)).toBe(total);
  });

  test("flush() commits pending checks at once", async () => {
    const db = counterDb();
    const commits = new GroupCommit<number>(db, openWalSync(db));
    const pending = commits.submit(() => db.run("INSERT INTO marks (n) VALUES (7)").changes);
    commits.flush();
    expect(count(db)).toBe(1);
    expect(await pending).toBe(1);
  });

  test("no check settles before the barrier asked for after its commit; refusals included", async () => {
    const db = counterDb();
    const barriers: { committedRows: number; inTransaction: boolean; done: () => void }[] = [];
    const durability: Durability = {
      assertHealthy: () => {},
      barrier: () =>
        new Promise<void>((resolve) =>
          barriers.push({
            committedRows: count(db),
            inTransaction: db.inTransaction,
            done: resolve,
          }),
        ),
    };
    const commits = new GroupCommit<string>(db, durability);
    const settled: string[] = [];
    const submit = (n: number) =>
      commits
        .submit(() => {
          if (n === 2) throw new Error("refused");
          db.run("INSERT INTO marks (n) VALUES (?)", [n]);
          return `new ${n}`;
        })
        .then(
          (d) => settled.push(d),
          (e: Error) => settled.push(e.message),
        );
    const all = [submit(1), submit(2), submit(3)];
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(barriers).toHaveLength(1);
    // Asked for after the COMMIT: outside the transaction, both records already committed.
    expect(barriers[0]).toMatchObject({ committedRows: 2, inTransaction: false });
    expect(settled).toEqual([]);
    barriers[0]?.done();
    await Promise.all(all);
    // Decisions settle in arrival order; a check that threw may settle after them.
    expect(settled.filter((s) => s.startsWith("new"))).toEqual(["new 1", "new 3"]);
    expect(settled).toContain("refused");
  });

  test("stage() settles at the commit and hands over the barrier asked for after it", async () => {
    const db = counterDb();
    const barriers: { committedRows: number; done: () => void; fail: (e: Error) => void }[] = [];
    const commits = new GroupCommit<number>(db, {
      assertHealthy: () => {},
      barrier: () =>
        new Promise<void>((resolve, reject) =>
          barriers.push({ committedRows: count(db), done: resolve, fail: reject }),
        ),
    });
    const insert = (n: number) => () => db.run("INSERT INTO marks (n) VALUES (?)", [n]).changes;
    const [one, two] = await Promise.all([commits.stage(insert(1)), commits.stage(insert(2))]);
    // Settled with the barrier still pending: both committed, in one batch sharing one barrier.
    expect(barriers).toHaveLength(1);
    expect(barriers[0]?.committedRows).toBe(2);
    expect([one?.decision, two?.decision]).toEqual([1, 1]);
    expect(one?.durable).toBe(two?.durable as Promise<void>);
    const durable = settledFlags([one?.durable as Promise<void>]);
    await turns();
    expect(durable).toEqual(["pending"]);
    barriers[0]?.done();
    await one?.durable;

    // A failed barrier rejects the durable promise a caller holds; dropped, it is still handled.
    const three = await commits.stage(insert(3));
    await commits.stage(insert(4));
    barriers[1]?.fail(new Error("disk failed"));
    barriers[2]?.fail(new Error("disk failed"));
    await expect(three.durable).rejects.toThrow("disk failed");
  });

  test("a failed barrier rejects its whole batch; an unhealthy disk rejects before committing", async () => {
    const db = counterDb();
    let healthy = true;
    const durability: Durability = {
      assertHealthy: () => {
        if (!healthy) throw new Error("disk failed");
      },
      barrier: async () => {
        healthy = false;
        throw new Error("disk failed");
      },
    };
    const commits = new GroupCommit<number>(db, durability);
    const first = await Promise.allSettled([
      commits.submit(() => db.run("INSERT INTO marks (n) VALUES (1)").changes),
      commits.submit(() => db.run("INSERT INTO marks (n) VALUES (2)").changes),
    ]);
    expect(first.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(count(db)).toBe(2); // committed, never confirmed: they can only refuse more
    await expect(
      commits.submit(() => db.run("INSERT INTO marks (n) VALUES (3)").changes),
    ).rejects.toThrow("disk failed");
    expect(count(db)).toBe(2);
  });

  test("drain() commits what is pending and waits for its barrier (used on close)", async () => {
    const db = counterDb();
    const barrier = Promise.withResolvers<void>();
    const commits = new GroupCommit<number>(db, {
      assertHealthy: () => {},
      barrier: () => barrier.promise,
    });
    const pending = commits.submit(() => db.run("INSERT INTO marks (n) VALUES (7)").changes);
    let drained = false;
    const draining = commits.drain().then(() => {
      drained = true;
    });
    expect(count(db)).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(drained).toBe(false);
    barrier.resolve();
    await draining;
    expect(await pending).toBe(1);
  });

  test("lazy savepoint: a check's one final statement that fails is undone by SQLite alone", async () => {
    const db = counterDb();
    const commits = new GroupCommit<string>(db, openWalSync(db));
    const outcomes = await Promise.allSettled([
      commits.submit(() => db.run("INSERT INTO marks (n) VALUES (1)") && "one", "lazy"),
      // Row 5 is written before row 1 collides: the statement is undone whole, 5 included.
      commits.submit(() => {
        db.run("INSERT INTO marks (n) VALUES (5), (1)");
        return "two";
      }, "lazy"),
      commits.submit((scope) => {
        scope.guard();
        db.run("INSERT INTO marks (n) VALUES (7)");
        db.run("INSERT INTO marks (n) VALUES (1)"); // fails after a guarded write: rolled back
        return "three";
      }, "lazy"),
      commits.submit(() => db.run("INSERT INTO marks (n) VALUES (3)") && "four", "lazy"),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      "fulfilled",
      "rejected",
      "rejected",
      "fulfilled",
    ]);
    expect(db.query("SELECT n FROM marks ORDER BY n").all()).toEqual([{ n: 1 }, { n: 3 }]);
  });

  test("SQLite undoing the whole transaction abandons the batch: no check runs outside it", async () => {
    const db = counterDb();
    db.run(
      "CREATE TRIGGER undo BEFORE INSERT ON marks WHEN NEW.n = 99 BEGIN SELECT RAISE(ROLLBACK, 'undone'); END",
    );
    const commits = new GroupCommit<number>(db, openWalSync(db));
    const outcomes = await Promise.allSettled(
      [1, 99, 3].map((n) =>
        commits.submit(() => db.run("INSERT INTO marks (n) VALUES (?)", [n]).changes, "lazy"),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(count(db)).toBe(0);
  });

  test("participants hear which checks kept their writes and whether the batch committed", async () => {
    const db = counterDb();
    const heard: string[] = [];
    const commits = new GroupCommit<number>(db, openWalSync(db), [
      {
        checkEnded: (kept) => heard.push(kept ? "kept" : "undone"),
        batchEnded: (committed) => heard.push(committed ? "committed" : "dropped"),
      },
    ]);
    await Promise.allSettled([
      commits.submit(() => 1),
      commits.submit(() => {
        throw new Error("refused");
      }),
    ]);
    expect(heard).toEqual(["kept", "undone", "committed"]);
    heard.length = 0;
    const pending = commits.submit(() => 1);
    db.close();
    await expect(pending).rejects.toThrow();
    expect(heard.at(-1)).toBe("dropped");
  });
});
