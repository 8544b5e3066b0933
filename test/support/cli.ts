import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { captureProcessOutput } from "./log-capture";

/**
 * Runs sigil as operators do: a separate process. By default from source with the Bun that runs
 * the tests; with SIGIL_TEST_BINARY=dist/sigil the same tests exercise the compiled binary.
 */
const repoRoot = resolve(import.meta.dir, "../..");
const binary = process.env.SIGIL_TEST_BINARY;

export function sigilCommand(args: readonly string[]): string[] {
  return binary
    ? [resolve(repoRoot, binary), ...args]
    : [process.execPath, join(repoRoot, "src/main.ts"), ...args];
}

/** Environment with no SIGNER_ variables from the developer's shell. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("SIGNER_")) env[name] = value;
  }
  // Several signers run at once in tests: the metrics listener takes a free port unless a test says otherwise.
  return {
    ...env,
    NO_COLOR: "1",
    SIGNER_METRICS__LISTEN_ADDRESS: "127.0.0.1",
    SIGNER_METRICS__LISTEN_PORT: "0",
    ...extra,
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `prefix` runs sigil through another command first (setpriv, as another user). */
export function runSigil(
  args: readonly string[],
  env: Record<string, string> = {},
  cwd?: string,
  prefix: readonly string[] = [],
): CliResult {
  const result = Bun.spawnSync([...prefix, ...sigilCommand(args)], {
    env: cleanEnv(env),
    cwd: cwd ?? repoRoot,
  });
  const output = {
    code: result.exitCode ?? -1,
    stdout: result.stdout.toString(),
    stderr: result.stderr.toString(),
  };
  captureProcessOutput(result.pid, output);
  return output;
}

/**
 * A slashing protection database made by `sigil slashing init` in `dir` (once per directory), for
 * commands that check it exists, as serve and `config check` do: pass it as
 * SIGNER_ANTISLASHING__PATH.
 */
export function initializedDatabase(dir: TempDir): string {
  const path = join(dir.path, "initialized.sqlite");
  if (existsSync(path)) return path;
  const result = runSigil(["slashing", "init", "-c", dir.file("init.yaml", "network: mainnet\n")], {
    SIGNER_ANTISLASHING__PATH: path,
  });
  if (result.code !== 0) throw new Error(`sigil slashing init failed: ${result.stderr}`);
  return path;
}

/**
 * runSigil without blocking the test process: needed when the command talks to a server that
 * lives in this process (a KMS-protocol test server, say), which spawnSync would starve.
 */
export async function runSigilAsync(
  args: readonly string[],
  env: Record<string, string> = {},
  /** What the command reads on standard input (an answer to a prompt); none by default. */
  input?: string,
): Promise<CliResult> {
  const proc = Bun.spawn(sigilCommand(args), {
    env: cleanEnv(env),
    cwd: repoRoot,
    stdin: input === undefined ? "ignore" : new Blob([input]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  captureProcessOutput(proc.pid, { stdout, stderr });
  return { code, stdout, stderr };
}

export class TempDir {
  readonly path = mkdtempSync(join(tmpdir(), "sigil-test-"));
  file(name: string, content: string): string {
    const path = join(this.path, name);
    writeFileSync(path, content);
    return path;
  }
  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}

export interface RunningSigil {
  url: string;
  process: Subprocess<"ignore", "pipe", "pipe">;
  stderrText(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/**
 * Starts `sigil serve` and waits for its "listening" log line, which carries the bound URL.
 * `wrapper` comes before the command (e.g. unshare, setpriv); it must exec sigil, so that the
 * process started is sigil's.
 */
export async function startSigil(
  args: readonly string[],
  env: Record<string, string> = {},
  cwd?: string,
  wrapper: readonly string[] = [],
): Promise<RunningSigil> {
  const proc = Bun.spawn([...wrapper, ...sigilCommand(args)], {
    env: cleanEnv(env),
    cwd: cwd ?? repoRoot,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  const reader = proc.stderr.getReader();
  const decoder = new TextDecoder();
  // Appended as it arrives, so a process that is killed, or outlives the test, still leaves its log.
  const capture = captureProcessOutput(proc.pid);
  const onStderr = (value: Uint8Array) => {
    const text = decoder.decode(value, { stream: true });
    stderr += text;
    capture.stderr(text);
  };
  void (async () => {
    const stdoutDecoder = new TextDecoder();
    for await (const chunk of proc.stdout)
      capture.stdout(stdoutDecoder.decode(chunk, { stream: true }));
  })().catch(() => {});
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      // The caller never gets a handle on a signer that did not start: stop it here.
      proc.kill("SIGKILL");
      reject(new Error(`sigil did not start within 15 s:\n${stderr}`));
    }, 15_000);
    const pump = async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          clearTimeout(timer);
          reject(new Error(`sigil exited before listening:\n${stderr}`));
          return;
        }
        onStderr(value);
        const match =
          stderr.match(/sigil listening .*url=(\S+)/) ??
          stderr.match(/"msg":"sigil listening".*?"url":"([^"]+)"/);
        if (match?.[1]) {
          clearTimeout(timer);
          resolveUrl(match[1]);
          void drain();
          return;
        }
      }
    };
    const drain = async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        onStderr(value);
      }
    };
    void pump();
  });
  return {
    url,
    process: proc,
    stderrText: () => stderr,
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      return await proc.exited;
    },
  };
}
