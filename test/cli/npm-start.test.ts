// `npm start` stopped by its pid: the signer goes with it. npm runs a script as `sh -c <script>`
// and passes SIGTERM/SIGINT on to that shell only; the script `exec`s bun, so the shell's pid is
// the signer's, and no signer is left behind holding :9000, :3000 and the database lock.
import { afterAll, describe, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, cpSync, readFileSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { cleanEnv, TempDir } from "../support/cli";
import { captureProcessOutput } from "../support/log-capture";
import { freePort } from "../support/postgres";

const REPO_ROOT = resolve(import.meta.dir, "../..");
const dir = new TempDir();
const started: ChildProcess[] = [];
afterAll(() => {
  // Whatever a failed run left behind: each was started as its own process group.
  for (const child of started) {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {}
  }
  dir.remove();
});

/** A checkout with its own examples/ and ./data: src and node_modules are the repository's. */
function clone(name: string): string {
  const path = join(dir.path, name);
  cpSync(join(REPO_ROOT, "examples"), join(path, "examples"), { recursive: true });
  copyFileSync(join(REPO_ROOT, "package.json"), join(path, "package.json"));
  symlinkSync(join(REPO_ROOT, "src"), join(path, "src"));
  symlinkSync(join(REPO_ROOT, "node_modules"), join(path, "node_modules"));
  return path;
}

async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  return await new Promise<boolean>((resolveFree) => {
    server.once("error", () => resolveFree(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolveFree(true)));
  });
}

/** Starts `command` in its own process group and resolves once the signer logs that it listens. */
async function startWrapped(
  command: string[],
  cwd: string,
  ports: { server: number; metrics: number },
): Promise<{ child: ChildProcess; log: () => string; exited: Promise<number | null> }> {
  const child = spawn(command[0] ?? "", command.slice(1), {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: cleanEnv({
      // As npm runs a script: the package's node_modules/.bin first (bun is there).
      PATH: `${join(cwd, "node_modules/.bin")}:${process.env.PATH ?? ""}`,
      SIGNER_SERVER__LISTEN_PORT: String(ports.server),
      SIGNER_METRICS__LISTEN_PORT: String(ports.metrics),
    }),
  });
  started.push(child);
  const capture = captureProcessOutput(child.pid ?? 0);
  let log = "";
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  await new Promise<void>((listening, failed) => {
    const timer = setTimeout(
      () => failed(new Error(`no "sigil listening" within 60 s:\n${log}`)),
      60_000,
    );
    const read = (chunk: Buffer) => {
      log += chunk.toString();
      capture.stderr(chunk.toString());
      if (log.includes("sigil listening")) {
        clearTimeout(timer);
        listening();
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    void exited.then(() => {
      clearTimeout(timer);
      failed(new Error(`exited before listening:\n${log}`));
    });
  });
  return { child, log: () => log, exited };
}

/** Polls until both ports can be bound again; false after 30 s. */
async function portsFreed(ports: number[]): Promise<boolean> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    if ((await Promise.all(ports.map(portIsFree))).every(Boolean)) return true;
    await Bun.sleep(200);
  }
  return false;
}

const scripts = (
  JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts;

describe("npm start and signals", () => {
  test("its command execs the signer, so the shell npm starts becomes it", () => {
    expect(scripts.start).toStartWith("exec bun src/main.ts serve ");
  });

  for (const [name, command] of [
    ["the sh -c wrapper npm runs", ["sh", "-c", scripts.start ?? "false"]],
    ["npm start itself", ["npm", "start"]],
  ] as const) {
    test(`kill -TERM on ${name}: the signer stops and frees its ports`, async () => {
      const cwd = clone(name.replace(/\W+/g, "-"));
      const ports = { server: await freePort(), metrics: await freePort() };
      const { child, log, exited } = await startWrapped([...command], cwd, ports);
      expect(await portIsFree(ports.server)).toBe(false);
      child.kill("SIGTERM");
      await exited;
      expect(await portsFreed([ports.server, ports.metrics])).toBe(true);
      expect(log()).toContain("stopped");
    }, 120_000);
  }
});
