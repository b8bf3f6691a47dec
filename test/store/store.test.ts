// The SQLite store on a real file: atomic commits, cursors, pruning, the size cap, and clear errors.
import { describe, expect, it, beforeEach } from "vitest";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Store } from "../../src/store/store.js";
import { StoreError } from "../../src/store/errors.js";
import { emptyCollectorState } from "../../src/collector/state.js";
import type { HeartbeatRecord } from "../../src/contract/record.js";
import { unknownVmIdentity } from "../../src/contract/record.js";

const record = (i: number, pad = 0): HeartbeatRecord => ({
  RecordId: `r${i}`,
  RecordType: "Heartbeat",
  TimeGenerated: new Date(1_700_000_000_000 + i).toISOString(),
  ...unknownVmIdentity,
  AgentId: "00000000-0000-4000-8000-000000000001",
  AgentVersion: "t",
  Detail: "x".repeat(pad),
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sef-store-"));
});

describe("Store", () => {
  it("persists collector state and records together, across reopen", () => {
    const store = Store.open({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const state = emptyCollectorState();
    state.lastIncarnation = 4;
    state.lastSuccessMs = 123;
    state.events.set("a", { status: "Started", lastSeenMs: 5, fields: { EventId: "A", EventType: "Reboot", ResourceType: "VirtualMachine", Resources: ["x"], NotBefore: null, Description: "", EventSource: "", DurationInSeconds: -1 } });
    state.emitted.set("a|Started", { emittedMs: 5, endedMs: null });
    const entries = store.commitDocument(state, [record(1), record(2)], 1000);
    expect(entries.map((e) => e.seq)).toEqual([1, 2]);
    store.close();

    const reopened = Store.open({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const loaded = reopened.loadCollectorState();
    expect(loaded.lastIncarnation).toBe(4);
    expect(loaded.events.get("a")?.fields.EventType).toBe("Reboot");
    expect(loaded.emitted.get("a|Started")).toEqual({ emittedMs: 5, endedMs: null });
    expect(reopened.readAfter(0, 10).map((e) => e.record.RecordId)).toEqual(["r1", "r2"]);
    reopened.close();
  });

  it("rolls back the state when appending a record fails", () => {
    const store = Store.open({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const state = emptyCollectorState();
    state.lastIncarnation = 9;
    const bad = { ...record(1), RecordId: null } as unknown as HeartbeatRecord; // violates NOT NULL
    expect(() => store.commitDocument(state, [record(0), bad], 1)).toThrow();
    expect(store.loadCollectorState().lastIncarnation).toBeNull();
    expect(store.readAfter(0, 10)).toEqual([]);
    store.close();
  });

  it("keeps one cursor per sink and prunes only what every sink has", () => {
    const store = Store.open({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["a", "b"]);
    store.append([record(1), record(2), record(3)], 1);
    store.advanceCursor("a", 3);
    store.advanceCursor("b", 1);
    store.advanceCursor("b", 0); // never moves back
    expect(store.cursor("b")).toBe(1);
    expect(store.prune()).toBe(1);
    expect(store.readAfter(0, 10).map((e) => e.seq)).toEqual([2, 3]);
    expect(store.depth("b")).toEqual({ records: 2, oldestCreatedMs: 1 });
    expect(store.depth("a").records).toBe(0);
    store.registerSinks(["a"]); // b removed: its cursor no longer holds records back
    expect(store.prune()).toBe(2);
    store.close();
  });

  it("evicts the oldest records past the size cap and returns them for dead-lettering", () => {
    const store = Store.open({ dataDir: dir, maxOutboxBytes: 1024 * 1024 });
    store.registerSinks(["slow"]);
    for (let i = 0; i < 30; i++) store.append([record(i, 50_000)], i);
    const evicted = store.evictOverCap();
    expect(evicted.length).toBeGreaterThan(0);
    expect(evicted[0]!.seq).toBe(1);
    expect(store.bytesInOutbox).toBeLessThanOrEqual(1024 * 1024 * 0.9);
    expect(store.readAfter(0, 100)[0]!.seq).toBe(evicted[evicted.length - 1]!.seq + 1);
    store.close();
  });

  it("reports a corrupt store as a StoreError with the way out", () => {
    writeFileSync(join(dir, "sef.db"), "this is not a database ".repeat(100));
    try {
      Store.open({ dataDir: dir, maxOutboxBytes: 1 << 30 });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).reason).toBe("corrupt");
      expect((err as Error).message).toMatch(/Move it aside/);
    }
  });

  it("reports a data directory that is a file as unwritable", () => {
    const file = join(dir, "file");
    writeFileSync(file, "");
    expect(() => Store.open({ dataDir: file, maxOutboxBytes: 1 << 30 })).toThrow(/not writable/);
    rmSync(file);
  });
});
