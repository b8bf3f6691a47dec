// The action ledger's SQL on a real store: idempotent planning, plan order, attempts, a monotonic planned position,
// persistence across reopen, and one transaction for an action's new state and its outbox record.
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ActionLedger, type PlannedAction } from "../../src/agent/actions/action-ledger.js";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { transition } from "./fixtures.js";
import { emptyCollectorState } from "../../src/agent/collector/state.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
/** A store with its outbox (`store`) and its action ledger (`store.actions`). */
const openStore = (dataDir?: string): OpenOutbox & { actions: ActionLedger } => {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), "sef-ledger-"));
  dirs.push(dir);
  const store = openOutbox({ dataDir: dir });
  return Object.assign(store, { actions: ActionLedger.open(store.opened) });
};

const action = (key: string, kind: PlannedAction["kind"] = "hook"): PlannedAction => ({
  actionKey: key,
  kind,
  eventKey: "e1",
  eventStatus: "Scheduled",
  name: kind === "hook" ? key : "approval",
  recordJson: "{}",
});

describe("ActionLedger", () => {
  it("keeps node actions (kubernetes) out of the runner's queue, lists them while active, and persists their step across reopen", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-ledger-"));
    const store = openStore(dir);
    const ledger = store.actions;
    ledger.plan([action("kubernetes:e1", "kubernetes"), action("h1")], 1);
    expect(ledger.nextPending(["hook", "approval"])?.actionKey).toBe("h1");
    ledger.setStatus("h1", "succeeded", "", 2);
    expect(ledger.nextPending(["hook", "approval"])).toBeUndefined();
    expect(ledger.activeOfKind("kubernetes").map((r) => r.actionKey)).toEqual(["kubernetes:e1"]);
    expect(ledger.getStep("kubernetes:e1")).toBeUndefined();
    ledger.setStep("kubernetes:e1", '{"phase":"marking"}');
    ledger.setStep("kubernetes:e1", '{"phase":"draining"}');
    store.close();
    const reopened = openStore(dir);
    expect(reopened.actions.getStep("kubernetes:e1")).toBe('{"phase":"draining"}');
    reopened.actions.setStatus("kubernetes:e1", "succeeded", "uncordoned", 3);
    expect(reopened.actions.activeOfKind("kubernetes")).toEqual([]);
    expect(reopened.actions.forgetFinished(10)).toBe(2);
    expect(reopened.actions.getStep("kubernetes:e1")).toBeUndefined();
    reopened.close();
  });

  it("holds an event's approval: a gated row waits until every hold is released, and a finished row releases its own hold", () => {
    const store = openStore();
    const ledger = store.actions;
    ledger.plan([{ ...action("approval:e1", "approval"), gated: true }, action("hook:e1"), action("other")], 1);
    ledger.hold("e1", { holder: "hook:e1" }, 1);
    ledger.hold("e1", { holder: "kubernetes:e1", mayApprove: true }, 1);
    expect(ledger.nextPending(["approval"])).toBeUndefined();
    expect(ledger.nextPending(["approval", "hook"])?.actionKey).toBe("hook:e1");
    ledger.setStatus("hook:e1", "running", "", 2, true);
    expect(ledger.holdsOn("e1").map((h) => h.verdict)).toEqual([undefined, undefined]);
    ledger.setStatus("hook:e1", "failed", "exit 3", 3);
    expect(ledger.holdsOn("e1")).toMatchObject([
      { holder: "hook:e1", verdict: "failed", reason: "exit 3" },
      { holder: "kubernetes:e1", mayApprove: true, verdict: undefined },
    ]);
    expect(ledger.nextPending(["approval"])).toBeUndefined();
    ledger.release("e1", "kubernetes:e1", "approve", "drained", 4);
    expect(ledger.nextPending(["approval"])).toMatchObject({ actionKey: "approval:e1", gated: true });
    expect(ledger.get("hook:e1")?.gated).toBe(false);
    ledger.release("e1", "kubernetes:e1", "done", "again", 5);
    ledger.hold("e1", { holder: "kubernetes:e1" }, 5);
    expect(ledger.holdsOn("e1")[1]).toMatchObject({ verdict: "approve", reason: "drained" });
    store.close();
  });

  it("plans each key once, hands out pending actions in plan order, counts attempts and keeps reasons", () => {
    const store = openStore();
    const ledger = store.actions;
    expect(ledger.plan([action("b"), action("a"), action("approval:e1", "approval")], 1)).toBe(3);
    expect(ledger.plan([action("a")], 2)).toBe(0);
    expect(ledger.nextPending(["hook", "approval"])?.actionKey).toBe("b");
    ledger.setStatus("b", "running", "", 3, true);
    expect(ledger.nextPending(["hook", "approval"])?.actionKey).toBe("a");
    ledger.setStatus("b", "failed", "exit 3", 4);
    expect(ledger.get("b")).toMatchObject({
      status: "failed",
      reason: "exit 3",
      attempts: 1,
      updatedMs: 4,
      createdMs: 1,
      gated: false,
    });
    expect(ledger.forEvent("e1", "Scheduled", "hook").map((r) => r.actionKey)).toEqual(["b", "a"]);
    expect(ledger.withStatus("failed").map((r) => r.actionKey)).toEqual(["b"]);
    store.close();
  });

  it("keeps the planned position monotonic and everything across a reopen; forgets only old finished actions", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-ledger-"));
    const store = openStore(dir);
    expect(store.actions.plannedThroughSeq()).toBeUndefined();
    store.actions.setPlannedThroughSeq(7);
    store.actions.setPlannedThroughSeq(5);
    store.actions.plan([action("old"), action("running"), action("new")], 1);
    store.actions.setStatus("old", "succeeded", "", 10);
    store.actions.setStatus("running", "running", "", 10, true);
    store.actions.setStatus("new", "succeeded", "", 1000);
    store.close();
    const reopened = openStore(dir);
    expect(reopened.actions.plannedThroughSeq()).toBe(7);
    expect(reopened.actions.forgetFinished(500)).toBe(1);
    expect(["old", "running", "new"].map((k) => reopened.actions.get(k)?.status)).toEqual([
      undefined,
      "running",
      "succeeded",
    ]);
    reopened.close();
  });

  it("commits an action's new state and its outbox record in one transaction, or neither", () => {
    const store = openStore();
    const ledger = store.actions;
    ledger.plan([action("h")], 1);
    const head = store.headSeq();
    expect(() =>
      ledger.transaction(() => {
        ledger.setStatus("h", "succeeded", "", 2);
        store.append([transition()], 2);
        throw new Error("crash before commit");
      }),
    ).toThrow("crash before commit");
    expect(ledger.get("h")?.status).toBe("pending");
    expect(store.headSeq()).toBe(head);
    ledger.transaction(() => {
      ledger.setStatus("h", "succeeded", "", 3);
      store.append([transition()], 3);
    });
    expect(ledger.get("h")?.status).toBe("succeeded");
    expect(store.readAfter(head, 10)).toHaveLength(1);
    store.close();
  });

  it("reads the collector's committed status of an event", () => {
    const store = openStore();
    expect(store.actions.committedEventStatus("e1")).toBeUndefined();
    const state = { ...emptyCollectorState(), lastIncarnation: 1, lastDocumentHash: "h", lastSuccessMs: 1 };
    state.events.set("e1", { status: "Scheduled", fields: transition(), lastSeenMs: 1 });
    store.commitDocument(state, [], 1);
    expect(store.actions.committedEventStatus("e1")).toBe("Scheduled");
    store.close();
  });

  it("reads an event's NotBefore as the last document listed it, and approvals recorded before the ledger", () => {
    const store = openStore();
    const state = { ...emptyCollectorState(), lastIncarnation: 1, lastDocumentHash: "h", lastSuccessMs: 1 };
    state.events.set("e1", {
      status: "Scheduled",
      fields: transition({ NotBefore: "Mon, 07 Dec 2026 10:00:00 GMT" }),
      lastSeenMs: 1,
    });
    state.events.set("e2", { status: "Scheduled", fields: transition({ NotBefore: "" }), lastSeenMs: 1 });
    state.events.set("e3", { status: "Scheduled", fields: transition({ NotBefore: null }), lastSeenMs: 1 });
    store.commitDocument(state, [], 1);
    expect(["e1", "e2", "e3", "e4"].map((k) => store.actions.committedEventNotBefore(k))).toEqual([
      "Mon, 07 Dec 2026 10:00:00 GMT",
      undefined,
      undefined,
      undefined,
    ]);
    expect(store.actions.legacyApproved("e1")).toBe(false);
    store.opened.meta.set("approved:e1", true);
    expect(store.actions.legacyApproved("e1")).toBe(true);
    expect(store.actions.legacyApproved("e2")).toBe(false);
    store.close();
  });

  it("releases a hold once, by its holder only; a finished row releases its own: done when it succeeded, else failed", () => {
    const store = openStore();
    const ledger = store.actions;
    const rows = ["ok", "approved", "bad", "skipped", "again"].map((key) => ({ ...action(key), eventKey: `e-${key}` }));
    ledger.plan(rows, 1);
    for (const r of rows)
      ledger.hold(r.eventKey, { holder: r.actionKey, ...(r.actionKey === "ok" ? { mayApprove: true } : {}) }, 2);
    ledger.hold("e-ok", { holder: "ok" }, 3); // a hold already placed stays as it was
    ledger.setStatus("ok", "succeeded", "", 4, true);
    ledger.setStatus("approved", "approved", "", 4);
    ledger.setStatus("bad", "failed", "exit 1", 4);
    ledger.setStatus("skipped", "skipped", "not elected", 4);
    ledger.setStatus("again", "running", "", 4, true);
    ledger.setStatus("again", "pending", "", 5);
    expect(rows.map((r) => ledger.holdsOn(r.eventKey))).toEqual([
      [{ eventKey: "e-ok", holder: "ok", mayApprove: true, verdict: "done", reason: "" }],
      [{ eventKey: "e-approved", holder: "approved", mayApprove: false, verdict: "done", reason: "" }],
      [{ eventKey: "e-bad", holder: "bad", mayApprove: false, verdict: "failed", reason: "exit 1" }],
      [{ eventKey: "e-skipped", holder: "skipped", mayApprove: false, verdict: "failed", reason: "not elected" }],
      [{ eventKey: "e-again", holder: "again", mayApprove: false, verdict: undefined, reason: "" }],
    ]);
    expect([ledger.get("ok")?.attempts, ledger.get("again")?.attempts, ledger.get("bad")?.attempts]).toEqual([1, 1, 0]);
    ledger.release("e-again", "someone else", "approve", "no", 6);
    ledger.release("e-again", "again", "decline", "another VM approves", 6);
    ledger.release("e-again", "again", "approve", "too late", 7);
    ledger.release("e-ok", "ok", "decline", "too late", 7);
    expect(ledger.holdsOn("e-again")).toEqual([
      { eventKey: "e-again", holder: "again", mayApprove: false, verdict: "decline", reason: "another VM approves" },
    ]);
    expect(ledger.holdsOn("e-ok")[0]?.verdict).toBe("done");
    expect(ledger.withStatus("failed").map((r) => r.actionKey)).toEqual(["bad"]);
    expect(ledger.forEvent("e-bad", "Scheduled", "hook").map((r) => r.reason)).toEqual(["exit 1"]);
    expect(ledger.forEvent("e-bad", "Started", "hook")).toEqual([]);
    expect(ledger.forEvent("e-bad", "Scheduled", "approval")).toEqual([]);
    store.close();
  });

  it("forgets the steps of forgotten rows and the released holds of events left without rows, nothing else", () => {
    const store = openStore();
    const ledger = store.actions;
    ledger.plan(
      [
        { ...action("gone"), eventKey: "e-gone" },
        { ...action("kept"), eventKey: "e-kept" },
      ],
      1,
    );
    ledger.setStep("gone", "{}");
    ledger.setStep("kept", "{}");
    ledger.hold("e-gone", { holder: "gone" }, 1);
    ledger.hold("e-gone", { holder: "still holding" }, 1);
    ledger.hold("e-kept", { holder: "kept" }, 1);
    ledger.setStatus("gone", "succeeded", "", 10);
    ledger.setStatus("kept", "succeeded", "", 100);
    expect(ledger.forgetFinished(10)).toBe(0);
    expect(ledger.getStep("gone")).toBe("{}");
    expect(ledger.forgetFinished(11)).toBe(1);
    expect([ledger.getStep("gone"), ledger.getStep("kept")]).toEqual([undefined, "{}"]);
    expect(ledger.holdsOn("e-gone").map((h) => h.holder)).toEqual(["still holding"]);
    expect(ledger.holdsOn("e-kept").map((h) => h.verdict)).toEqual(["done"]);
    store.close();
  });
});
