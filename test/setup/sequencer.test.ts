// The shuffled file order of `TEST_FILE_ORDER_SEED=N npm test` (.ci/run): one order per seed.
import { describe, expect, it } from "vitest";
import { orderSeed, shuffledBySeed } from "./sequencer.js";

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

describe("orderSeed", () => {
  it("reads TEST_FILE_ORDER_SEED: unset or empty is no shuffle, digits a seed, anything else an error naming it", () => {
    expect(orderSeed(undefined)).toBeUndefined();
    expect(orderSeed("")).toBeUndefined();
    expect(orderSeed("4242")).toBe(4242);
    expect(() => orderSeed("-1")).toThrow('TEST_FILE_ORDER_SEED must be a non-negative integer, not "-1"');
    expect(() => orderSeed("12ab")).toThrow("TEST_FILE_ORDER_SEED");
  });
});
