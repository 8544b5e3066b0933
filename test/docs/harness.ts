// The doc-test harness: runs the shell blocks of the operator docs as an operator would.
//
// The contract between the docs and this harness:
// - Every fenced block tagged `sh` in README.md, docs/*.md and examples/**/README.md is run. Output
//   and file contents are tagged otherwise (text, yaml, json, ini); an untagged fence, a `bash` or
//   `console` tag, or an indented code block is an error, so no command can hide from the tests.
// - The sh blocks of one file run in order, each as `bash -euo pipefail <block>`, in one fresh
//   temporary directory per file that holds a copy of examples/ (so examples/dev.yaml and
//   examples/keys/… resolve) and the HOME of the run. Files a block writes are there for the next.
// - `sigil` on PATH, and `dist/sigil` in that directory (as after `npm run build`), run the sigil
//   under test: the source with the Bun running the tests, or the binary that SIGIL_TEST_BINARY
//   names (test/support/cli.ts). SIGNER_* variables of the calling shell are removed.
// - curl is assumed installed, as on every Debian-based image: the docs use it because operators
//   do. Where it is missing, blocks that use it fail (bash: curl: command not found); they are
//   never skipped.
// - The docs name the signer as 127.0.0.1:9000 (or localhost:9000) and the metrics listener as
//   …:3000, as an operator with the example configuration sees them. A signer started by the
//   harness listens on free ports instead (SIGNER_SERVER__LISTEN_PORT=0 and
//   SIGNER_METRICS__LISTEN_PORT=0 in its environment), and while it runs those addresses are
//   rewritten in each block to the ports it bound, so doc tests never collide with a signer on 9000.
// - Directives are HTML comments on the lines right before a block (invisible once rendered):
//     <!-- doc-test: serve examples/dev.yaml -->  start `sigil serve -c <file>
//                                                --init-slashing-protection` (as `npm start`
//                                                does) before the block
//     <!-- doc-test: background -->              the block starts the signer: run it in the
//                                                background until it logs "sigil listening"
//     <!-- doc-test: stop -->                     stop the running signer (SIGTERM) first
//     <!-- doc-test: expect-exit 2 -->            the block is documented to fail with this status
//     <!-- doc-test: expect-output TEXT -->       its standard output or error contains TEXT
//                                                (repeatable)
//     <!-- doc-test: skip — reason -->            not run (systemctl, apt, a real AWS account, …);
//                                                the reason is required and printed
//   Only one signer runs per file: serve and background stop the previous one. The last one is
//   stopped with SIGTERM after the file's last block, and must log that it stopped.
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { sigilCommand } from "../support/cli";
import { captureProcessOutput } from "../support/log-capture";
import type { CodeBlock } from "./markdown";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
const BLOCK_TIMEOUT_MS = 60_000;
const LISTEN_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 60_000;

export interface BlockResult {
  code: number;
  stdout: string;
  stderr: string;
  /** The script as run, after port rewriting. */
  script: string;
}

interface RunningSigner {
  process: Subprocess<"ignore", "pipe", "pipe">;
  port: string;
  metricsPort: string | undefined;
  log(): string;
}

/** One doc file's run: its work directory, its environment and the signer it started, if any. */
export class DocRun {
  readonly dir = mkdtempSync(join(tmpdir(), "sigil-doctest-"));
  private readonly env: Record<string, string>;
  private signer: RunningSigner | undefined;
  /** Logs of every signer this run stopped, for the final check. */
  readonly stoppedLogs: string[] = [];

  constructor() {
    cpSync(join(REPO_ROOT, "examples"), join(this.dir, "examples"), { recursive: true });
    const bin = join(this.dir, ".doctest-bin");
    mkdirSync(bin);
    mkdirSync(join(this.dir, "dist"));
    mkdirSync(join(this.dir, "home"));
    const shim = join(bin, "sigil");
    const argv = sigilCommand([]).map(shellQuote).join(" ");
    writeFileSync(shim, `#!/bin/sh\nexec ${argv} "$@"\n`);
    chmodSync(shim, 0o755);
    symlinkSync(shim, join(this.dir, "dist", "sigil"));
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && !name.startsWith("SIGNER_")) env[name] = value;
    }
    this.env = {
      ...env,
      PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      HOME: join(this.dir, "home"),
      NO_COLOR: "1",
    };
  }

  /** Replaces the docs' 127.0.0.1:9000 / :3000 with the running signer's ports. */
  rewrite(script: string): string {
    const signer = this.signer;
    if (!signer) return script;
    return rewritePorts(script, signer.port, signer.metricsPort);
  }

  async runBlock(block: CodeBlock): Promise<BlockResult> {
    const script = this.rewrite(block.text);
    const path = join(this.dir, ".doctest-block.sh");
    writeFileSync(path, `${script}\n`);
    const proc = Bun.spawn(["bash", "-euo", "pipefail", path], {
      cwd: this.dir,
      env: this.env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(proc.pid, "SIGKILL");
    }, BLOCK_TIMEOUT_MS);
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    clearTimeout(timer);
    captureProcessOutput(proc.pid, { stdout, stderr });
    const note = timedOut ? `\n(killed after ${BLOCK_TIMEOUT_MS / 1000} s)` : "";
    return { code, stdout, stderr: stderr + note, script };
  }

  /** Starts a signer in the background from this script and waits until it listens. */
  async startSigner(script: string): Promise<void> {
    await this.stopSigner();
    const path = join(this.dir, ".doctest-signer.sh");
    writeFileSync(path, `${script}\n`);
    const proc = Bun.spawn(["bash", "-euo", "pipefail", path], {
      cwd: this.dir,
      env: { ...this.env, SIGNER_SERVER__LISTEN_PORT: "0", SIGNER_METRICS__LISTEN_PORT: "0" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
    const capture = captureProcessOutput(proc.pid);
    let log = "";
    const pump = async (stream: ReadableStream<Uint8Array>, sink: (text: string) => void) => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) {
        const text = decoder.decode(chunk, { stream: true });
        log += text;
        sink(text);
      }
    };
    void pump(proc.stdout, capture.stdout).catch(() => {});
    void pump(proc.stderr, capture.stderr).catch(() => {});
    const deadline = Date.now() + LISTEN_TIMEOUT_MS;
    for (;;) {
      const listening = /sigil listening .*?url=(\S+)/.exec(log);
      if (listening?.[1]) {
        const metrics = /metrics listening url=(\S+)/.exec(log)?.[1];
        this.signer = {
          process: proc,
          port: new URL(listening[1]).port,
          metricsPort: metrics ? new URL(metrics).port : undefined,
          log: () => log,
        };
        return;
      }
      if (proc.exitCode !== null || Date.now() > deadline) {
        killGroup(proc.pid, "SIGKILL");
        throw new Error(`the signer did not start (script: ${script.trim()}):\n${log}`);
      }
      await Bun.sleep(50);
    }
  }

  get signerRunning(): boolean {
    return this.signer !== undefined;
  }

  /** SIGTERM to the signer's process group, then waits for every process of it to end. */
  async stopSigner(): Promise<void> {
    const signer = this.signer;
    if (!signer) return;
    this.signer = undefined;
    const pgid = signer.process.pid;
    killGroup(pgid, "SIGTERM");
    const deadline = Date.now() + STOP_TIMEOUT_MS;
    while (groupAlive(pgid) && Date.now() < deadline) await Bun.sleep(50);
    if (groupAlive(pgid)) killGroup(pgid, "SIGKILL");
    // Let the pipes drain the last lines ("stopped").
    await signer.process.exited;
    await Bun.sleep(100);
    this.stoppedLogs.push(signer.log());
  }

  async finish(): Promise<void> {
    await this.stopSigner();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** README.md, CHANGELOG.md, docs/*.md and every README.md under examples/. */
export function documentedFiles(): string[] {
  const docs = readdirSync(join(REPO_ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  const examples = readdirSync(join(REPO_ROOT, "examples"), { recursive: true })
    .map(String)
    .filter((path) => path === "README.md" || path.endsWith("/README.md"))
    .sort()
    .map((path) => `examples/${path}`);
  return ["README.md", "CHANGELOG.md", ...docs, ...examples];
}

export function rewritePorts(script: string, port: string, metricsPort?: string): string {
  let out = script.replace(/\b(127\.0\.0\.1|localhost):9000\b/g, `$1:${port}`);
  if (metricsPort) out = out.replace(/\b(127\.0\.0\.1|localhost):3000\b/g, `$1:${metricsPort}`);
  return out;
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'"'"'`)}'`;
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
