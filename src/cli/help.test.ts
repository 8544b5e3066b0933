import { describe, expect, test } from "bun:test";
import type { Command } from "./command";
import { helpPage, usageLine } from "./help";
import { rootCommand, withDefaultCommand } from "./index";
import { argumentProblem, resolveCommand } from "./run";

const PLAIN = { color: false, width: 100 };

/** Every command of the tree with its words, the root first. */
function everyCommand(): { command: Command; path: string[] }[] {
  const found: { command: Command; path: string[] }[] = [];
  const walk = (command: Command, path: string[]) => {
    found.push({ command, path });
    for (const [name, sub] of Object.entries(command.subCommands ?? {})) walk(sub, [...path, name]);
  };
  walk(rootCommand, []);
  return found;
}

/**
 * An example as the shell splits it: quotes removed, leading VAR=value assignments and a
 * redirection dropped (`$VAR` stays a word: the shell would put one value there).
 */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (const char of line) {
    if (quote) {
      if (char === quote) quote = undefined;
      else word = (word ?? "") + char;
    } else if (char === "'" || char === '"') {
      quote = char;
      word ??= "";
    } else if (char === " ") {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? "") + char;
  }
  if (word !== undefined) words.push(word);
  while (/^[A-Z_]+=/.test(words[0] ?? "")) words.shift();
  const redirect = words.findIndex((w) => w === "<" || w === ">" || w === "|");
  return redirect < 0 ? words : words.slice(0, redirect);
}

/** The lines of a page's section, without their indentation. */
function section(page: string, heading: string): string[] {
  const lines = page.split("\n");
  const start = lines.indexOf(heading);
  if (start < 0) return [];
  const end = lines.indexOf("", start);
  return lines.slice(start + 1, end).map((line) => line.trim());
}

const commands = everyCommand();

test("the tree has every command an operator uses", () => {
  const paths = commands.map(({ path }) => path.join(" "));
  expect(paths).toEqual(
    expect.arrayContaining([
      "serve",
      "config check",
      "slashing export",
      "migrate web3signer",
      "operator rotate quorum",
      "operator auth token revoke",
      "help",
      "version",
    ]),
  );
  expect(commands.length).toBeGreaterThan(30);
});

describe.each(commands.map(({ command, path }) => [path.join(" ") || "(root)", command, path]))(
  "sigil %s --help",
  (_, command, path) => {
    const cmd = command as Command;
    const words = path as string[];
    const page = helpPage(cmd, words, PLAIN);

    test("its usage line is the whole command, from sigil, and leads back to this page", () => {
      const usage = section(page, "Usage:")[0] ?? "";
      expect(usage).toBe(usageLine(cmd, words));
      expect(usage).toStartWith(["sigil", ...words].join(" "));
      const commandWords = usage.split(" ").slice(1);
      const end = commandWords.findIndex((w) => w.startsWith("-") || /^[<[]/.test(w));
      // As `<those words> --help` runs: a group of commands answers with its own page too.
      const resolved = resolveCommand(rootCommand, [
        ...(end < 0 ? commandWords : commandWords.slice(0, end)),
        "--help",
      ]);
      expect(resolved.ok && resolved.command).toBe(cmd);
    });

    test("it has examples, each a command line that this command (or one below) accepts", () => {
      const examples = section(page, "Examples:");
      expect(examples.length).toBeGreaterThan(0);
      for (const example of examples) {
        const argv = shellWords(example);
        expect(argv[0]).toBe("sigil");
        const resolved = resolveCommand(rootCommand, withDefaultCommand(argv.slice(1)));
        if (!resolved.ok) throw new Error(`${example}: ${resolved.problem}`);
        expect({ example, below: resolved.path.slice(0, words.length) }).toEqual({
          example,
          below: words,
        });
        expect({
          example,
          problem: argumentProblem(resolved.command, resolved.path, resolved.rest),
        }).toEqual({ example, problem: undefined });
        const required = Object.entries(resolved.command.args ?? {}).filter(([, d]) => d.required);
        for (const [name] of required)
          expect({ example, has: argv.includes(`--${name}`) }).toEqual({ example, has: true });
      }
    });

    test("it lists its own flags, and only those", () => {
      const listed = section(page, "Options:")
        .map((line) => /--(?:\[no-\])?([a-z0-9-]+)/.exec(line)?.[1])
        .filter((name): name is string => name !== undefined);
      expect(listed).toEqual([...Object.keys(cmd.args ?? {}), "help"]);
    });

    test("it is plain text", () => {
      expect(page).not.toContain("\x1b");
    });
  },
);

test("commands that only open the slashing database take no server, metrics or key flags", () => {
  for (const path of [
    ["slashing", "init"],
    ["slashing", "import"],
    ["slashing", "export"],
    ["migrate", "web3signer"],
  ]) {
    const resolved = resolveCommand(rootCommand, path);
    const flags = resolved.ok ? Object.keys(resolved.command.args ?? {}) : [];
    expect(flags).toContain("antislashing-sqlite-path");
    expect(flags.filter((f) => /^(server|metrics|cors|bls|filesystem)-/.test(f))).toEqual([]);
  }
});

describe("command line checks", () => {
  const problem = (...argv: string[]) => {
    const resolved = resolveCommand(rootCommand, argv);
    return resolved.ok
      ? argumentProblem(resolved.command, resolved.path, resolved.rest)
      : resolved.problem;
  };

  test("an unknown command names its parent and the closest command", () => {
    expect(problem("config", "chek")).toBe(
      'unknown command "chek" for sigil config (did you mean "sigil config check"?); see sigil help config',
    );
    expect(problem("frobnicate")).toBe('unknown command "frobnicate" for sigil; see sigil help');
    expect(problem("operator", "auth")).toBe(
      "sigil operator auth needs a command: policy, token; see sigil help operator auth",
    );
  });

  test("an unknown flag names the command and the closest flag", () => {
    expect(problem("config", "check", "--server-listen-prot", "1")).toBe(
      "unknown option --server-listen-prot for sigil config check (did you mean --server-listen-port?); see sigil help config check",
    );
    expect(problem("operator", "auth", "token", "create", "--polices", "a")).toContain(
      "(did you mean --policies?)",
    );
    expect(problem("slashing", "export", "-x")).toBe(
      "unknown option -x for sigil slashing export; see sigil help slashing export",
    );
    // The slashing commands take no server flag, though serve does.
    expect(problem("slashing", "export", "--server-listen-port", "1")).toStartWith(
      "unknown option --server-listen-port for sigil slashing export",
    );
  });

  test("values: a string flag needs one, a boolean takes none; --no- only for config booleans", () => {
    expect(problem("slashing", "export", "--file")).toBe(
      "--file needs a value; see sigil help slashing export",
    );
    expect(problem("migrate", "web3signer", "--dry-run=yes")).toBe(
      "--dry-run takes no value; see sigil help migrate web3signer",
    );
    expect(problem("serve", "--no-antislashing-postgres-force-ipv4")).toBeUndefined();
    expect(problem("operator", "status", "--no-json")).toStartWith("unknown option --no-json");
  });

  test("values that look like flags or are inline are taken as values", () => {
    expect(problem("slashing", "export", "--file", "-", "-cconfig.yaml")).toBeUndefined();
    expect(problem("slashing", "export", "--file=-", "--config=x.yaml")).toBeUndefined();
  });

  test("a stray argument is refused, except by help", () => {
    expect(problem("config", "check", "config.yaml")).toBe(
      'unexpected argument "config.yaml" for sigil config check: it takes options only (a value with spaces needs quotes); see sigil help config check',
    );
    expect(problem("version", "--", "x")).toContain('unexpected argument "x"');
    expect(problem("help", "slashing", "import")).toBeUndefined();
  });
});
