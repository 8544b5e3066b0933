import { afterAll, describe, expect, test } from "bun:test";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acquireWriterLock, fileIdentity, SqliteLockedError } from "./lock";

const dir = mkdtempSync(join(tmpdir(), "sigil-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("writer lock", () => {
  test("one holder at a time; the second is told the holder's pid; release frees it", () => {
    const database = join(dir, "a.sqlite");
    const first = acquireWriterLock(database);
    expect(statSync(`${database}.lock`).mode & 0o777).toBe(0o600);
    let refusal: unknown;
    try {
      acquireWriterLock(database);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(SqliteLockedError);
    expect((refusal as SqliteLockedError).holderPid).toBe(process.pid);
    first.release();
    acquireWriterLock(database).release();
  });

  test("the record survives the holder and comes back as `previous`", () => {
    const database = join(dir, "b.sqlite");
    const first = acquireWriterLock(database);
    expect(first.previous).toBeNull();
    first.write({ database_id: "00ff", main: "1:2", wal: "1:3" });
    first.release();
    const second = acquireWriterLock(database);
    expect(second.previous).toEqual({
      pid: process.pid,
      database_id: "00ff",
      main: "1:2",
      wal: "1:3",
    });
    // Until the database is open, the new holder keeps the old record (a crash loses nothing).
    expect(JSON.parse(readFileSync(`${database}.lock`, "utf8"))).toMatchObject({
      database_id: "00ff",
      main: "1:2",
    });
    second.release();
  });

  test("an unreadable record is no record", () => {
    const database = join(dir, "c.sqlite");
    writeFileSync(`${database}.lock`, "{not json");
    const lock = acquireWriterLock(database);
    expect(lock.previous).toBeNull();
    lock.release();
  });

  test("the lock file deleted or replaced while held is a problem", () => {
    const database = join(dir, "d.sqlite");
    const lock = acquireWriterLock(database);
    expect(lock.problem()).toBeNull();
    renameSync(`${database}.lock`, `${database}.lock.old`);
    expect(lock.problem()).toContain("was deleted");
    writeFileSync(`${database}.lock`, "");
    expect(lock.problem()).toContain("was replaced");
    lock.release();
  });

  test("fileIdentity: dev:ino of a path or a descriptor; undefined when missing", () => {
    const path = join(dir, "e");
    writeFileSync(path, "x");
    expect(fileIdentity(path)).toMatch(/^\d+:\d+$/);
    expect(fileIdentity(join(dir, "missing"))).toBeUndefined();
    // The plain stat it uses below 2^53 gives a BigInt stat's digits exactly.
    const exact = statSync(path, { bigint: true });
    expect(fileIdentity(path)).toBe(`${exact.dev}:${exact.ino}`);
    const fd = openSync(path, "r");
    try {
      expect(fileIdentity(fd)).toBe(`${exact.dev}:${exact.ino}`);
    } finally {
      closeSync(fd);
    }
    renameSync(path, join(dir, "e2"));
    writeFileSync(path, "y");
    expect(fileIdentity(path)).not.toBe(`${exact.dev}:${exact.ino}`);
  });
});
