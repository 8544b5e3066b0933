import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { GroupCommit, MAX_GROUP_COMMIT } from "./group-commit";

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
    const commits = new GroupCommit<number>(db);
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
    const commits = new GroupCommit<string>(db);
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
    const commits = new GroupCommit<number>(db);
    // Another connection's open write transaction would block it; simplest: a closed database.
    const pending = commits.submit(() => 1);
    db.close();
    await expect(pending).rejects.toThrow();
  });

  test("more checks than one batch holds are split over several commits, none lost", async () => {
    const db = counterDb();
    const commits = new GroupCommit<number>(db);
    const total = MAX_GROUP_COMMIT * 2 + 7;
    await Promise.all(
      Array.from({ length: total }, (_, i) =>
        commits.submit(() => db.run("INSERT INTO marks (n) VALUES (?)", [i]).changes),
      ),
    );
    expect(count(db)).toBe(total);
  });

  test("flush() runs pending checks at once (used on close)", async () => {
    const db = counterDb();
    const commits = new GroupCommit<number>(db);
    const pending = commits.submit(() => db.run("INSERT INTO marks (n) VALUES (7)").changes);
    commits.flush();
    expect(count(db)).toBe(1);
    expect(await pending).toBe(1);
  });
});
