// The shuffled file order of `npm test -- --sequence.shuffle --sequence.seed=N` (.ci/run): one order per seed.
import { describe, expect, it } from "vitest";
import { shuffledBySeed } from "./sequencer.js";

describe("shuffledBySeed", () => {
  const files = Array.from({ length: 40 }, (_, i) => `test/f${i}.test.ts`);

  it("gives the same order for the same seed, another for another seed, always a permutation", () => {
    const order = shuffledBySeed(files, 1234);
    expect(shuffledBySeed(files, 1234)).toEqual(order);
    expect(shuffledBySeed(files, 1235)).not.toEqual(order);
    expect(order).not.toEqual(files);
    expect([...order].sort()).toEqual([...files].sort());
    expect(files[0]).toBe("test/f0.test.ts"); // the input is not shuffled in place
  });
});
