// `sigil serve` when the test expects it to refuse to start: its exit status and output. A signer
// that starts instead is killed after `timeoutMs`, so a test never leaves one running.
import { cleanEnv, sigilCommand } from "./cli";
import { captureProcessOutput } from "./log-capture";

export interface ServeExit {
  /** The exit status; a signer killed for starting reports the signal's status, never 0, 1 or 2. */
  readonly code: number;
  readonly stderr: string;
}

export async function serveExpectingExit(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 20_000,
  /** Comes before the command (unshare, setpriv); it must exec sigil. */
  wrapper: readonly string[] = [],
): Promise<ServeExit> {
  const proc = Bun.spawn([...wrapper, ...sigilCommand(["serve", ...args])], {
    env: cleanEnv(env),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    captureProcessOutput(proc.pid, { stdout, stderr });
    return { code, stderr };
  } finally {
    clearTimeout(timer);
    proc.kill("SIGKILL");
  }
}
