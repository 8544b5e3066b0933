// Every log line the tests produce, kept for the whole-run secret scan (scripts/scan-test-logs.ts):
// in-process loggers write through captureSink, sigil processes spawned by the tests through
// captureProcessOutput, and secrets minted at run time are listed with registerTestSecret.
// `npm test` clears the directory before `bun test` and scans it afterwards.
import { appendFileSync, closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  createLogger,
  type Logger,
  type LogSink,
  parseLogFilter,
} from "../../src/observability/log";

/** The run directory: `.test-logs/` at the repository root, or $SIGIL_TEST_LOG_DIR. */
export const TEST_LOG_DIR = resolve(
  process.env.SIGIL_TEST_LOG_DIR ?? join(import.meta.dir, "../..", ".test-logs"),
);
/** One JSON object per line: {label, value} or {label, hex}. Read by the scan, never scanned. */
export const SECRETS_FILE = join(TEST_LOG_DIR, "secrets.txt");

const runId = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
let sequence = 0;
let inProcessFd: number | undefined;

function ensureDir(): void {
  mkdirSync(TEST_LOG_DIR, { recursive: true });
}

function appendInProcess(line: string): void {
  try {
    if (inProcessFd === undefined) {
      ensureDir();
      inProcessFd = openSync(join(TEST_LOG_DIR, `inprocess-${runId}.log`), "a");
      const fd = inProcessFd;
      process.once("exit", () => closeSync(fd));
    }
    writeSync(inProcessFd, line.endsWith("\n") ? line : `${line}\n`);
  } catch {
    // Capture must never break a test; a capture that stops working fails the scan instead.
  }
}

/**
 * A log sink for tests: pushes every line into `lines` (what the test asserts on, unchanged) and
 * appends it to this test process's file in the run directory.
 */
export function captureSink(lines?: string[]): LogSink {
  return {
    write(line: string) {
      lines?.push(line);
      appendInProcess(line);
    },
  };
}

/** A JSON logger at `level` (an EnvFilter directive) writing through captureSink into `lines`. */
export function testLogger(level: string, lines?: string[]): Logger {
  const filter = parseLogFilter(level);
  if (!filter.ok) throw new Error(filter.error);
  return createLogger({
    filter: filter.filter,
    format: "json",
    color: false,
    sink: captureSink(lines),
  });
}

/**
 * The output of one sigil process a test spawned: standard error (its log) and standard output
 * (the command's result), each in its own file, `sigil-<test pid>-<n>-<child pid>.{stderr,stdout}.log`.
 * Returns an appender for output that arrives in pieces (a running `sigil serve`).
 */
export function captureProcessOutput(
  childPid: number,
  output?: { stdout?: string; stderr?: string },
): { stdout(text: string): void; stderr(text: string): void } {
  sequence += 1;
  const base = join(TEST_LOG_DIR, `sigil-${runId}-${sequence}-${childPid}`);
  const append = (stream: "stdout" | "stderr") => (text: string) => {
    if (text === "") return;
    try {
      ensureDir();
      appendFileSync(`${base}.${stream}.log`, text);
    } catch {
      // As above: never break the test.
    }
  };
  const appenders = { stdout: append("stdout"), stderr: append("stderr") };
  if (output?.stdout) appenders.stdout(output.stdout);
  if (output?.stderr) appenders.stderr(output.stderr);
  return appenders;
}

/**
 * A secret a test mints at run time (a token, a credential, an age identity, an AWS secret key,
 * key material as bytes): the scan checks that it appears in no log, bytes in hex and base64.
 * Returns the value, so it can wrap an expression.
 */
export function registerTestSecret<T extends string | Uint8Array | undefined>(
  value: T,
  label = "run-time test secret",
): T {
  if (value === undefined || value.length === 0) return value;
  const entry =
    typeof value === "string"
      ? { label, value }
      : { label, hex: Buffer.from(value).toString("hex") };
  try {
    ensureDir();
    appendFileSync(SECRETS_FILE, `${JSON.stringify(entry)}\n`);
  } catch {
    // As above.
  }
  return value;
}
