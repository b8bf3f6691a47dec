// vitest global set-up: builds every workspace package (the build's own code, under a second) before any test file
// runs, when a package's dist/ is missing or older than a source — so `npx vitest` after an edit tests the edited code.
import { buildAll } from "../../infra/build.js";
import { builtTrees, staleReason } from "./dist-freshness.js";

export default async function setup(): Promise<void> {
  const reason = builtTrees.map(({ srcDir, distDir }) => staleReason(srcDir, distDir)).find((r) => r !== undefined);
  if (reason === undefined) return;
  const started = performance.now();
  const modules = await buildAll();
  console.log(`global set-up: built ${modules} modules in ${Math.round(performance.now() - started)} ms (${reason})`);
}
