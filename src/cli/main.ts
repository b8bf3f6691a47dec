#!/usr/bin/env node
// The `sef` entry point: turn on Node's compile cache (later starts skip compiling the bundle), and for `sef run` keep
// a stop signal that arrives while the modules load (a clean stop, not a death by signal) and tune V8 for a small
// resident process; then load the command line (program.ts).
import { setFlagsFromString } from "node:v8";
import { armEarlyStop } from "./early-stop.js";
import { enableCompileCacheIn } from "./compile-cache.js";

if (process.argv[2] === "run") {
  armEarlyStop();
  // A resident agent doing a few small requests a second: V8's memory-saving heuristics (smaller young generation,
  // heap kept small) cut its idle resident set by about 5 MB at no measurable CPU cost at 1 Hz.
  setFlagsFromString("--optimize-for-size");
  // undici (the webhook sink's HTTP client; IMDS uses node:http) parses HTTP with a WebAssembly module compiled at its
  // first request; letting V8's optimizing tier recompile it costs a ~35 MB transient peak for nothing the agent needs.
  setFlagsFromString("--liftoff-only");
}
enableCompileCacheIn();
await import("./program.js");
