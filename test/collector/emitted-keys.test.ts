// The emitted keys' views and expiry heap (collector/emitted-keys.ts) against a plain Map: after any sequence of sets,
// deletes, derivations and settles, every live view reads as its model, `endedBefore` finds exactly what a full scan
// finds, and a view older than the last settle refuses to be read.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { EmittedKeys } from "../../src/agent/collector/emitted-keys.js";
import type { EmittedKey } from "../../src/agent/collector/state.js";

type Op =
  | { kind: "set"; key: number; emittedMs: number; endedMs: number | null }
  | { kind: "delete"; key: number }
  | { kind: "derive" }
  | { kind: "settle" }
  | { kind: "expire"; beforeMs: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("set" as const), key: fc.integer({ min: 0, max: 12 }), emittedMs: fc.integer({ min: 0, max: 100 }), endedMs: fc.option(fc.integer({ min: 0, max: 100 })) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), key: fc.integer({ min: 0, max: 12 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "derive" as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: "settle" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("expire" as const), beforeMs: fc.integer({ min: 0, max: 110 }) }) },
);

const scan = (model: ReadonlyMap<string, EmittedKey>, beforeMs: number): string[] =>
  [...model].filter(([, e]) => e.endedMs !== null && e.endedMs < beforeMs).map(([k]) => k).sort();

describe("EmittedKeys", () => {
  it("reads as a Map through derivations and settles; endedBefore equals a full scan", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 100 }), fc.option(fc.integer({ min: 0, max: 100 }))), { maxLength: 12 }), fc.array(opArb, { maxLength: 60 }), (initial, ops) => {
        let model = new Map<string, EmittedKey>(initial.map(([k, emittedMs, endedMs]) => [`k${k}`, { emittedMs, endedMs }]));
        let view = EmittedKeys.from(model);
        const older: EmittedKeys[] = [];
        for (const op of ops) {
          if (op.kind === "set") {
            view.set(`k${op.key}`, { emittedMs: op.emittedMs, endedMs: op.endedMs });
            model.set(`k${op.key}`, { emittedMs: op.emittedMs, endedMs: op.endedMs });
          } else if (op.kind === "delete") {
            view.delete(`k${op.key}`);
            model.delete(`k${op.key}`);
          } else if (op.kind === "derive") {
            older.push(view); // still readable: nothing settled since
            view = view.derive();
            model = new Map(model);
          } else if (op.kind === "settle") {
            view.settle();
            for (const stale of older.splice(0)) expect(() => stale.get("k0")).toThrow(/older than the one adopted/);
          } else {
            expect(view.endedBefore(op.beforeMs).sort()).toEqual(scan(model, op.beforeMs));
          }
          expect(new Map(view)).toEqual(model);
          expect(view.size).toBe(model.size);
          for (let k = 0; k <= 12; k++) expect(view.get(`k${k}`)).toEqual(model.get(`k${k}`));
          for (const o of older) expect(o.size).toBeGreaterThanOrEqual(0); // readable until a settle
        }
      }),
      { numRuns: 300 },
    );
  });

  it("finds exactly the expired keys among 100,000 kept, and again once they are pruned", () => {
    const keys = EmittedKeys.from(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, { emittedMs: i, endedMs: 1_000 + i }] as const));
    const next = keys.derive();
    expect(next.endedBefore(1_003).sort()).toEqual(["k0", "k1", "k2"]);
    for (const key of next.endedBefore(1_003)) next.delete(key);
    next.settle();
    expect(next.size).toBe(99_997);
    expect(next.derive().endedBefore(1_004)).toEqual(["k3"]);
    // One key ended again and again: the heap's outdated entries are dropped, not piled up or reported.
    let view = next;
    for (let i = 0; i < 500; i++) {
      view = view.derive().set("k5", { emittedMs: 5, endedMs: 2_000_000 - i });
      view.settle();
    }
    expect(view.endedBefore(1_008).sort()).toEqual(["k3", "k4", "k6", "k7"]);
    expect(view.endedBefore(2_000_000 - 499 + 1)).toContain("k5");
  });

  it("drops the heap's outdated entries without losing a live one (a few keys ended again and again)", () => {
    let view = EmittedKeys.from(Array.from({ length: 10 }, (_, i) => [`k${i}`, { emittedMs: i, endedMs: 100 + i }] as const));
    for (let i = 0; i < 300; i++) {
      view = view.derive().set("k9", { emittedMs: 9, endedMs: 10_000 - i });
      view.settle();
    }
    expect(view.endedBefore(109).sort()).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"]);
    expect(view.endedBefore(10_000).sort()).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"]);
  });
});
