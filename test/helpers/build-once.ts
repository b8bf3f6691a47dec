// vitest global set-up: builds every workspace package (the build's own code, under a second) before any test file
// runs, when a package's dist/ is missing or older than a source — so `npx vitest` after an edit tests the edited code.
// It also gives the test workers and every Node process they start one on-disk compile cache (NODE_COMPILE_CACHE, in
// the system temp dir, unless already set): the suite starts a few hundred processes that load the same modules.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildAll } from "../../infra/build.js";
import { builtTrees, staleReason } from "./dist-freshness.js";

export default async function setup(): Promise<void> {
  process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), "sef-test-compile-cache");
  const reason = builtTrees.map(({ srcDir, distDir }) => staleReason(srcDir, distDir)).find((r) => r !== undefined);
  if (reason === undefined) return;
  const started = performance.now();
  const modules = await buildAll();
  console.log(`global set-up: built ${modules} modules in ${Math.round(performance.now() - started)} ms (${reason})`);
}
