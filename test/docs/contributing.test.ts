// What CONTRIBUTING.md states stays true: its apt-get line installs exactly the set-up step's Debian packages, every
// test it names exists, every step has a measured time. And the delivery promise reads the same wherever it is stated:
// at least once, deduplicated on RecordId — never "no repeats".
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../infra/docs/config-reference.js";
import { installCommand, systemPackages } from "../setup/system-tools.js";

const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");
/** Markdown with its wrapped lines joined (one paragraph per line). */
const unwrapped = (markdown: string): string => markdown.replace(/\n(?!\s*\n)(?!\s*[-*|] )(?!\s*\d+\. )\s*/g, " ");

describe("CONTRIBUTING.md", () => {
  const text = read("CONTRIBUTING.md");

  it("names the one apt-get line of every Debian package the tests use", () => {
    expect(text.split("\n")).toContain(installCommand(systemPackages));
  });

  it("names only tests and folders that exist", () => {
    const paths = [...text.matchAll(/`((?:test|src|infra)\/[\w./-]+)`/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThan(8);
    for (const path of paths) expect(existsSync(join(repoRoot, path)), path).toBe(true);
  });

  it("gives every step a measured time", () => {
    const rows = text.split("\n").filter((line) => /^\| `/.test(line));
    expect(rows.length).toBeGreaterThanOrEqual(6);
    for (const row of rows) expect(row, row).toMatch(/\| [^|]*\d+ (s|min)[^|]*\|$/);
  });
});

describe("the delivery promise", () => {
  const statements = ["README.md", "src/contract/README.md", "src/agent/delivery/README.md"].map(
    (file) => [file, unwrapped(read(file))] as const,
  );

  it("is at least once with a stable RecordId to dedupe on, in the README, the record contract and delivery", () => {
    for (const [file, doc] of statements) {
      expect(doc, file).toMatch(/at least\s+once/i);
      expect(doc, file).toMatch(/same `RecordId`/);
      expect(doc, file).toMatch(/dedupe on `RecordId`|`RecordId` to dedupe on/);
    }
  });

  it("is nowhere stated as no repeats", () => {
    for (const [file, doc] of statements)
      expect(doc, file).not.toMatch(/neither lose nor repeat|exactly once|never (sent|delivered) twice/i);
  });
});
