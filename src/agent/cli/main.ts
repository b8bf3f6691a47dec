#!/usr/bin/env node
// The `sef` entry point. For `sef run`, first keep a stop signal that arrives while the modules load (a clean stop, not
// a death by signal); then turn on Node's compile cache (later starts skip compiling the bundle) and load the command
// line (program.ts). V8 is never tuned from here: its flags are fixed for the whole process on the launchers' command
// lines (bin/sef, the Windows service, the container entry point), since changing them at run time is unsupported.
const resident = process.argv[2] === "run";
const { armEarlyStop } = await import("./early-stop.js");
if (resident) armEarlyStop();
const { enableCompileCacheIn } = await import("./compile-cache.js");
enableCompileCacheIn();
await import("./program.js");
