#!/usr/bin/env node
// The `sef` command npm links (package.json "bin"). A committed file, so `npm ci` links it before its `prepare` step
// builds dist/ (npm skips a bin whose file is missing when it links); it runs the built command line.
await import("../dist/cli/main.js");
