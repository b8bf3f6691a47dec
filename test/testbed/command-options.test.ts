// The testbed commands' option parsers: bounded integers, ports, names from a list; and the built `sef-testbed`
// refusing a bad value with exit code 2 (a usage error, as everywhere) and the option's name before it starts anything.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { InvalidArgumentError } from "commander";
import { beforeAll, describe, expect, it } from "vitest";
import { integerFrom, oneOf, parsePort } from "../../src/testbed/commands/options.js";
import { runProcess } from "../helpers/run-process.js";

const cliJs = join(import.meta.dirname, "..", "..", "src", "testbed", "dist", "cli.js");

beforeAll(() => {
  if (!existsSync(cliJs)) throw new Error("the build did not produce src/testbed/dist/cli.js: run npm run build first");
});

describe("option parsers", () => {
  it("takes whole numbers in range and refuses the rest", () => {
    const oneToTen = integerFrom(1, 10);
    expect(oneToTen("1")).toBe(1);
    expect(oneToTen("10")).toBe(10);
    for (const bad of ["0", "11", "2.5", "abc", "", "-1"]) expect(() => oneToTen(bad)).toThrow(InvalidArgumentError);
    expect(() => integerFrom(0)("-1")).toThrow(/0 or more/);
    expect(integerFrom(0)("123456789")).toBe(123_456_789);
  });

  it("takes ports 0..65535 only", () => {
    expect(parsePort("0")).toBe(0);
    expect(parsePort("65535")).toBe(65_535);
    expect(() => parsePort("65536")).toThrow(/from 0 to 65535/);
  });

  it("takes only the listed names", () => {
    const mode = oneOf(["a", "b"] as const);
    expect(mode("b")).toBe("b");
    expect(() => mode("c")).toThrow(/one of a, b/);
  });
});

describe("sef-testbed refuses a bad option value", () => {
  const cases: ReadonlyArray<readonly [string[], string]> = [
    [["emulate", "eventhubs", "--port", "70000"], "--port"],
    [["emulate", "logs-ingestion", "--requests-per-minute", "0"], "--requests-per-minute"],
    [["simulate", "--approval-delay-ms", "-1"], "--approval-delay-ms"],
  ];
  for (const [args, option] of cases) {
    it(`${args.join(" ")}: exit 2, names ${option}`, async () => {
      const result = await runProcess(process.execPath, [cliJs, ...args], 20_000);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(option);
    });
  }
});
