// The static checks as part of the suite: `npm run typecheck` (tsc over src, test and infra) and `npm run lint` (eslint
// and prettier --check) run side by side in this file, which the sequencer starts first, while the other workers run
// tests — on two cores most of the suite waits on sockets and child processes, so the checks cost little wall time
// there instead of a minute in front of it. A failure shows the check's own output.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repo = join(import.meta.dirname, "../..");
/** A deadline for each check: on an idle 2-core machine tsc takes about 25 s of CPU, eslint and prettier 35 s. */
const checkDeadlineMs = 300_000;

interface CheckRun {
  readonly code: number | null;
  readonly output: string;
}

/** Runs `npm run -s <script>` in the repository; kills it at the deadline (the result then says so). */
function runScript(script: string): Promise<CheckRun> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "-s", script], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const deadline = setTimeout(() => {
      output += `\n(killed: npm run ${script} ran past ${checkDeadlineMs} ms)`;
      child.kill("SIGKILL");
    }, checkDeadlineMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(deadline);
      resolve({ code, output });
    });
  });
}

describe.concurrent("static checks", () => {
  for (const script of ["typecheck", "lint"]) {
    it(
      `npm run ${script} passes`,
      async () => {
        const run = await runScript(script);
        expect(run.code, `npm run ${script} failed:\n${run.output.slice(-8000)}`).toBe(0);
      },
      checkDeadlineMs + 10_000,
    );
  }
});
