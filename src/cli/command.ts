/**
 * A sigil command as data: its words, description, examples and flags, its subcommands or what it
 * runs. src/cli/run.ts dispatches on these and src/cli/help.ts renders their help, so that every
 * command is checked (unknown flags, stray arguments) and documented (usage, examples) alike.
 */

export interface FlagDef {
  readonly type: "string" | "boolean";
  readonly description: string;
  /** The value's placeholder in help: `--file <path>`. */
  readonly valueHint?: string;
  /** A one-letter alias: `-c` for `--config`. */
  readonly alias?: string;
  /** Shown in the usage line; the command itself refuses a run without it. */
  readonly required?: boolean;
  /** A boolean that also takes `--no-<name>` (configuration flags). */
  readonly negatable?: boolean;
}

export type FlagDefs = Readonly<Record<string, FlagDef>>;

export interface CommandMeta {
  readonly name: string;
  /** One line: what the command does. */
  readonly description: string;
  /**
   * Invocations as an operator types them, starting with `sigil`, each runnable as printed (with
   * the files, variables and signer it names). A test parses every one against the command.
   */
  readonly examples: readonly string[];
  /** Paragraphs printed after the options (where to read more, what the output is). */
  readonly notes?: readonly string[];
  /** Positional arguments the command takes (only `sigil help`): shown in the usage line. */
  readonly positionals?: string;
}

export interface RunContext {
  /** The arguments after the command's words: its flags. */
  readonly rawArgs: string[];
}

export interface Command {
  readonly meta: CommandMeta;
  readonly args?: FlagDefs;
  readonly subCommands?: Readonly<Record<string, Command>>;
  readonly run?: (context: RunContext) => unknown;
}

export function defineCommand(command: Command): Command {
  return command;
}
