// vitest configuration for the mutation gate's runs (run.ts): the unit test files of the group named by
// SEF_MUTATION_GROUP (every group's when unset), no build step (these tests import sources), and `@sef/contract`
// resolved to the contract's sources next to the tests — its workspace link in node_modules points out of Stryker's
// sandbox, away from the mutants.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { selectedGroups } from "./stryker.config.js";

const contractDir = fileURLToPath(new URL("../../src/contract/", import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  resolve: { conditions: ["source"], alias: [{ find: /^@sef\/contract\/(.*)\.js$/, replacement: `${contractDir}$1.ts` }] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: [...new Set(selectedGroups.flatMap((g) => [...g.tests]))],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ["default"],
  },
});
