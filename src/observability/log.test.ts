import { describe, expect, test } from "bun:test";
import { captureSink } from "../../test/support/log-capture";
import {
  createLogger,
  type LogFilter,
  type LoggerOptions,
  levelEnabled,
  parseLogFilter,
  resolveColor,
} from "./log";

const TS = "2026-11-22T18:30:00.000Z";

function filterOf(spec: string): LogFilter {
  const parsed = parseLogFilter(spec);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.filter;
}

function setup(overrides: Partial<LoggerOptions> & { spec?: string } = {}) {
  const lines: string[] = [];
  const { spec = "trace", ...rest } = overrides;
  const options: LoggerOptions = {
    filter: filterOf(spec),
    format: "text",
    color: false,
    sink: captureSink(lines),
    now: () => new Date(TS),
    ...rest,
  };
  return { lines, options };
}

describe("parseLogFilter", () => {
  test("a bare level sets the default and the last one wins", () => {
    expect(filterOf("warn")).toEqual({ defaultLevel: "warn", directives: [] });
    expect(filterOf("warn, DEBUG").defaultLevel).toBe("debug");
    expect(filterOf("off").defaultLevel).toBe("off");
  });

  test("the default stays info when only target directives are given", () => {
    expect(filterOf("antislashing=debug")).toEqual({
      defaultLevel: "info",
      directives: [{ target: "antislashing", level: "debug" }],
    });
    expect(filterOf("")).toEqual({ defaultLevel: "info", directives: [] });
  });

  test("whitespace and empty parts are ignored, '::' becomes '.', levels are case-insensitive", () => {
    expect(filterOf(" warn ,, antislashing::postgres = Debug ,http=OFF,")).toEqual({
      defaultLevel: "warn",
      directives: [
        { target: "antislashing.postgres", level: "debug" },
        { target: "http", level: "off" },
      ],
    });
  });

  test("a repeated target keeps the last level", () => {
    expect(filterOf("http=debug,http=warn").directives).toEqual([
      { target: "http", level: "warn" },
    ]);
  });

  test.each([
    ["antislashing=loud", '"antislashing=loud"', "loud"],
    ["=debug", '"=debug"', "target"],
    ["a b=info", '"a b=info"', "target"],
    ["info,verbose", '"verbose"', "verbose"],
    ["http=debug=trace", '"http=debug=trace"', "level"],
    ["Http=debug", '"Http=debug"', "target"],
    ["a..b=debug", '"a..b=debug"', "target"],
  ])("rejects %p, naming the bad part", (spec, part, reason) => {
    const parsed = parseLogFilter(spec);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error).toContain(part);
    expect(parsed.error).toContain(reason);
    expect(parsed.error).not.toContain("\n");
  });
});

describe("levelEnabled", () => {
  const filter = filterOf("warn,antislashing=info,antislashing.postgres=trace,http=off");

  test("the most specific directive wins, then parents, then the default", () => {
    expect(levelEnabled(filter, "antislashing.postgres", "trace")).toBe(true);
    expect(levelEnabled(filter, "antislashing.postgres.pool", "trace")).toBe(true);
    expect(levelEnabled(filter, "antislashing.sqlite", "info")).toBe(true);
    expect(levelEnabled(filter, "antislashing.sqlite", "debug")).toBe(false);
    expect(levelEnabled(filter, "keys", "warn")).toBe(true);
    expect(levelEnabled(filter, "keys", "info")).toBe(false);
  });

  test("a directive matches whole segments only", () => {
    expect(levelEnabled(filter, "antislashingx", "info")).toBe(false);
  });

  test("off disables every level", () => {
    expect(levelEnabled(filter, "http", "error")).toBe(false);
    expect(levelEnabled(filterOf("off"), "sigil", "error")).toBe(false);
  });
});

describe("logger output", () => {
  test("disabled levels produce no output and enabled() agrees", () => {
    const { lines, options } = setup({ spec: "warn" });
    const log = createLogger(options);
    log.info("hidden");
    log.debug("hidden");
    log.warn("shown");
    expect(lines).toHaveLength(1);
    expect(log.enabled("warn")).toBe(true);
    expect(log.enabled("info")).toBe(false);
  });

  test("text format matches the documented layout", () => {
    const { lines, options } = setup();
    const log = createLogger(options, "http");
    log.info("listening", { address: "127.0.0.1:9000", keys: 3, gone: undefined });
    log.error("failed", { big: 12345678901234567890n, nothing: null, ok: false });
    expect(lines).toEqual([
      `${TS}  INFO http: listening address=127.0.0.1:9000 keys=3\n`,
      `${TS} ERROR http: failed big=12345678901234567890 nothing=null ok=false\n`,
    ]);
  });

  test("text values with spaces, '=', quotes or control characters are JSON-quoted", () => {
    const { lines, options } = setup();
    createLogger(options).info("q", {
      a: "two words",
      b: "k=v",
      c: 'say "hi"',
      d: "line\nbreak",
      e: "",
      f: "plain",
    });
    expect(lines[0]).toBe(
      `${TS}  INFO sigil: q a="two words" b="k=v" c="say \\"hi\\"" d="line\\nbreak" e="" f=plain\n`,
    );
  });

  test("one record is one line even with newlines in the message, keys or values", () => {
    const { lines, options } = setup();
    createLogger(options).warn("first\nsecond\r\u2028third", { "bad\nkey": "x\ny", tab: "\t" });
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? "";
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(/[\n\r\u2028]/);
    expect(line).toContain("first\\nsecond\\r\\u2028third");
  });

  test("json format writes one parseable object per line with the fields", () => {
    const { lines, options } = setup({ format: "json" });
    createLogger(options, "http").info("listening\nnow", {
      address: "127.0.0.1:9000",
      keys: 3,
      tls: false,
      big: 2n ** 70n,
      none: null,
      gone: undefined,
    });
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? "";
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toContain("\n");
    expect(JSON.parse(line)).toEqual({
      ts: TS,
      level: "info",
      target: "http",
      msg: "listening\nnow",
      address: "127.0.0.1:9000",
      keys: 3,
      tls: false,
      big: "1180591620717411303424",
      none: null,
    });
  });

  test("json fields cannot overwrite ts, level, target or msg", () => {
    const { lines, options } = setup({ format: "json" });
    createLogger(options).warn("real", { ts: "x", level: "y", target: "z", msg: "fake" });
    expect(JSON.parse(lines[0] ?? "")).toEqual({
      ts: TS,
      level: "warn",
      target: "sigil",
      msg: "real",
      field_ts: "x",
      field_level: "y",
      field_target: "z",
      field_msg: "fake",
    });
  });

  test("color wraps only the level word; without color there are no escape codes", () => {
    const colored = setup({ color: true });
    const log = createLogger(colored.options);
    log.error("e");
    log.warn("w");
    log.info("i");
    log.debug("d");
    log.trace("t");
    expect(colored.lines).toEqual([
      `${TS} \x1b[31mERROR\x1b[0m sigil: e\n`,
      `${TS}  \x1b[33mWARN\x1b[0m sigil: w\n`,
      `${TS}  \x1b[32mINFO\x1b[0m sigil: i\n`,
      `${TS} \x1b[34mDEBUG\x1b[0m sigil: d\n`,
      `${TS} \x1b[90mTRACE\x1b[0m sigil: t\n`,
    ]);

    const plain = setup({ color: false });
    const plainLog = createLogger(plain.options);
    plainLog.error("e", { k: "v" });
    plainLog.trace("t");
    expect(plain.lines.join("")).not.toContain("\x1b");
  });

  test("a failing sink or clock never throws from a log call", () => {
    const { options } = setup();
    const throwingSink = createLogger({
      ...options,
      sink: {
        write: () => {
          throw new Error("disk full");
        },
      },
    });
    expect(() => throwingSink.error("x")).not.toThrow();
    const badClock = createLogger({ ...options, now: () => new Date(Number.NaN) });
    expect(() => badClock.error("x")).not.toThrow();
  });
});

describe("child loggers", () => {
  test("children of the root are top-level targets and nest with '.'", () => {
    const { lines, options } = setup();
    const root = createLogger(options);
    const postgres = root.child("antislashing").child("postgres");
    expect(root.target).toBe("sigil");
    expect(root.child("antislashing").target).toBe("antislashing");
    expect(postgres.target).toBe("antislashing.postgres");
    expect(createLogger(options, "http").child("tls").target).toBe("http.tls");
    expect(root.child("a::b").target).toBe("a.b");
    postgres.info("connected");
    expect(lines[0]).toBe(`${TS}  INFO antislashing.postgres: connected\n`);
  });

  test("children are filtered by their own target", () => {
    const { lines, options } = setup({ spec: "warn,antislashing=debug" });
    const root = createLogger(options);
    const postgres = root.child("antislashing").child("postgres");
    root.child("http").debug("hidden");
    postgres.debug("shown");
    expect(postgres.enabled("debug")).toBe(true);
    expect(postgres.enabled("trace")).toBe(false);
    expect(lines).toEqual([`${TS} DEBUG antislashing.postgres: shown\n`]);
  });
});

describe("resolveColor", () => {
  test("an explicit setting wins", () => {
    expect(resolveColor(true, false, { NO_COLOR: "1" })).toBe(true);
    expect(resolveColor(false, true, {})).toBe(false);
  });

  test("NO_COLOR disables auto-detected color only when non-empty", () => {
    expect(resolveColor(undefined, true, { NO_COLOR: "1" })).toBe(false);
    expect(resolveColor(undefined, true, { NO_COLOR: "" })).toBe(true);
  });

  test("otherwise follows isTTY", () => {
    expect(resolveColor(undefined, true, {})).toBe(true);
    expect(resolveColor(undefined, false, {})).toBe(false);
  });
});
