#!/usr/bin/env node
// The `sef` entry point: for `sef run`, keep a stop signal that arrives while the modules load (a clean stop, not a
// death by signal), then load the command line (program.ts).
import { armEarlyStop } from "./early-stop.js";

if (process.argv[2] === "run") armEarlyStop();
await import("./program.js");
