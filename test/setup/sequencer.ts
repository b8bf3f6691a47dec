// vitest's file order, with the test files that need the package artifacts (they call `linuxArtifacts`) last: during
// `npm test` the set-up step builds those artifacts in the background, and a file waiting for them would hold one of
// the few workers while the rest of the suite could run.
import { readFileSync } from "node:fs";
import { BaseSequencer, type TestSpecification } from "vitest/node";

export class ArtifactTestsLast extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const needsArtifacts = (file: TestSpecification): boolean =>
      readFileSync(file.moduleId, "utf8").includes("linuxArtifacts(");
    return [...sorted.filter((f) => !needsArtifacts(f)), ...sorted.filter(needsArtifacts)];
  }
}
