export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";

export interface LogFilter {
  defaultLevel: LogLevel | "off";
  directives: { target: string; level: LogLevel | "off" }[];
}

const RANK: Record<LogLevel | "off", number> = {
  off: 0,
  error: 1,
  warn: 2,
  info: 3,
  debug: 4,
  trace: 5,
};

const TARGET = /^[a-z0-9_]+(?:(?:\.|::)[a-z0-9_]+)*$/;

function isFilterLevel(value: string): value is LogLevel | "off" {
  return Object.hasOwn(RANK, value);
}

/**
 * Parses EnvFilter-style directives ("info", "warn,antislashing=debug", "http=off").
 * A bare level sets the default (last one wins); the default is "info" when none is given.
 */
export function parseLogFilter(
  spec: string,
): { ok: true; filter: LogFilter } | { ok: false; error: string } {
  let defaultLevel: LogLevel | "off" = "info";
  const byTarget = new Map<string, LogLevel | "off">();
  for (const raw of spec.split(",")) {
    const part = raw.trim();
    if (part === "") continue;
    const fail = (reason: string) => ({
      ok: false as const,
      error: `invalid log directive "${part}": ${reason}`,
    });
    const pieces = part.split("=");
    if (pieces.length > 2) return fail('expected "level" or "target=level"');
    const [first = "", second] = pieces;
    const levelText = (second ?? first).trim().toLowerCase();
    if (!isFilterLevel(levelText)) {
      return fail(`unknown level "${levelText}" (expected off, error, warn, info, debug or trace)`);
    }
    if (second === undefined) {
      defaultLevel = levelText;
      continue;
    }
    const target = first.trim();
    if (!TARGET.test(target)) {
      return fail(`invalid target "${target}" (expected [a-z0-9_] segments joined by "." or "::")`);
    }
    const normalised = target.replaceAll("::", ".");
    // Re-inserting moves a repeated target to the end, so the last occurrence wins visibly.
    byTarget.delete(normalised);
    byTarget.set(normalised, levelText);
  }
  const directives = [...byTarget].map(([target, level]) => ({ target, level }));
  return { ok: true, filter: { defaultLevel, directives } };
}

function effectiveLevel(filter: LogFilter, target: string): LogLevel | "off" {
  // Walk from the full target up through its parents: the most specific directive wins.
  let current = target;
  for (;;) {
    const match = filter.directives.findLast((d) => d.target === current);
    if (match) return match.level;
    const dot = current.lastIndexOf(".");
    if (dot < 0) return filter.defaultLevel;
    current = current.slice(0, dot);
  }
}

export function levelEnabled(filter: LogFilter, target: string, level: LogLevel): boolean {
  return RANK[level] <= RANK[effectiveLevel(filter, target)];
}

/** Receives one complete line, including the trailing "\n". */
export interface LogSink {
  write(line: string): void;
}

export interface LoggerOptions {
  filter: LogFilter;
  format: "text" | "json";
  color: boolean;
  /** Default: process.stderr. */
  sink?: LogSink;
  now?: () => Date;
}

export type LogFields = Record<string, string | number | boolean | bigint | null | undefined>;

type LogMethod = (msg: string, fields?: LogFields) => void;

export interface Logger {
  error: LogMethod;
  warn: LogMethod;
  info: LogMethod;
  debug: LogMethod;
  trace: LogMethod;
  enabled(level: LogLevel): boolean;
  /** Same sink, filter and format; the new target is nested under this one. */
  child(target: string): Logger;
  readonly target: string;
}

const RESERVED = new Set(["ts", "level", "target", "msg"]);

const COLOR: Record<LogLevel, string> = {
  error: "\x1b[31m",
  warn: "\x1b[33m",
  info: "\x1b[32m",
  debug: "\x1b[34m",
  trace: "\x1b[90m",
};
const RESET = "\x1b[0m";

// Also C1 controls and the Unicode line/paragraph separators, which some tools treat as newlines.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const NEEDS_QUOTES = /[\s="\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function escapeControls(text: string): string {
  return text.replace(CONTROL, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}

/** Quotes a key or value when it would otherwise break `key=value` parsing or the line. */
function textToken(text: string): string {
  if (text !== "" && !NEEDS_QUOTES.test(text)) return text;
  // JSON.stringify leaves C1 controls and U+2028/9 alone; the \uXXXX escapes added are valid JSON.
  return escapeControls(JSON.stringify(text));
}

function formatText(
  ts: string,
  level: LogLevel,
  target: string,
  msg: string,
  fields: LogFields | undefined,
  color: boolean,
): string {
  const word = level.toUpperCase();
  const padding = " ".repeat(5 - word.length);
  const shown = color ? `${COLOR[level]}${word}${RESET}` : word;
  let line = `${ts} ${padding}${shown} ${escapeControls(target)}: ${escapeControls(msg)}`;
  for (const [key, value] of Object.entries(fields ?? {})) {
    if (value === undefined) continue;
    line += ` ${textToken(key)}=${textToken(String(value))}`;
  }
  return `${line}\n`;
}

function formatJson(
  ts: string,
  level: LogLevel,
  target: string,
  msg: string,
  fields: LogFields | undefined,
): string {
  const record: Record<string, string | number | boolean | null> = { ts, level, target, msg };
  for (const [key, value] of Object.entries(fields ?? {})) {
    if (value === undefined) continue;
    record[RESERVED.has(key) ? `field_${key}` : key] =
      typeof value === "bigint" ? value.toString() : value;
  }
  return `${JSON.stringify(record)}\n`;
}

const stderrSink: LogSink = {
  write(line) {
    process.stderr.write(line);
  },
};

function makeLogger(options: LoggerOptions, target: string, childPrefix: string): Logger {
  const threshold = RANK[effectiveLevel(options.filter, target)];
  const sink = options.sink ?? stderrSink;
  const now = options.now ?? (() => new Date());
  const enabled = (level: LogLevel) => RANK[level] <= threshold;

  const log =
    (level: LogLevel): LogMethod =>
    (msg, fields) => {
      if (!enabled(level)) return;
      // Logging must never take down the caller: a bad clock, field or sink is swallowed.
      try {
        const ts = now().toISOString();
        sink.write(
          options.format === "json"
            ? formatJson(ts, level, target, msg, fields)
            : formatText(ts, level, target, msg, fields, options.color),
        );
      } catch {}
    };

  return {
    target,
    error: log("error"),
    warn: log("warn"),
    info: log("info"),
    debug: log("debug"),
    trace: log("trace"),
    enabled,
    child(name) {
      const full = (childPrefix === "" ? name : `${childPrefix}.${name}`).replaceAll("::", ".");
      return makeLogger(options, full, full);
    },
  };
}

/**
 * Without an explicit target the root logs as "sigil" but its children are top-level targets
 * (root.child("antislashing") is "antislashing"), so directives name features, not the binary.
 */
export function createLogger(options: LoggerOptions, target?: string): Logger {
  if (target === undefined) return makeLogger(options, "sigil", "");
  const normalised = target.replaceAll("::", ".");
  return makeLogger(options, normalised, normalised);
}

/** An explicit setting wins; otherwise honour NO_COLOR (https://no-color.org), else use isTTY. */
export function resolveColor(
  configured: boolean | undefined,
  isTTY: boolean,
  env: Record<string, string | undefined>,
): boolean {
  if (configured !== undefined) return configured;
  if (env.NO_COLOR) return false;
  return isTTY;
}
