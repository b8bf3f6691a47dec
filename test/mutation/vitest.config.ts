// vitest configuration for the mutation gate's runs (run.ts): the unit test files of the group named by
// SEF_MUTATION_GROUP (every group's when unset), no build step (these tests import sources), and the shared packages
// (`@sef/contract`, `@sef/retry`, `@sef/errors`, `@sef/redaction`) resolved to their sources next to the tests — their
// workspace links in node_modules point out of Stryker's sandbox, away from the mutants.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { selectedGroups } from "./stryker.config.js";

const srcDir = fileURLToPath(new URL("../../src/", import.meta.url));
/** `@sef/<package>/<file>.js` → `src/<package>/<file>.ts` of this tree (the packages' folders bear their names). */
const sharedPackage = /^@sef\/(contract|retry|errors|redaction)\/(.*)\.js$/;

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  resolve: { conditions: ["source"], alias: [{ find: sharedPackage, replacement: `${srcDir}$1/$2.ts` }] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: [...new Set(selectedGroups.flatMap((g) => [...g.tests]))],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ["default"],
  },
});
