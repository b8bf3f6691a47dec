// Windows service entry (run by WinSW as `node.exe sef-service.mjs run --config …`): runs the agent bundle as a child
// and maps the exit codes that need a person (2 invalid configuration, 78 store unusable) to a clean stop, so the
// Service Control Manager's restart-on-failure does not loop on them. Ctrl+C from WinSW reaches both processes.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const noRestartExitCodes = new Set([2, 78]);
const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
// `run` gets V8's settings for a small resident process on node's command line, for its whole life (never changed while
// it runs; the same as bin/sef gives it: src/agent/cli/README.md, "V8 flags").
const nodeFlags = args[0] === "run" ? ["--optimize-for-size", "--liftoff-only", "--no-maglev", "--no-turbofan"] : [];
const child = spawn(process.execPath, [...nodeFlags, join(here, "sef.mjs"), ...args], { stdio: "inherit" });

// The console's Ctrl+C (WinSW's stop) goes to the agent too: it flushes and exits; this process just waits for it.
for (const signal of ["SIGINT", "SIGBREAK", "SIGTERM"]) process.on(signal, () => {});

child.on("exit", (code, signal) => {
  if (code !== null && noRestartExitCodes.has(code)) {
    console.error(
      `sef-service: the agent exited with ${code} (needs a person: see the log above); stopping without restart`,
    );
    process.exit(0);
  }
  process.exit(code ?? (signal ? 1 : 0));
});
child.on("error", (error) => {
  console.error(`sef-service: cannot start the agent: ${error.message}`);
  process.exit(1);
});
