// vitest's file order. The static checks (type-check and lint, about half a minute of one core each) first, so they
// overlap the rest of the suite instead of going before it. The test files that need the package artifacts (they call
// `linuxArtifacts`) last: during `npm test` the set-up step builds those artifacts in the background, and a file waiting
// for them would hold one of the few workers while the rest of the suite could run. With TEST_FILE_ORDER_SEED set
// (.ci/run sets it and prints it) the files are shuffled by that seed first; the tests inside a file keep their written
// order (several files build on an earlier test's state: a peer's rows, an unpacked tarball).
import { readFileSync } from "node:fs";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** The files in an order drawn from `seed` alone (mulberry32, Fisher–Yates): the same seed, the same order. */
export function shuffledBySeed<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * TEST_FILE_ORDER_SEED as a seed: a non-negative integer, else no shuffle (an unreadable value is said, not guessed).
 * Not an SEF_ name: the agents the tests start take every SEF_ variable as a setting and refuse an unknown one.
 */
export function orderSeed(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  if (!/^\d+$/.test(text))
    throw new Error(`TEST_FILE_ORDER_SEED must be a non-negative integer, not ${JSON.stringify(text)}`);
  return Number(text);
}

/** The file that runs `npm run typecheck` and `npm run lint`. */
function isStaticChecks(file: TestSpecification): boolean {
  return file.moduleId.endsWith("/test/package/static-checks.test.ts");
}

export class ArtifactTestsLast extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seed = orderSeed(process.env.TEST_FILE_ORDER_SEED);
    const sorted =
      seed === undefined
        ? await super.sort(files)
        : shuffledBySeed(
            [...files].sort((a, b) => (a.moduleId < b.moduleId ? -1 : 1)),
            seed,
          );
    const needsArtifacts = (file: TestSpecification): boolean =>
      readFileSync(file.moduleId, "utf8").includes("linuxArtifacts(");
    const first = sorted.filter(isStaticChecks);
    const rest = sorted.filter((f) => !isStaticChecks(f));
    return [...first, ...rest.filter((f) => !needsArtifacts(f)), ...rest.filter(needsArtifacts)];
  }
}
