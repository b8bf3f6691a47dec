// The docs are part of the contract: the README shows the two commands, and every command the docs show exists; the
// record contract documents every column (with its type) in contract order; the docs name every setting, variable,
// sink and scenario where a reader looks for them. (The generated reference itself: config-reference.test.ts.)
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { recordColumns } from "../../src/contract/record.js";
import { agentConfigSchema } from "../../src/agent/config/schema.js";
import { environmentVariables } from "../../src/agent/config/load.js";
import { sinkFactories } from "../../src/agent/sinks/registry.js";
import { listScenarioNames } from "../../src/testbed/simulator/scenarios.js";
import { markdownFiles, proseLines } from "../../infra/docs/markdown.js";
import { repoRoot } from "../../infra/docs/config-reference.js";
import { cliPath, testbedCliPath } from "../helpers/agent-process.js";
import { runProcess } from "../helpers/run-process.js";

const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");
const readme = read("README.md");
const docs = markdownFiles(repoRoot).filter((file) => existsSync(join(repoRoot, file)));
const allDocs = docs.map(read).join("\n");
/** A Markdown text with its wrapped list items and paragraphs joined into one line each. */
const unwrapped = (markdown: string): string => markdown.replace(/\n(?!\s*\n)(?!\s*[-*] )(?!\s*\d+\. )\s+/g, " ");

describe("README", () => {
  it("shows the two commands, within 250 lines", () => {
    expect(readme).toContain("npm ci && npm start");
    expect(readme).toContain("npm test");
    expect(readme.trimEnd().split("\n").length).toBeLessThanOrEqual(250);
  });

  it("shows only npm scripts and files that exist", () => {
    const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
    const named = [...allDocs.matchAll(/\bnpm (?:run ([\w:-]+)|(start|test)\b)/g)].map((m) => m[1] ?? m[2]!);
    expect(named).toEqual(expect.arrayContaining(["start", "test", "package", "bench"]));
    for (const script of new Set(named)) expect(scripts, `npm script ${script}`).toHaveProperty(script);
    const paths = [...readme.matchAll(/(?:^|\s)((?:infra|bicep|src|test)\/[\w./-]+)/gm)].map((m) =>
      m[1]!.replace(/[.,:]$/, ""),
    );
    expect(paths.length).toBeGreaterThan(5);
    for (const path of new Set(paths)) expect(existsSync(join(repoRoot, path)), path).toBe(true);
  });
});

describe("commands the docs show", () => {
  /** Code spans and the lines of fenced code blocks: where the docs show commands. */
  const codeFragments = docs.flatMap((file) => {
    const text = read(file);
    const prose = new Set(proseLines(text).map((l) => l.line));
    const fenced = text.split("\n").filter((_line, index) => !prose.has(index + 1));
    const spans = [
      ...proseLines(text)
        .map((l) => l.text)
        .join("\n")
        .matchAll(/`([^`]+)`/g),
    ].map((m) => m[1]!);
    return [...fenced, ...spans];
  });
  /** `prog word [word]` at the start of a code fragment: the (sub)commands the docs show. */
  const shown = (prog: string): Map<string, Set<string>> => {
    const commands = new Map<string, Set<string>>();
    for (const fragment of codeFragments) {
      const m = new RegExp(`^\\s*(?:sudo\\s+)?${prog} ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?`).exec(fragment);
      if (!m) continue;
      const subs = commands.get(m[1]!) ?? new Set<string>();
      if (m[2] !== undefined) subs.add(m[2]);
      commands.set(m[1]!, subs);
    }
    return commands;
  };
  const commandsIn = (help: string): string[] =>
    [...(help.split("\nCommands:\n")[1] ?? "").matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!);

  for (const [prog, path] of [
    ["sef", cliPath],
    ["sef-testbed", testbedCliPath],
  ] as const) {
    it(`${prog}: every command and subcommand exists`, async () => {
      const commands = shown(prog);
      expect(commands.size).toBeGreaterThan(prog === "sef" ? 5 : 1);
      const help = async (...args: string[]): Promise<string[]> =>
        commandsIn((await runProcess(process.execPath, [path, ...args, "--help"], 30_000)).stdout);
      const top = await help();
      const nested = await Promise.all([...commands.keys()].map((command) => help(command)));
      [...commands].forEach(([command, subs], index) => {
        expect(top, `${prog} ${command}`).toContain(command);
        // A leaf command has no subcommands: the next word shown is its argument.
        if (nested[index]!.length > 0)
          for (const sub of subs) expect(nested[index], `${prog} ${command} ${sub}`).toContain(sub);
      });
    }, 60_000);
  }
});

describe("the record contract (src/contract/README.md)", () => {
  it("documents every record column with its type, in contract order", () => {
    const contract = unwrapped(read("src/contract/README.md"));
    let last = -1;
    for (const column of recordColumns) {
      const item = `- \`${column.name}\` (${column.type}): ${column.description}`;
      const at = contract.indexOf(item);
      expect(at, `list item for ${column.name}`).toBeGreaterThan(-1);
      expect(at).toBeGreaterThan(last);
      last = at;
    }
  });
});

describe("where settings, sinks and scenarios are documented", () => {
  it("names every setting and environment variable in the configuration reference", () => {
    const config = read("src/agent/config/README.md");
    for (const key of Object.keys(agentConfigSchema.shape)) expect(config, key).toContain(`\`${key}`);
    for (const name of Object.keys(environmentVariables)) expect(config, name).toContain(name);
  });

  it("names every sink in the sinks overview and every scenario in the testbed's docs", () => {
    const sinks = read("src/agent/sinks/README.md");
    for (const factory of sinkFactories) expect(sinks, factory.section).toContain(`\`${factory.section}`);
    const testbed = read("src/testbed/README.md");
    for (const scenario of listScenarioNames()) expect(testbed, scenario).toContain(`\`${scenario}\``);
  });
});
