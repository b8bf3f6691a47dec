// Test runner configuration: test files run in parallel, three at a time even on two cores — most of the suite waits
// on child processes, sockets and timers rather than computing, and vitest's default (cores − 1) would run a 2-core
// CI machine's suite one file at a time. Integration tests drive the built CLIs (src/*/dist/), which the global set-up
// rebuilds first whenever a source is newer than its build. Workspace packages resolve to their TypeScript sources
// (the `source` export condition), as tsc sees them, not to their dist/. The files that need the package artifacts run
// last (test/setup/sequencer.ts): npm test's set-up step builds those in the background meanwhile.
//
// Two projects. Most test files (project "shared") share their worker processes: one Node and one import of the
// SDKs, parsers, peers and helpers per worker instead of per file, about a third less CPU for a small file. The
// agents, CLIs and tools they start are child processes of their own either way. The package and set-up tests, and
// the few files that set process.env for the code they call or lean on a process-wide cache (the managed-identity
// tests: the Azure SDK's token cache; `isolatedFiles`), run one process per file ("isolated").
import { globSync } from "node:fs";
import { defineConfig } from "vitest/config";
import { ArtifactTestsLast } from "./test/setup/sequencer.js";

/** Folders whose test files leave no process-wide state behind (what they start, they close). */
const sharedProcessFolders = [
  "actions",
  "agent",
  "bench",
  "cli",
  "collector",
  "config",
  "contract",
  "delivery",
  "deploy",
  "docs",
  "errors",
  "eventhubs",
  "fleet",
  "helpers",
  "imds",
  "integration",
  "interop",
  "loganalytics",
  "mutation",
  "observability",
  "plugins",
  "retry",
  "simulator",
  "sinks",
  "store",
  "testbed",
  "upgrade",
  "webhook",
];
/** Files of those folders that change process-wide state another file would see. */
const isolatedFiles = [
  "test/imds/client.test.ts",
  "test/loganalytics/managed-identity.test.ts",
  "test/loganalytics/managed-identity-simulator.test.ts",
  "test/eventhubs/managed-identity.test.ts",
  "test/simulator/token.test.ts",
  "test/observability/secret-values.test.ts",
  // Mocks the contract's record module for the producers it imports (a shared worker would keep them mocked).
  "test/contract/record-envelope.test.ts",
];
const sharedProcessTests = globSync(
  sharedProcessFolders.map((folder) => `test/${folder}/**/*.test.ts`),
  { cwd: import.meta.dirname },
).filter((file) => !isolatedFiles.includes(file));

export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    globalSetup: ["test/helpers/build-once.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    maxWorkers: 3,
    reporters: ["default"],
    sequence: { sequencer: ArtifactTestsLast },
    projects: [
      { extends: true, test: { name: "shared", include: sharedProcessTests, isolate: false } },
      {
        extends: true,
        test: { name: "isolated", include: ["test/**/*.test.ts"], exclude: sharedProcessTests, isolate: true },
      },
    ],
  },
});
