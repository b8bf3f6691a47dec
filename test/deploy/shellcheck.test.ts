// Every shell script in the repository is shellcheck-clean. The scripts are found, not listed: every file git knows
// (tracked or new, not ignored) that is named *.sh or starts with a sh/bash shebang, so a new script is covered the
// day it is added. Scripts without a shebang (the .rpm scriptlets, run by rpm's /bin/sh) are checked as POSIX sh.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../package/artifacts.js";

const shebang = /^#!\s*(?:\/usr\/bin\/env\s+|\/(?:usr\/)?bin\/)(sh|bash|dash)\b/;

/** Repository-relative paths of the shell scripts, sorted. */
function shellScripts(): string[] {
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repoRoot,
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  return listed.stdout
    .split("\0")
    .filter((file) => file !== "" && existsSync(join(repoRoot, file)))
    .filter(
      (file) =>
        file.endsWith(".sh") || shebang.test(readFileSync(join(repoRoot, file)).subarray(0, 64).toString("latin1")),
    )
    .sort();
}

const scripts = shellScripts();

describe("shell scripts", () => {
  it("are found by name and shebang (the ones known today among them)", () => {
    expect(scripts).toEqual(
      expect.arrayContaining([
        ".ci/run",
        "infra/linux/install.sh",
        "infra/linux/sef",
        "infra/linux/deb/postinst",
        "infra/linux/rpm/pre.sh",
        "test/package/throwaway-root.sh",
      ]),
    );
    expect(scripts).not.toContain("package.json");
  });

  it.each(scripts)("%s is shellcheck-clean", (script) => {
    const head = readFileSync(join(repoRoot, script)).subarray(0, 64).toString("latin1");
    const dialect = shebang.exec(head)?.[1] ?? "sh";
    const result = spawnSync("shellcheck", ["--shell", dialect === "dash" ? "dash" : dialect, join(repoRoot, script)], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(result.error, "shellcheck must be installed (npm test's set-up step installs it)").toBeUndefined();
    expect(result.stdout).toBe("");
    expect(result.status).toBe(0);
  });
});
