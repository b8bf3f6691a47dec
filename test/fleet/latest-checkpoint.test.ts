// The checkpoint writer's order with writes answered by hand: one write at a time, the newest position waiting replaces
// older ones, nothing asked for after a write is lost.
import { expect, it } from "vitest";
import { LatestCheckpoint } from "../../src/fleet/latest-checkpoint.js";

/** A writer whose writes stay unanswered until the test answers them, in order. */
const fail = (err: unknown): never => {
  throw new Error(`unexpected write failure: ${String(err)}`);
};

function manualWrites() {
  const started: number[] = [];
  const answers: Array<() => void> = [];
  const checkpoint = new LatestCheckpoint<number>((position) => {
    started.push(position);
    return new Promise<void>((resolve) => answers.push(resolve));
  }, fail);
  const answerNext = async (): Promise<void> => {
    answers.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { checkpoint, started, answerNext, unanswered: () => answers.length };
}

it("writes at once when idle, then only the newest of the positions asked for meanwhile", async () => {
  const { checkpoint, started, answerNext, unanswered } = manualWrites();
  checkpoint.request(1);
  expect(started).toEqual([1]);
  checkpoint.request(2);
  checkpoint.request(3);
  expect(started).toEqual([1]); // one write at a time
  await answerNext();
  expect(started).toEqual([1, 3]); // 2 was replaced by 3
  await answerNext();
  expect(unanswered()).toBe(0);
  checkpoint.request(4); // idle again: at once
  expect(started).toEqual([1, 3, 4]);
});

it("resolves written() once every position asked for so far is written, however many followed the first", async () => {
  const { checkpoint, answerNext } = manualWrites();
  await checkpoint.written(); // nothing asked: at once
  checkpoint.request(1);
  let written = false;
  const done = checkpoint.written().then(() => (written = true));
  checkpoint.request(2);
  await answerNext();
  expect(written).toBe(false); // 2 still to write
  await answerNext();
  await done;
  expect(written).toBe(true);
});

it("reports a write that rejected (a bug in the writer) and goes on: the positions asked for later are still written", async () => {
  const started: number[] = [];
  const failures: unknown[] = [];
  const checkpoint = new LatestCheckpoint<number>(
    async (position) => {
      started.push(position);
      if (position === 1) throw new Error("writer bug");
    },
    (err) => failures.push(err),
  );
  checkpoint.request(1);
  await checkpoint.written();
  expect(failures).toEqual([new Error("writer bug")]);
  checkpoint.request(2);
  await checkpoint.written();
  expect(started).toEqual([1, 2]);
  expect(failures).toHaveLength(1);
});
