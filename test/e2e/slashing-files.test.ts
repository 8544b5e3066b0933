// The sqlite slashing database's files, tampered with under a running signer as an operator (or an
// accident) would: the main file or its -wal deleted, renamed, or replaced by an empty file or by
// another database. After the tamper, no block or attestation may get a 200, /healthcheck must
// say DOWN, the log must say which file; a restart must then either refuse or start with the
// whole history, and in no case may a message conflicting with one signed before be signed.
// Also: one writer per file (a second serve exits naming the first one's pid).
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { type RunningSigil, runSigil, startSigil } from "../support/cli";
import { serveExpectingExit } from "../support/serve-exit";
import { attestationRequest, blockRequest, INTEROP_KEYS, postSign } from "../support/slashing";
import { signerFiles } from "./signer-files";

const { dir, config } = signerFiles();
const KEY = INTEROP_KEYS[0] ?? "";

type Target = "main" | "wal";
type Tamper = "delete" | "rename" | "replace with an empty file" | "replace with another database";

const CASES: [Target, Tamper][] = (["main", "wal"] as const).flatMap((target) =>
  (
    ["delete", "rename", "replace with an empty file", "replace with another database"] as const
  ).map((tamper): [Target, Tamper] => [target, tamper]),
);

/** A sigil database of the same chain with nothing of KEY in it, and a live WAL of another one. */
function otherDatabases(name: string): { database: string; wal: string } {
  const database = join(dir.path, `${name}-other.sqlite`);
  const file = config(`${name}-other`, `antislashing: {backend: sqlite, path: "${database}"}`);
  const created = runSigil(["slashing", "init", "-c", file]);
  expect(created.code, created.stderr).toBe(0);
  // A WAL with frames, as a running writer of another database leaves it: copied while open.
  const live = join(dir.path, `${name}-live.sqlite`);
  const db = new Database(live, { create: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA wal_autocheckpoint = 0");
  db.run("CREATE TABLE t (x BLOB)");
  for (let i = 0; i < 20; i++) db.run("INSERT INTO t VALUES (randomblob(2000))");
  const wal = join(dir.path, `${name}-other.wal`);
  copyFileSync(`${live}-wal`, wal);
  db.close();
  return { database, wal };
}

/** Replaces `path` the way files get replaced: a new file renamed over it (a new inode). */
function replaceWith(path: string, content: string | { copyOf: string }): void {
  const temporary = `${path}.incoming`;
  if (typeof content === "string") writeFileSync(temporary, content);
  else copyFileSync(content.copyOf, temporary);
  renameSync(temporary, path);
}

function tamper(database: string, target: Target, how: Tamper, name: string): void {
  const path = target === "main" ? database : `${database}-wal`;
  expect(existsSync(path)).toBe(true);
  if (how === "delete") rmSync(path);
  else if (how === "rename") renameSync(path, `${path}.moved`);
  else if (how === "replace with an empty file") replaceWith(path, "");
  else {
    const other = otherDatabases(name);
    replaceWith(path, { copyOf: target === "main" ? other.database : other.wal });
  }
}

const first = {
  attestation: attestationRequest(10, 11, 1),
  block: blockRequest(5, 1),
};
/** Conflicting with `first`: a double vote, a double proposal. */
const conflicting = {
  attestation: attestationRequest(10, 11, 2),
  block: blockRequest(5, 2),
};
/** Neither signed before nor conflicting: would be signed by a healthy signer. */
const fresh = {
  attestation: attestationRequest(11, 12, 3),
  block: blockRequest(40, 3),
};

const randaoReveal = {
  type: "RANDAO_REVEAL",
  fork_info: first.attestation.body.fork_info,
  randao_reveal: { epoch: "370012" },
};

async function statusOf(url: string, body: unknown): Promise<number> {
  return (await postSign(url, KEY, body)).status;
}

async function health(url: string): Promise<{ status: number; slashing: string | undefined }> {
  const response = await fetch(`${url}/healthcheck`);
  const report = (await response.json()) as { checks: { id: string; status: string }[] };
  return {
    status: response.status,
    slashing: report.checks.find((c) => c.id === "slashing_protection")?.status,
  };
}

function rescuedCopies(database: string): string[] {
  const prefix = `${basename(database)}.rescued-`;
  return readdirSync(dirname(database))
    .filter((name) => name.startsWith(prefix))
    .map((name) => join(dirname(database), name));
}

afterAll(() => dir.remove());

describe("sqlite: the database files changed under a running signer", () => {
  test.each(CASES)("%s file: %s", async (target, how) => {
    const name = `${target}-${how.replaceAll(" ", "-")}`;
    const database = join(dir.path, `${name}.sqlite`);
    const file = config(name, `antislashing: {backend: sqlite, path: "${database}"}`);
    let log: string[] = [];
    let sigil: RunningSigil | undefined = await startSigil([
      "serve",
      "-c",
      file,
      "--init-slashing-protection",
    ]);
    try {
      expect(await statusOf(sigil.url, first.attestation.body)).toBe(200);
      expect(await statusOf(sigil.url, first.block.body)).toBe(200);
      expect((await health(sigil.url)).status).toBe(200);

      tamper(database, target, how, name);

      // Every block and attestation from now on: 503, whether it conflicts or not.
      for (const body of [
        conflicting.attestation.body,
        fresh.attestation.body,
        conflicting.block.body,
        fresh.block.body,
        first.attestation.body,
      ]) {
        const response = await postSign(sigil.url, KEY, body);
        expect(response.status).toBe(503);
        expect(((await response.json()) as { code: string }).code).toBe("slashing_db_unavailable");
      }
      expect(await health(sigil.url)).toEqual({ status: 503, slashing: "DOWN" });
      // Not slashable, so not recorded: a RANDAO reveal is still signed.
      expect(await statusOf(sigil.url, randaoReveal)).toBe(200);
      const running = sigil;
      sigil = undefined;
      expect(await running.stop()).toBe(0);
      log = running.stderrText().split("\n");
    } finally {
      await sigil?.stop("SIGKILL");
    }
    const reports = log.filter((line) => line.includes("file changed while open"));
    expect(reports).toHaveLength(1);
    expect(reports[0]).toContain(target === "main" ? database : `${database}-wal`);

    const restart = async (extra: string[]) => serveExpectingExit(["-c", file, ...extra]);
    if (target === "main") {
      // Without the files it wrote, sigil refuses to start, even when told to create a database.
      const refusals: string[] = [];
      for (const extra of [[], ["--init-slashing-protection"]]) {
        const result = await restart(extra);
        expect(result.code).toBe(2);
        expect(result.stderr).toContain(database);
        expect(result.stderr).not.toContain("sigil listening");
        refusals.push(result.stderr);
      }
      // What it held is saved beside the path, whole.
      const copies = rescuedCopies(database);
      expect(copies).toHaveLength(1);
      const exported = exportOf(copies[0] ?? "", `${name}-rescued`);
      expect(exported).toContain(first.attestation.message.signingRoot);
      expect(exported).toContain(first.block.message.signingRoot);
      if (how === "replace with another database") {
        // Moving the old -wal away, as the refusal offers, does not make the other database ours.
        rmSync(`${database}-wal`);
        rmSync(`${database}-shm`, { force: true });
        const result = await restart([]);
        expect(result.code).toBe(2);
        expect(result.stderr).toContain("the file was replaced by another database");
      }
      if (how === "delete") {
        // The whole recovery, in the refusal itself: the copy back, and the stale -wal and -shm away.
        expect(refusals[0]).toContain(
          `put the newest back as ${database}, and move ${database}-wal and ${database}-shm away (they belong to the file that went; the copy holds their records), to keep its history.`,
        );
        // The recovery the messages lead to: the saved copy put back, the stale -wal moved away.
        renameSync(copies[0] ?? "", database);
        rmSync(`${database}-wal`);
        rmSync(`${database}-shm`, { force: true });
        const again = await startSigil(["serve", "-c", file]);
        try {
          expect(await statusOf(again.url, conflicting.attestation.body)).toBe(412);
          expect(await statusOf(again.url, conflicting.block.body)).toBe(412);
          expect(await statusOf(again.url, first.attestation.body)).toBe(200);
        } finally {
          expect(await again.stop()).toBe(0);
        }
      }
    } else {
      // The main file is whole (the records reached it): the restart enforces them.
      const again = await startSigil(["serve", "-c", file]);
      try {
        const double = await postSign(again.url, KEY, conflicting.attestation.body);
        expect(double.status).toBe(412);
        expect(await double.text()).toContain("double_vote");
        const block = await postSign(again.url, KEY, conflicting.block.body);
        expect(block.status).toBe(412);
        expect(await block.text()).toContain("double_block_proposal");
        expect(await statusOf(again.url, first.attestation.body)).toBe(200);
      } finally {
        expect(await again.stop()).toBe(0);
      }
    }
  });

  test("-wal replaced by another database's, then a crash: the restart refuses it", async () => {
    const name = "wal-replaced-then-killed";
    const database = join(dir.path, `${name}.sqlite`);
    const file = config(name, `antislashing: {backend: sqlite, path: "${database}"}`);
    const sigil = await startSigil(["serve", "-c", file, "--init-slashing-protection"]);
    try {
      expect(await statusOf(sigil.url, first.attestation.body)).toBe(200);
      tamper(database, "wal", "replace with another database", name);
      expect(await statusOf(sigil.url, conflicting.attestation.body)).toBe(503);
    } finally {
      await sigil.stop("SIGKILL");
    }
    const result = await serveExpectingExit(["-c", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${database}-wal is not the write-ahead log sigil last wrote`);
    // Moved away as the message says, the database starts whole: the checkpoint made at the
    // tamper put the records into the main file.
    rmSync(`${database}-wal`);
    rmSync(`${database}-shm`, { force: true });
    const again = await startSigil(["serve", "-c", file]);
    try {
      expect(await statusOf(again.url, conflicting.attestation.body)).toBe(412);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });

  test("-wal deleted, then a crash: the records reached the main file, the restart enforces them", async () => {
    const name = "wal-deleted-then-killed";
    const database = join(dir.path, `${name}.sqlite`);
    const file = config(name, `antislashing: {backend: sqlite, path: "${database}"}`);
    const sigil = await startSigil(["serve", "-c", file, "--init-slashing-protection"]);
    try {
      expect(await statusOf(sigil.url, first.attestation.body)).toBe(200);
      tamper(database, "wal", "delete", name);
      expect(await statusOf(sigil.url, conflicting.attestation.body)).toBe(503);
    } finally {
      await sigil.stop("SIGKILL");
    }
    const again = await startSigil(["serve", "-c", file]);
    try {
      expect(await statusOf(again.url, conflicting.attestation.body)).toBe(412);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });
});

describe("sqlite: one writer per file", () => {
  test("a second serve on the same file exits 1 with one line naming the first one's pid", async () => {
    const database = join(dir.path, "two-serves.sqlite");
    const file = config("two-serves", `antislashing: {backend: sqlite, path: "${database}"}`);
    const sigil = await startSigil(["serve", "-c", file, "--init-slashing-protection"]);
    try {
      const second = await serveExpectingExit(["-c", file, "--init-slashing-protection"]);
      expect(second.code).toBe(1);
      const lines = second.stderr.trim().split("\n");
      const refusal = lines.filter((line) => line.startsWith("sigil: "));
      expect(refusal).toEqual([
        `sigil: slashing protection database ${database} is in use by process ${sigil.process.pid} (${database}.lock): one process at a time writes a sqlite database; stop it first`,
      ]);
      // An import writes too, and is refused the same way; an export reads beside the signer.
      const imported = runSigil(["slashing", "import", "-c", file, "--file", "/dev/null"]);
      expect(imported.code).toBe(1);
      expect(imported.stderr).toContain(`in use by process ${sigil.process.pid}`);
      // The first one is untouched and still signs.
      expect(await statusOf(sigil.url, first.attestation.body)).toBe(200);
      const exported = runSigil(["slashing", "export", "-c", file, "--file", "-"]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout).toContain(first.attestation.message.signingRoot);
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
    // Once it stopped, the file is free again.
    const next = await startSigil(["serve", "-c", file]);
    expect(await next.stop()).toBe(0);
  });
});

/** `sigil slashing export` of the database at `path`, as text. */
function exportOf(path: string, name: string): string {
  const file = config(name, `antislashing: {backend: sqlite, path: "${path}"}`);
  const result = runSigil(["slashing", "export", "-c", file, "--file", "-"]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}
