#!/usr/bin/env node
// The `sef` entry point. For `sef run`, first tune V8 for a small resident process (memory-saving heuristics, the
// optimizing compilers held until there is a backlog: optimizing-tiers.ts) and keep a stop signal that arrives while
// the modules load (a clean stop, not a death by signal); then turn on Node's compile cache (later starts skip
// compiling the bundle) and load the command line (program.ts). Only a built-in module is imported statically: the
// flags are set before Node resolves any of the agent's own modules (resolving them is code V8 would otherwise optimize).
import { setFlagsFromString } from "node:v8";

const resident = process.argv[2] === "run";
if (resident) {
  // A resident agent doing a few small requests a second: V8's memory-saving heuristics (smaller young generation,
  // heap kept small) cut its idle resident set by about 5 MB at no measurable CPU cost at 1 Hz.
  setFlagsFromString("--optimize-for-size");
  // undici (the webhook sink's HTTP client; IMDS uses node:http) parses HTTP with a WebAssembly module compiled at its
  // first request; letting V8's optimizing tier recompile it costs a ~35 MB transient peak for nothing the agent needs.
  setFlagsFromString("--liftoff-only");
  // Maglev and TurboFan wait for a backlog (run.ts releases them through optimizing-tiers.ts). The launchers (bin/sef,
  // the Windows service, the container) also pass both flags to node, so that they hold while Node resolves this file.
  setFlagsFromString("--no-maglev");
  setFlagsFromString("--no-turbofan");
}
const { armEarlyStop } = await import("./early-stop.js");
if (resident) armEarlyStop();
const { markOptimizingTiersHeld, releaseOptimizingTiers } = await import("./optimizing-tiers.js");
if (resident || process.execArgv.includes("--no-turbofan")) markOptimizingTiersHeld();
// Held by a launcher that cannot tell the commands apart (the container's entry point): other commands want them.
if (!resident) releaseOptimizingTiers();
const { enableCompileCacheIn } = await import("./compile-cache.js");
enableCompileCacheIn();
await import("./program.js");
