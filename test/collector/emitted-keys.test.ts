// The emitted keys' views (collector/emitted-keys.ts) against a plain Map: after any sequence of sets, expiries,
// derivations, settles, keys remembered from the table and events forgotten, every live view reads as its model, its
// change names exactly what the store must write, and a view older than the last settle refuses to be read.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { propertyParams } from "../helpers/seed.js";
import { EmittedKeys, eventIdOfKey } from "../../src/agent/collector/emitted-keys.js";
import type { EmittedKey } from "../../src/agent/collector/state.js";

type Op =
  | { kind: "set"; key: number; emittedMs: number; endedMs: number | null }
  | { kind: "expire"; beforeMs: number }
  | { kind: "derive" }
  | { kind: "settle"; tracked: number[] }
  | { kind: "remember"; key: number; emittedMs: number; endedMs: number | null };

const keyOf = (k: number): string => `e${k % 5}|${["Scheduled", "Started", "Completed"][k % 3]}`;
const keyArb = fc.integer({ min: 0, max: 14 });
const endArb = fc.option(fc.integer({ min: 0, max: 100 }));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("set" as const),
      key: keyArb,
      emittedMs: fc.integer({ min: 0, max: 100 }),
      endedMs: endArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("expire" as const), beforeMs: fc.integer({ min: 0, max: 110 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "derive" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("settle" as const), tracked: fc.subarray([0, 1, 2, 3, 4]) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("remember" as const),
      key: keyArb,
      emittedMs: fc.integer({ min: 0, max: 100 }),
      endedMs: endArb,
    }),
  },
);

describe("EmittedKeys", () => {
  it("reads as a Map through derivations, expiries, settles, remembered keys and forgotten events", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(keyArb, fc.integer({ min: 0, max: 100 }), endArb), { maxLength: 12 }),
        fc.array(opArb, { maxLength: 60 }),
        (initial, ops) => {
          let model = new Map<string, EmittedKey>(
            initial.map(([k, emittedMs, endedMs]) => [keyOf(k), { emittedMs, endedMs }]),
          );
          /** Keys this view's overlay touched since the last settle (remembering cannot change how it reads them). */
          let touched = new Set<string>();
          /** What the store must write for the view: its upserts and the latest expiry cutoff since the last settle. */
          let upserts = new Map<string, EmittedKey>();
          let expiredBefore: number | null = null;
          let view = EmittedKeys.from(model);
          /** The shared map's keys (settled, or remembered from the table). */
          const shared = new Set(model.keys());
          /** Views derived from since the last settle, each with the model it had when derived from (it must not change). */
          const older: Array<{ view: EmittedKeys; model: Map<string, EmittedKey>; touched: Set<string> }> = [];
          for (const op of ops) {
            if (op.kind === "set") {
              const entry = { emittedMs: op.emittedMs, endedMs: op.endedMs };
              view.set(keyOf(op.key), entry);
              model.set(keyOf(op.key), entry);
              upserts.set(keyOf(op.key), entry);
              touched.add(keyOf(op.key));
            } else if (op.kind === "expire") {
              view.expireBefore(op.beforeMs);
              for (const [key, e] of [...model]) {
                if (e.endedMs !== null && e.endedMs < op.beforeMs) {
                  model.delete(key);
                  upserts.delete(key);
                  touched.add(key);
                }
              }
              expiredBefore = Math.max(expiredBefore ?? op.beforeMs, op.beforeMs);
            } else if (op.kind === "derive") {
              older.push({ view, model, touched: new Set(touched) }); // still readable, and unchanged by its successor: nothing settled since
              view = view.derive();
              model = new Map(model);
            } else if (op.kind === "settle") {
              view.settle();
              for (const stale of older.splice(0))
                expect(() => stale.view.get("e0|Scheduled")).toThrow(/older than the one adopted/);
              const tracked = new Set(op.tracked.map((id) => `e${id}`));
              view.keepOnlyEvents(tracked);
              for (const key of [...model.keys()]) if (!tracked.has(eventIdOfKey(key))) model.delete(key);
              shared.clear();
              for (const key of model.keys()) shared.add(key);
              touched = new Set();
              upserts = new Map();
              expiredBefore = null;
            } else {
              view.remember([[keyOf(op.key), { emittedMs: op.emittedMs, endedMs: op.endedMs }]]);
              // A key remembered from the table goes into the shared map when it lacks it: every view that has not
              // touched the key since the last settle reads it, the older ones too.
              if (!shared.has(keyOf(op.key))) {
                shared.add(keyOf(op.key));
                for (const m of [{ model, touched }, ...older]) {
                  if (!m.touched.has(keyOf(op.key)))
                    m.model.set(keyOf(op.key), { emittedMs: op.emittedMs, endedMs: op.endedMs });
                }
              }
            }
            expect(new Map(view)).toEqual(model);
            expect(view.size).toBe(model.size);
            for (let k = 0; k <= 14; k++) expect(view.get(keyOf(k))).toEqual(model.get(keyOf(k)));
            expect(new Map(view.change.upserts)).toEqual(upserts);
            expect(view.change.expiredBefore).toBe(expiredBefore);
            // Readable until a settle, and reading as when it was derived from: a later view's changes are its own.
            for (const o of older) expect(new Map(o.view)).toEqual(o.model);
          }
        },
      ),
      propertyParams(3201, 300),
    );
  });

  it("refuses to forget events from a view with changes not settled", () => {
    const view = EmittedKeys.from([["a|Scheduled", { emittedMs: 1, endedMs: null }]]).derive();
    view.set("b|Scheduled", { emittedMs: 2, endedMs: null });
    expect(() => view.keepOnlyEvents(new Set(["a"]))).toThrow(/not settled/);
    view.settle();
    view.keepOnlyEvents(new Set(["a"]));
    expect([...view.derive()].map(([key]) => key)).toEqual(["a|Scheduled"]);
  });

  it("refuses every use of a view older than a settle", () => {
    const base = EmittedKeys.from([["a|Scheduled", { emittedMs: 1, endedMs: null }]]);
    const stale = base.derive();
    const next = base.derive();
    next.settle();
    const uses: Array<[string, () => unknown]> = [
      ["derive", () => stale.derive()],
      ["get", () => stale.get("a|Scheduled")],
      ["has", () => stale.has("a|Scheduled")],
      ["size", () => stale.size],
      ["set", () => stale.set("b|Scheduled", { emittedMs: 2, endedMs: null })],
      ["iterate", () => [...stale]],
      ["expireBefore", () => stale.expireBefore(5)],
      ["base", () => stale.base],
      ["remember", () => stale.remember([["c|Scheduled", { emittedMs: 3, endedMs: null }]])],
      ["settle", () => stale.settle()],
      ["keepOnlyEvents", () => stale.keepOnlyEvents(new Set(["a"]))],
    ];
    for (const [name, use] of uses) expect(use, name).toThrow(/older than the one adopted/);
  });

  it("settles to the version it announced, and a view that only expired keys is not settled either", () => {
    const view = EmittedKeys.from([["a|Scheduled", { emittedMs: 1, endedMs: 2 }]]).derive();
    const announced = view.settledVersion;
    view.settle();
    expect(view.base.version).toBe(announced);
    const next = view.derive();
    expect(next.settledVersion).toBe(announced + 1);
    next.expireBefore(10);
    expect(() => next.keepOnlyEvents(new Set(["a"]))).toThrow(/not settled/);
  });

  it("expires only the keys whose events ended before the cutoff, a live key of any spelling kept", () => {
    const view = EmittedKeys.from([
      ["Stryker was here", { emittedMs: 1, endedMs: null }],
      ["a|Completed", { emittedMs: 1, endedMs: 2 }],
    ]).derive();
    view.expireBefore(10);
    expect([...view].map(([key]) => key)).toEqual(["Stryker was here"]);
    expect(view.has("Stryker was here")).toBe(true);
  });

  it("names the EventId of a key, a malformed sighting's included", () => {
    expect(eventIdOfKey("3f1c-aa|Started")).toBe("3f1c-aa");
    expect(eventIdOfKey("3f1c-aa|Malformed:0123abcd")).toBe("3f1c-aa");
    expect(eventIdOfKey("|Malformed:0123abcd")).toBe("");
  });
});
