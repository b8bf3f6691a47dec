// vitest global set-up: builds src/ into dist/ (the build's own code) before any test file runs, when dist/ is missing
// or older than a source — so `npx vitest` after an edit tests the edited code, not the last build.
import { buildInto } from "../../infra/build.js";
import { builtTrees, staleReason } from "./dist-freshness.js";

export default async function setup(): Promise<void> {
  for (const { srcDir, distDir } of builtTrees) {
    const reason = staleReason(srcDir, distDir);
    if (reason === undefined) continue;
    const started = performance.now();
    const modules = await buildInto(distDir);
    console.log(`global set-up: built ${modules} modules into ${distDir} in ${Math.round(performance.now() - started)} ms (${reason})`);
  }
}
