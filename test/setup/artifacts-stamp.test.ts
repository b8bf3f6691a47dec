// When the package tests' cached artifacts are current: the stamp (test/package/artifacts.ts) follows the bytes of
// what they are built from — on a scratch git repository shaped like this one.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { inputsStamp } from "../package/artifacts.js";

const root = mkdtempSync(join(tmpdir(), "sef-stamp-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function write(file: string, text: string): void {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
}

describe("the package artifacts' input stamp", () => {
  it("changes with the sources, the packaging files and the lock file (committed or not), not with tests, docs or build output", () => {
    for (const [file, text] of Object.entries({
      ".gitignore": "dist/\nnode_modules/\n",
      "package.json": "{}",
      "package-lock.json": "{}",
      "src/agent/cli/main.ts": "export {};\n",
      "src/agent/sinks/notes.md": "# notes\n",
      "infra/linux/sef.service": "[Service]\n",
      "test/a.test.ts": "// a test\n",
    }))
      write(file, text);
    const git = (...args: string[]) =>
      expect(spawnSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd: root }).status).toBe(0);
    git("init", "-q");
    git("add", "-A");
    git("commit", "-qm", "first");

    const first = inputsStamp(root);
    expect(first).toMatch(/^[0-9a-f]{16}$/);
    write("test/a.test.ts", "// another test\n");
    write("src/agent/sinks/notes.md", "# other notes\n");
    write("src/agent/dist/cli/main.js", "built\n");
    write("src/agent/node_modules/x/index.js", "dep\n");
    expect(inputsStamp(root)).toBe(first);

    const changes: Array<[string, string]> = [
      ["src/agent/cli/main.ts", "export const edited = 1;\n"], // an uncommitted edit
      ["src/agent/new-module.ts", "export {};\n"], // a new, untracked file
      ["infra/linux/sef.service", "[Service]\nUser=sef\n"],
      ["package-lock.json", '{"lockfileVersion":3}'],
    ];
    const seen = new Set([first]);
    for (const [file, text] of changes) {
      write(file, text);
      const stamp = inputsStamp(root);
      expect(seen.has(stamp), `${file} changed the stamp`).toBe(false);
      seen.add(stamp);
    }
  });
});
