// One writer per sqlite FILE, as an attacker (or two containers) would reach one file under two
// names: a hard link, a bind mount of the file (a mount namespace of its own, as a container has),
// a symlink re-pointed between runs, and the file cut in place under a running signer. In every
// case: never two writers, and of two conflicting messages for one target sent through the two
// names, only one is ever signed.
import { afterAll, describe, expect, test } from "bun:test";
import {
  linkSync,
  mkdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { type RunningSigil, runSigil, startSigil } from "../support/cli";
import { serveExpectingExit } from "../support/serve-exit";
import { attestationRequest, INTEROP_KEYS, postSign } from "../support/slashing";
import { signerFiles } from "./signer-files";

const { dir, config } = signerFiles();
const KEY = INTEROP_KEYS[0] ?? "";
afterAll(() => dir.remove());

/** Two votes for one target with different roots: signing both is a double vote. */
const A = attestationRequest(10, 11, 1).body;
const B = attestationRequest(10, 11, 2).body;
const FRESH = attestationRequest(11, 12, 3).body;

async function statusOf(sigil: RunningSigil, body: unknown): Promise<number> {
  return (await postSign(sigil.url, KEY, body)).status;
}

function sqliteConfig(name: string, path: string): string {
  return config(name, `antislashing: {backend: sqlite, path: "${path}"}`);
}

function init(file: string): void {
  const result = runSigil(["slashing", "init", "-c", file]);
  expect(result.code, result.stderr).toBe(0);
}

/**
 * Two directories, `<name>-a` and `<name>-b`, each with a config naming `slashing.sqlite` in it;
 * the database is made in the first only (the second name is to reach the same file).
 */
function twoNames(name: string) {
  const paths = ["a", "b"].map((side) => {
    mkdirSync(join(dir.path, `${name}-${side}`));
    return join(dir.path, `${name}-${side}`, "slashing.sqlite");
  }) as [string, string];
  const [fileA, fileB] = paths.map((path, i) => sqliteConfig(`${name}-${i}`, path)) as [
    string,
    string,
  ];
  init(fileA);
  return { pathA: paths[0], pathB: paths[1], fileA, fileB };
}

const refusalLine = (stderr: string) =>
  stderr
    .trim()
    .split("\n")
    .filter((line) => line.startsWith("sigil: "));

describe("sqlite: one writer per file, whatever its name", () => {
  test("a hard link made while a signer runs: a second writer through it is refused; the doubly named file is refused at start", async () => {
    const { pathA, pathB, fileA, fileB } = twoNames("hard-link");
    const first = await startSigil(["serve", "-c", fileA]);
    try {
      linkSync(pathA, pathB);
      const second = await serveExpectingExit(["-c", fileB]);
      expect(second.code).toBe(1);
      expect(refusalLine(second.stderr)).toEqual([
        `sigil: slashing protection database ${pathB} is in use by another process that opened the same file under another name (a hard link, a bind mount, another container's path): one process at a time writes a sqlite database; stop it first`,
      ]);
      expect(await statusOf(first, A)).toBe(200);
      expect(await statusOf(first, B)).toBe(412);
    } finally {
      expect(await first.stop()).toBe(0);
    }
    for (const [file, path] of [
      [fileB, pathB],
      [fileA, pathA],
    ] as const) {
      const refused = await serveExpectingExit(["-c", file]);
      expect(refused.code).toBe(2);
      expect(refusalLine(refused.stderr)[0]).toStartWith(
        `sigil: slashing protection database ${path} has 2 hard links: `,
      );
    }
    rmSync(pathB);
    const again = await startSigil(["serve", "-c", fileA]);
    try {
      expect(await statusOf(again, B)).toBe(412);
      expect(await statusOf(again, A)).toBe(200);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });

  const bindMountSkip = bindMountUnavailable();
  test.skipIf(bindMountSkip !== undefined)(
    `the file bind-mounted under another name in another mount namespace (two containers): one writer at a time, one history${bindMountSkip ? ` (SKIPPED: ${bindMountSkip})` : ""}`,
    async () => {
      const names = twoNames("bind");
      const [hostPath, containerPath] = [names.pathA, names.pathB];
      const [hostFile, containerFile] = [names.fileA, names.fileB];
      // The mount point: in the container's namespace it IS the host's file; it has its own
      // directory, so its own .lock, -wal and -shm, as two containers would.
      writeFileSync(containerPath, "");
      const inContainer = bindMount(hostPath, containerPath);

      // Both start at once: exactly one becomes the writer.
      const [host, container] = await Promise.allSettled([
        startSigil(["serve", "-c", hostFile]),
        startSigil(["serve", "-c", containerFile], {}, undefined, inContainer),
      ]);
      const running = [host, container].flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      expect(running).toHaveLength(1);
      const [writer] = running as [RunningSigil];
      const loser =
        host.status === "rejected" ? host.reason : (container as PromiseRejectedResult).reason;
      expect(String(loser)).toContain("is in use by");
      const hostWon = host.status === "fulfilled";
      try {
        // A through the writer's name; B could only go through the other, which does not run.
        expect(await statusOf(writer, A)).toBe(200);
        // While it runs, the other name still finds the file taken.
        const other = hostWon
          ? await serveExpectingExit(["-c", containerFile], {}, 20_000, inContainer)
          : await serveExpectingExit(["-c", hostFile]);
        expect(other.code).toBe(1);
        expect(refusalLine(other.stderr)[0]).toContain(
          "in use by another process that opened the same file under another name",
        );
      } finally {
        expect(await writer.stop()).toBe(0);
      }
      // The other name, once free, has the same history: B is refused there.
      const next = hostWon
        ? await startSigil(["serve", "-c", containerFile], {}, undefined, inContainer)
        : await startSigil(["serve", "-c", hostFile]);
      try {
        expect(await statusOf(next, B)).toBe(412);
        expect(await statusOf(next, A)).toBe(200);
      } finally {
        expect(await next.stop()).toBe(0);
      }
    },
  );

  test("a symlinked path re-pointed to another database while running: 503, and the restart refuses it until pointed back", async () => {
    const pathA = join(dir.path, "link-a.sqlite");
    const pathB = join(dir.path, "link-b.sqlite");
    const link = join(dir.path, "link.sqlite");
    init(sqliteConfig("link-target-a", pathA));
    init(sqliteConfig("link-target-b", pathB));
    symlinkSync(pathA, link);
    const file = sqliteConfig("link", link);
    const sigil = await startSigil(["serve", "-c", file]);
    try {
      expect(await statusOf(sigil, A)).toBe(200);
      // Re-pointed atomically, as a deployment tool swaps a link.
      symlinkSync(pathB, `${link}.new`);
      renameSync(`${link}.new`, link);
      expect(await statusOf(sigil, FRESH)).toBe(503);
    } finally {
      expect(await sigil.stop()).toBe(0);
    }
    const refused = await serveExpectingExit(["-c", file]);
    expect(refused.code).toBe(2);
    const [line] = refusalLine(refused.stderr);
    expect(line).toStartWith(`sigil: ${link} is a symlink to ${pathB}, database `);
    expect(line).toContain(`the link was re-pointed. Point it back.`);
    expect(line).toContain(`delete ${link}.lock and start again`);
    // Pointed back: the history is there, B is refused.
    rmSync(link);
    symlinkSync(pathA, link);
    const back = await startSigil(["serve", "-c", file]);
    try {
      expect(await statusOf(back, B)).toBe(412);
    } finally {
      expect(await back.stop()).toBe(0);
    }
  });

  test("the main file truncated in place (same inode) while running: 503, DOWN, and the restart refuses it", async () => {
    const path = join(dir.path, "truncated.sqlite");
    const file = sqliteConfig("truncated", path);
    init(file);
    const sigil = await startSigil(["serve", "-c", file]);
    let log = "";
    try {
      expect(await statusOf(sigil, A)).toBe(200);
      truncateSync(path, 0);
      expect(await statusOf(sigil, FRESH)).toBe(503);
      expect(await statusOf(sigil, B)).toBe(503);
      expect((await fetch(`${sigil.url}/healthcheck`)).status).toBe(503);
    } finally {
      expect(await sigil.stop()).toBe(0);
      log = sigil.stderrText();
    }
    // Cut to 0 bytes, unless a checkpoint in flight at that moment wrote pages back: either way the
    // file no longer holds the database, and the log says so.
    expect(log).toMatch(
      new RegExp(
        `file changed while open: ${path} (holds \\d+ bytes|no longer starts with).* in place`,
      ),
    );
    const refused = await serveExpectingExit(["-c", file]);
    expect(refused.code).toBe(2);
    expect(refusalLine(refused.stderr)[0]).toMatch(
      new RegExp(`^sigil: ${path} is (empty, )?not a slashing protection database`),
    );
  });
});

/** `unshare` into a mount namespace of its own, bind-mount `source` on `target` there, exec sigil. */
function bindMount(source: string, target: string): string[] {
  return [
    "unshare",
    "--mount",
    "--propagation=private",
    "--",
    "sh",
    "-c",
    'mount --bind "$1" "$2" && shift 2 && exec "$@"',
    "sh",
    source,
    target,
  ];
}

/** Why a mount namespace with a bind mount cannot be made here, or undefined when it can. */
function bindMountUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return `needs root for unshare --mount (uid ${process.getuid?.()})`;
  if (!Bun.which("unshare")) return "unshare (util-linux) is not installed";
  const probe = Bun.spawnSync([...bindMount("/dev/null", "/dev/null"), "true"]);
  if (probe.exitCode !== 0) return `unshare failed: ${probe.stderr.toString().trim()}`;
  return undefined;
}
