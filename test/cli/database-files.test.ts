// A database file sigil cannot open is named with its option and the reason, where SQLite says
// only "unable to open database file": the slashing protection database (antislashing.path)
// and signer_state (signer_state.path); a directory in its place, a missing directory, and
// files or a directory the user sigil runs as cannot write.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CliResult, runSigil, startSigil, TempDir } from "../support/cli";

const dir = new TempDir();
afterAll(() => dir.remove());

const LISTEN = "server: {listen_address: 127.0.0.1, listen_port: 0}\n";

function config(name: string, body: string): string {
  return dir.file(name, `${LISTEN}${body}`);
}

const lastLine = (result: CliResult) => result.stderr.trim().split("\n").at(-1);

describe("the file or its directory", () => {
  test("antislashing.path is a directory: named, and no lock file made beside it", () => {
    const path = join(dir.path, "slashing-dir");
    mkdirSync(path);
    const result = runSigil([
      "slashing",
      "init",
      "-c",
      config("dir.yaml", `antislashing: {backend: sqlite, path: "${path}"}\n`),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `sigil: cannot open the slashing protection database ${path} (antislashing.path): it is a directory, not a database file\n`,
    );
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  test("a missing directory: serve says so beside the missing database (exit 2)", () => {
    const path = join(dir.path, "no-such-dir", "slashing.sqlite");
    const result = runSigil([
      "serve",
      "-c",
      config("missing.yaml", `antislashing: {backend: sqlite, path: "${path}"}\n`),
    ]);
    expect(result.code).toBe(2);
    expect(lastLine(result)).toContain(
      `Its directory ${join(dir.path, "no-such-dir")} does not exist either: is antislashing.path right?`,
    );
  });

  test("signer_state.path is a directory: serve names it and signer_state.path", () => {
    const path = join(dir.path, "state-dir");
    mkdirSync(path);
    const result = runSigil([
      "serve",
      "-c",
      config(
        "state-dir.yaml",
        `antislashing: {backend: noop}\nsigner_state: {backend: sqlite, path: "${path}"}\n`,
      ),
    ]);
    expect(result.code).toBe(1);
    expect(lastLine(result)).toBe(
      `sigil: cannot start: cannot open the signer_state database ${path} (signer_state.path): it is a directory, not a database file`,
    );
  });
});

/**
 * Permissions need a user the files are not open to: the tests' own when they do not run as
 * root, else uid 65534 (nobody) through setpriv.
 */
const asRoot = process.getuid?.() === 0;
const setpriv = Bun.which("setpriv");
const OTHER_UID = asRoot ? 65534 : (process.getuid?.() ?? -1);

const otherUser = () =>
  asRoot ? [setpriv ?? "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];

function runAsOther(args: string[]): CliResult {
  return runSigil(args, { HOME: dir.path }, dir.path, otherUser());
}

describe("permissions", () => {
  test("a symlinked path whose directory sigil cannot write: it starts, and says a re-pointed link is not caught", async () => {
    const data = join(dir.path, "link-data");
    const links = join(dir.path, "link-dir");
    mkdirSync(data);
    mkdirSync(links);
    chmodSync(dir.path, 0o755);
    const database = join(data, "slashing.sqlite");
    const link = join(links, "slashing.sqlite");
    symlinkSync(database, link);
    const file = config("link-dir.yaml", `antislashing: {backend: sqlite, path: "${link}"}\n`);
    chmodSync(file, 0o644);
    const init = runSigil([
      "slashing",
      "init",
      "-c",
      config("link-init.yaml", `antislashing: {backend: sqlite, path: "${database}"}\n`),
    ]);
    expect(init.code, init.stderr).toBe(0);
    if (asRoot)
      for (const own of [data, database, `${database}.lock`]) chownSync(own, OTHER_UID, OTHER_UID);
    else chmodSync(links, 0o555);
    const sigil = await startSigil(
      ["serve", "-c", file],
      { HOME: dir.path },
      dir.path,
      otherUser(),
    );
    try {
      expect(sigil.stderrText()).toContain(
        `cannot write ${link}.lock beside the symlink ${link} (EACCES): a link re-pointed to another database is not caught at restart`,
      );
    } finally {
      expect(await sigil.stop()).toBe(0);
      chmodSync(links, 0o755);
    }
  });

  test("the tests can run sigil as a user the files are not open to", () => {
    // As root, without setpriv (util-linux), the tests below could not show anything.
    expect(asRoot && setpriv === null).toBe(false);
  });

  test("a directory sigil cannot write: the directory, its owner and mode, and why it matters", () => {
    const locked = join(dir.path, "locked");
    mkdirSync(locked);
    chmodSync(dir.path, 0o755);
    chmodSync(locked, 0o755);
    if (!asRoot) chmodSync(locked, 0o555);
    const path = join(locked, "slashing.sqlite");
    const file = config("locked.yaml", `antislashing: {backend: sqlite, path: "${path}"}\n`);
    chmodSync(file, 0o644);
    const result = runAsOther(["slashing", "init", "-c", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^sigil: cannot open the slashing protection database ${path} \\(antislashing\\.path\\): permission denied: uid ${OTHER_UID} cannot write ${locked} \\(owner uid \\d+, mode 0[57]55\\), and SQLite and sigil create slashing\\.sqlite-wal, slashing\\.sqlite-shm and slashing\\.sqlite\\.lock there: make it writable by the user sigil runs as \\(chown\\), or run sigil as its owner\\n$`,
      ),
    );
  });

  test("a signer_state file sigil cannot write: the file, its owner and mode", () => {
    const shared = join(dir.path, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const path = join(shared, "state.sqlite");
    writeFileSync(path, "");
    chmodSync(path, asRoot ? 0o644 : 0o444);
    const file = config(
      "state-perm.yaml",
      `antislashing: {backend: noop}\nsigner_state: {backend: sqlite, path: "${path}"}\n`,
    );
    chmodSync(file, 0o644);
    const result = runAsOther(["serve", "-c", file]);
    expect(result.code).toBe(1);
    expect(lastLine(result)).toMatch(
      new RegExp(
        `^sigil: cannot start: cannot open the signer_state database ${path} \\(signer_state\\.path\\): permission denied: uid ${OTHER_UID} cannot read and write ${path} \\(owner uid \\d+, mode 0[46]44\\)$`,
      ),
    );
  });
});

/**
 * Issue 35: a good database in a directory sigil cannot write was called "not a slashing protection
 * database (attempt to write a readonly database)", exit 2, as if the file were wrong. The two
 * causes now get distinct messages and exit statuses, each naming the path and the fix. As root,
 * directory permissions do not bind: the commands run as uid 65534 through setpriv.
 */
describe("read-only directory or not a database", () => {
  const COMMANDS = [
    ["serve", "sigil: cannot start: "],
    ["slashing export", "sigil: "],
    ["slashing init", "sigil: "],
  ] as const;
  const argsOf = (command: string, file: string) => [
    ...command.split(" "),
    "-c",
    file,
    ...(command === "slashing export" ? ["--file", "-"] : []),
  ];

  test("a good database in a directory sigil cannot write: the directory, who cannot write it, and the fix (exit 1)", () => {
    const readOnly = join(dir.path, "read-only");
    mkdirSync(readOnly);
    chmodSync(dir.path, 0o755);
    const path = join(readOnly, "slashing.sqlite");
    const file = config("read-only.yaml", `antislashing: {backend: sqlite, path: "${path}"}\n`);
    chmodSync(file, 0o644);
    const init = runSigil(["slashing", "init", "-c", file]);
    expect(init.code, init.stderr).toBe(0);
    expect(existsSync(`${path}-shm`)).toBe(false);
    if (asRoot) {
      // The files are the other user's; only the directory is not.
      for (const own of [path, `${path}.lock`]) chownSync(own, OTHER_UID, OTHER_UID);
      chmodSync(readOnly, 0o755);
    } else chmodSync(readOnly, 0o555);
    const denied = `permission denied: uid ${OTHER_UID} cannot write ${readOnly} \\(owner uid \\d+, mode 0[57]55\\)`;
    const fix =
      ": make it writable by the user sigil runs as \\(chown\\), or run sigil as its owner";
    for (const [command, prefix] of COMMANDS) {
      const result = runAsOther(argsOf(command, file));
      expect({ command, code: result.code }).toEqual({ command, code: 1 });
      const reason =
        command === "slashing export"
          ? `${denied}, and SQLite creates slashing\\.sqlite-shm there even to read${fix}`
          : `${denied}, and SQLite and sigil create slashing\\.sqlite-wal, slashing\\.sqlite-shm and slashing\\.sqlite\\.lock there${fix}`;
      expect(lastLine(result)).toMatch(
        new RegExp(
          `^${prefix}cannot open the slashing protection database ${path} \\(antislashing\\.path\\): ${reason}$`,
        ),
      );
      expect(result.stderr).not.toContain("not a slashing protection database");
    }
    chmodSync(readOnly, 0o755);
  });

  test("a file that is not a database: says so, names the path and the fix (exit 2)", () => {
    const path = join(dir.path, "not-a-database.sqlite");
    writeFileSync(path, "this is a text file, not a database\n".repeat(10), { mode: 0o600 });
    const file = config("not-a-db.yaml", `antislashing: {backend: sqlite, path: "${path}"}\n`);
    for (const [command, prefix] of COMMANDS) {
      const result = runSigil(argsOf(command, file));
      expect({ command, code: result.code }).toEqual({ command, code: 2 });
      expect(lastLine(result)).toBe(
        `${prefix === "sigil: cannot start: " ? "sigil: " : prefix}${path} is not a slashing protection database: it is not a SQLite database file (it does not start with SQLite's header). Check antislashing.path; if it is the right path, the file was overwritten: restore the database from its backup`,
      );
    }
  });
});
