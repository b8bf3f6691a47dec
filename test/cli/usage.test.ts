// The three built commands (`sef`, `sef-testbed`, `sef-fleet`) alike: `--version` prints the package's version, and a
// usage error exits 2 with commander's message on every command and subcommand their help lists — an unknown option,
// an option without its value, a missing argument, an unknown or missing subcommand, a bad value — before anything
// starts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliPath, fleetCliPath, testbedCliPath } from "../helpers/agent-process.js";
import { commandTree, type HelpCommand } from "../helpers/cli-help.js";
import { runProcess, type ProcessResult } from "../helpers/run-process.js";

const repoRoot = join(import.meta.dirname, "..", "..");
const clis = [
  { name: "sef", cliJs: cliPath, packageDir: "src/agent" },
  { name: "sef-testbed", cliJs: testbedCliPath, packageDir: "src/testbed" },
  { name: "sef-fleet", cliJs: fleetCliPath, packageDir: "src/fleet" },
] as const;

const versionOf = (packageDir: string): string =>
  (JSON.parse(readFileSync(join(repoRoot, packageDir, "package.json"), "utf8")) as { version: string }).version;

/** Runs the CLI with `args`, with no SEF_* setting of this environment in the way. */
function run(cliJs: string, args: readonly string[]): Promise<ProcessResult> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("SEF_")));
  return runProcess(process.execPath, [cliJs, ...args], 60_000, { env });
}

/** `fn` over `items`, at most `limit` at a time (each is a Node process loading a whole CLI), results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

/** Each usage error to try on `command`: its arguments and what stderr must say. */
function usageErrors(command: HelpCommand): Array<{ args: string[]; says: RegExp }> {
  const cases = [{ args: [...command.path, "--no-such-option"], says: /unknown option '--no-such-option'/ }];
  const withValue = command.options.find((o) => o.takesValue);
  if (withValue)
    cases.push({
      args: [...command.path, withValue.long],
      says: new RegExp(`option '${withValue.flags.replace(/[[\]]/g, "\\$&")}' argument missing`),
    });
  if (command.subcommands.length > 0) {
    cases.push({ args: [...command.path, "no-such-command"], says: /unknown command 'no-such-command'/ });
    if (command.path.length > 0) cases.push({ args: [...command.path], says: /Usage:/ });
  }
  if (/ <[^>]+>$/.test(command.usage)) cases.push({ args: [...command.path], says: /missing required argument/ });
  return cases;
}

describe("--version", () => {
  for (const { name, cliJs, packageDir } of clis) {
    it(`${name} --version prints ${packageDir}/package.json's version and exits 0`, async () => {
      const result = await run(cliJs, ["--version"]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(`${versionOf(packageDir)}\n`);
    });
  }
});

describe("usage errors exit 2 on every command", () => {
  for (const { name, cliJs } of clis) {
    it(`${name}: every command and subcommand`, async () => {
      const commands = await commandTree(cliJs);
      expect(commands.length).toBeGreaterThanOrEqual(name === "sef" ? 13 : name === "sef-testbed" ? 7 : 1);
      const cases = commands.flatMap(usageErrors);
      const results = await mapLimit(cases, 4, ({ args }) => run(cliJs, args));
      cases.forEach(({ args, says }, i) => {
        const { code, stdout, stderr } = results[i]!;
        expect({ command: `${name} ${args.join(" ")}`, code }).toEqual({
          command: `${name} ${args.join(" ")}`,
          code: 2,
        });
        expect(stderr, `${name} ${args.join(" ")}`).toMatch(says);
        expect(stdout, `${name} ${args.join(" ")}: nothing started`).toBe("");
      });
    }, 600_000);
  }

  const badValues: ReadonlyArray<readonly [string, string, readonly string[], RegExp]> = [
    ["sef", cliPath, ["run", "--poll-interval-ms", "fast"], /pollIntervalMs|--poll-interval-ms/],
    ["sef", cliPath, ["check-config", "--log-level", "loud"], /logLevel|--log-level/],
    ["sef", cliPath, ["tail", "eventhubs", "--max", "0"], /--max/],
    ["sef", cliPath, ["dead-letter", "purge", "--older-than-days", "soon"], /--older-than-days/],
    ["sef-testbed", testbedCliPath, ["simulate", "--port", "70000"], /--port/],
    ["sef-testbed", testbedCliPath, ["simulate", "--start-on", "never"], /--start-on/],
    ["sef-testbed", testbedCliPath, ["simulate", "--speed", "0"], /--speed/],
    ["sef-testbed", testbedCliPath, ["emulate", "eventhubs", "--partitions", "0"], /--partitions/],
    [
      "sef-testbed",
      testbedCliPath,
      ["emulate", "logs-ingestion", "--requests-per-minute", "0"],
      /--requests-per-minute/,
    ],
    ["sef-testbed", testbedCliPath, ["emulate", "dhcp", "--reply", "bogus"], /--reply/],
  ];
  it("a bad value: exit 2, naming the option or setting", async () => {
    const results = await mapLimit(badValues, 4, ([, cliJs, args]) => run(cliJs, args));
    badValues.forEach(([name, , args, says], i) => {
      const { code, stderr } = results[i]!;
      expect({ command: `${name} ${args.join(" ")}`, code }).toEqual({ command: `${name} ${args.join(" ")}`, code: 2 });
      expect(stderr).toMatch(says);
    });
  }, 300_000);
});
