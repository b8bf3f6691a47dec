// Test runner configuration: test files run in parallel, three at a time even on two cores — most of the suite waits
// on child processes, sockets and timers rather than computing, and vitest's default (cores − 1) would run a 2-core
// CI machine's suite one file at a time. Integration tests drive the built CLIs (src/*/dist/), which the global set-up
// rebuilds first whenever a source is newer than its build. Workspace packages resolve to their TypeScript sources
// (the `source` export condition), as tsc sees them, not to their dist/. The files that need the package artifacts run
// last (test/setup/sequencer.ts): npm test's set-up step builds those in the background meanwhile.
import { defineConfig } from "vitest/config";
import { ArtifactTestsLast } from "./test/setup/sequencer.js";

export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/build-once.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    maxWorkers: 3,
    reporters: ["default"],
    sequence: { sequencer: ArtifactTestsLast },
  },
});
