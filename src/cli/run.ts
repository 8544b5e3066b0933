/**
 * Dispatches a command line to its command: the command words first, then the command's flags.
 * Every usage error (an unknown command or flag, a flag without its value, a stray argument) is
 * one line on standard error, with a "did you mean" where a known name is close, and exit 2
 * before the command runs. `--help` (or `-h`) anywhere prints the command's help and exits 0.
 */
import { closestName } from "../config/suggest";
import type { Command, FlagDef } from "./command";
import { EXIT_FAILURE, EXIT_USAGE } from "./exit";
import { helpPage } from "./help";

export type Resolution =
  | { readonly ok: true; readonly command: Command; readonly path: string[]; rest: string[] }
  | { readonly ok: false; readonly problem: string };

/** `sigil config check`, as the command is typed. */
export function commandLine(path: readonly string[]): string {
  return ["sigil", ...path].join(" ");
}

/** Follows the command words of `argv` from `root`; the rest are the command's arguments. */
export function resolveCommand(root: Command, argv: readonly string[]): Resolution {
  let command = root;
  const path: string[] = [];
  let index = 0;
  while (command.subCommands) {
    const word = argv[index];
    if (word === undefined || word.startsWith("-")) {
      if (command.run) break;
      if (argv.slice(index).some(isHelpFlag)) break;
      const names = Object.keys(command.subCommands);
      return {
        ok: false,
        problem: `${commandLine(path)} needs a command: ${names.join(", ")}; see ${helpFor(path)}`,
      };
    }
    const next = command.subCommands[word];
    if (!next) {
      const close = closestName(word, Object.keys(command.subCommands));
      const mean = close ? ` (did you mean "${commandLine([...path, close])}"?)` : "";
      return {
        ok: false,
        problem: `unknown command "${word}" for ${commandLine(path)}${mean}; see ${helpFor(path)}`,
      };
    }
    command = next;
    path.push(word);
    index++;
  }
  return { ok: true, command, path, rest: argv.slice(index) };
}

export function isHelpFlag(arg: string): boolean {
  return arg === "--help" || arg === "-h";
}

function helpFor(path: readonly string[]): string {
  return path.length === 0 ? "sigil help" : `sigil help ${path.join(" ")}`;
}

/**
 * The first usage error in a command's arguments, or undefined: a flag the command does not
 * take, a string flag without its value, a value given to a boolean, a positional argument where
 * the command takes none. The values themselves are the command's to check.
 */
export function argumentProblem(
  command: Command,
  path: readonly string[],
  args: readonly string[],
): string | undefined {
  const long = new Map<string, FlagDef>();
  const short = new Map<string, string>();
  for (const [name, def] of Object.entries(command.args ?? {})) {
    long.set(name, def);
    if (def.negatable) long.set(`no-${name}`, { ...def, type: "boolean" });
    if (def.alias) short.set(def.alias, name);
  }
  const where = commandLine(path);
  const see = `see ${helpFor(path)}`;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--") {
      const stray = args[i + 1];
      return stray === undefined || command.meta.positionals
        ? undefined
        : `unexpected argument "${stray}" for ${where}: it takes options only; ${see}`;
    }
    let name: string;
    let inline: boolean;
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      name = arg.slice(2, eq < 0 ? undefined : eq);
      inline = eq >= 0;
      if (!long.has(name)) {
        const close = closestName(name, long.keys());
        const mean = close ? ` (did you mean --${close}?)` : "";
        return `unknown option --${name} for ${where}${mean}; ${see}`;
      }
    } else if (arg.startsWith("-") && arg.length > 1) {
      const letter = arg.slice(1, 2);
      const target = short.get(letter);
      if (target === undefined) return `unknown option -${letter} for ${where}; ${see}`;
      name = target;
      inline = arg.length > 2;
    } else {
      if (command.meta.positionals) continue;
      return `unexpected argument "${arg}" for ${where}: it takes options only (a value with spaces needs quotes); ${see}`;
    }
    const def = long.get(name);
    if (def?.type === "boolean" && inline) return `--${name} takes no value; ${see}`;
    if (def?.type === "string" && !inline) {
      if (i + 1 >= args.length) return `--${name} needs a value; ${see}`;
      i++;
    }
  }
  return undefined;
}

/** Runs the command line `argv` (the arguments after `sigil`) on the command tree `root`. */
export async function runCli(root: Command, argv: readonly string[]): Promise<void> {
  const resolved = resolveCommand(root, argv);
  if (!resolved.ok) usageError(resolved.problem);
  const { command, path, rest } = resolved;
  const dashes = rest.indexOf("--");
  if ((dashes < 0 ? rest : rest.slice(0, dashes)).some(isHelpFlag)) {
    process.stdout.write(helpPage(command, path));
    return;
  }
  const problem = argumentProblem(command, path, rest);
  if (problem) usageError(problem);
  if (!command.run) usageError(`${commandLine(path)} needs a command; see ${helpFor(path)}`);
  try {
    await command.run({ rawArgs: rest });
  } catch (error) {
    process.stderr.write(`sigil: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(EXIT_FAILURE);
  }
}

function usageError(problem: string): never {
  process.stderr.write(`sigil: ${problem}\n`);
  process.exit(EXIT_USAGE);
}
