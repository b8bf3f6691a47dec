// Seeds of the randomized tests (fast-check properties, kill -9 moments): a fixed default per test, so a run is the
// same run every time; SEF_TEST_SEED replaces every default to explore others, and a failure names the seed it ran,
// ready to replay (`SEF_TEST_SEED=<seed> npx vitest run <file>`). SEF_TEST_RUNS_FACTOR scales the number of runs.

/** The seed to use: SEF_TEST_SEED when set, else `defaultSeed`. */
export function testSeed(defaultSeed: number): number {
  const override = process.env.SEF_TEST_SEED;
  if (override === undefined || override === "") return defaultSeed;
  const seed = Number(override);
  if (!Number.isSafeInteger(seed)) throw new Error(`SEF_TEST_SEED must be an integer, not ${JSON.stringify(override)}`);
  return seed;
}

/** `numRuns` scaled by SEF_TEST_RUNS_FACTOR (default 1; more runs for a longer, deeper search). */
export function testRuns(numRuns: number): number {
  const factor = Number(process.env.SEF_TEST_RUNS_FACTOR ?? 1);
  return Math.max(1, Math.round(numRuns * (Number.isFinite(factor) && factor > 0 ? factor : 1)));
}

/** fast-check parameters: the test's seed and runs (fast-check names the seed and the path of a failure itself). */
export function propertyParams(defaultSeed: number, numRuns: number): { seed: number; numRuns: number } {
  return { seed: testSeed(defaultSeed), numRuns: testRuns(numRuns) };
}

/** Runs `body`; a failure's message ends with the seed to replay it with. */
export async function replayable<T>(seed: number, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof Error) err.message += `\n(random choices from seed ${seed}: replay with SEF_TEST_SEED=${seed})`;
    throw err;
  }
}
