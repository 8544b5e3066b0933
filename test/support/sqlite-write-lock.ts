/**
 * SQLite's write lock on a database file, taken by a connection of the test's own: while it is
 * held no other connection (the signer's slashing thread included) can commit anything, so a
 * test that stops that thread meanwhile knows for certain that nothing it was asked got recorded,
 * however far it got. Reads through `db` see every commit made before the lock was taken.
 */
import { Database } from "bun:sqlite";

export interface HeldWriteLock {
  readonly db: Database;
  release(): void;
}

export function holdWriteLock(path: string): HeldWriteLock {
  const db = new Database(path);
  try {
    // The signer may be mid-commit or checkpointing: wait for it rather than fail.
    db.run("PRAGMA busy_timeout = 10000");
    db.run("BEGIN IMMEDIATE");
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    db,
    release() {
      db.run("ROLLBACK");
      db.close();
    },
  };
}
