// The command tree of a built CLI (`sef`, `sef-testbed`, `sef-fleet`) as its `--help` shows it: every command and
// subcommand with its usage line and options, each option's description unwrapped and the default it shows.
import { runProcess } from "./run-process.js";

export interface HelpOption {
  /** `-c, --config <file>` */
  readonly flags: string;
  /** `--config` */
  readonly long: string;
  /** It takes a value (`<file>`). */
  readonly takesValue: boolean;
  /** The description on one line, `(default: …)` included. */
  readonly description: string;
  /** What `(default: …)` at the end of the description says, if anything. */
  readonly shownDefault: string | undefined;
}

export interface HelpCommand {
  /** The words after the program's name (`["outbox", "status"]`; `[]` for the program itself). */
  readonly path: readonly string[];
  readonly usage: string;
  readonly options: readonly HelpOption[];
  readonly subcommands: readonly string[];
}

/** The lines of a help section (`Options:`, `Commands:`) up to the next blank line. */
function section(help: string, title: string): string[] {
  const start = help.split("\n").indexOf(`${title}:`);
  if (start < 0) return [];
  const lines = help.split("\n").slice(start + 1);
  const end = lines.findIndex((line) => line.trim() === "");
  return end < 0 ? lines : lines.slice(0, end);
}

/** Options from a help text: an entry starts two spaces in, with a dash; deeper lines continue its description. */
export function parseOptions(help: string): HelpOption[] {
  const entries: { flags: string; text: string[] }[] = [];
  for (const line of section(help, "Options")) {
    const start = /^ {2}(-\S.*?)(?: {2,}(.*))?$/.exec(line);
    if (start) entries.push({ flags: start[1]!.trim(), text: start[2] === undefined ? [] : [start[2]] });
    else entries.at(-1)?.text.push(line.trim());
  }
  return entries.map(({ flags, text }) => {
    const description = text.join(" ");
    return {
      flags,
      long: /--[\w-]+/.exec(flags)?.[0] ?? flags,
      takesValue: /<[^>]+>|\[[^\]]+\]/.test(flags),
      description,
      shownDefault: /\(default: (.*)\)$/.exec(description)?.[1],
    };
  });
}

/** `prog args… --help`, parsed. */
async function helpOf(cliJs: string, path: readonly string[]): Promise<HelpCommand> {
  const result = await runProcess(process.execPath, [cliJs, ...path, "--help"], 60_000);
  if (result.code !== 0)
    throw new Error(`${[cliJs, ...path].join(" ")} --help exited ${result.code}: ${result.stderr}`);
  const subcommands = section(result.stdout, "Commands")
    .map((line) => /^ {2}([a-z][\w-]*)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== "help");
  return {
    path,
    usage: /^Usage: (.*)$/m.exec(result.stdout)?.[1] ?? "",
    options: parseOptions(result.stdout),
    subcommands,
  };
}

/** Every command of the CLI, the program first, depth first. */
export async function commandTree(cliJs: string, path: readonly string[] = []): Promise<HelpCommand[]> {
  const command = await helpOf(cliJs, path);
  const below = await Promise.all(command.subcommands.map((sub) => commandTree(cliJs, [...path, sub])));
  return [command, ...below.flat()];
}
