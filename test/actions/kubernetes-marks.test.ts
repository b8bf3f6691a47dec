// sef's marks on its Node (pure, plain values): the annotation key and JSON of each event's mark, reading today's and
// the previous release's keys back, the mark and drained patches, the undo (what is never touched, when the cordon is
// lifted) and the reconcile decision (which marks a document leaves orphaned).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  aksAutoDrainTaintKey,
  decodeMark,
  drainedPatch,
  encodeMark,
  legacyAnnotationKeys,
  markAnnotationKey,
  markAnnotationPrefix,
  markOf,
  markPatch,
  marksOn,
  orphanedMark,
  undoMarks,
  type MarkValue,
} from "../../src/agent/actions/kubernetes/marks.js";
import { taintKeyFor, type NodeView, type Taint } from "../../src/agent/actions/kubernetes/plan.js";
import { propertyParams } from "../helpers/seed.js";

const eventId = "5DD55A71-95BE-4B7E-B8A2-9C4A2F7C8A11";
const otherId = "0A1B2C3D-0000-4000-8000-000000000002";
const event = { EventId: eventId, EventType: "Reboot", NotBefore: "2024-01-01T00:15:00.000Z" };
const nowIso = "2024-01-01T00:00:01.000Z";
const operatorTaint: Taint = { key: "dedicated", value: "gpu", effect: "NoSchedule" };
const aksTaint: Taint = { key: aksAutoDrainTaintKey, effect: "NoSchedule" };
const handlerTaint: Taint = { key: "example.com/maintenance", value: "soon", effect: "NoSchedule" };

const node = (over: Partial<NodeView> = {}): NodeView => ({
  name: "aks-np-vmss000000",
  providerID:
    "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/np-vmss/virtualMachines/0",
  unschedulable: false,
  taints: [],
  annotations: {},
  ...over,
});

/** The node after a patch (a JSON merge patch: the taint list replaced, annotations set or removed). */
function applied(before: NodeView, patch: ReturnType<typeof markPatch>): NodeView {
  const annotations = { ...before.annotations };
  for (const [key, value] of Object.entries(patch.annotations)) {
    if (value === null) delete annotations[key];
    else annotations[key] = value;
  }
  return { ...before, taints: patch.taints, annotations, unschedulable: patch.unschedulable ?? before.unschedulable };
}

const mark = (over: Partial<MarkValue> = {}): MarkValue => ({
  eventId,
  eventType: "Reboot",
  notBefore: event.NotBefore,
  policy: "drain-then-approve",
  cordoned: true,
  markedAt: nowIso,
  ...over,
});
const sefTaint = (id = eventId, type = "Reboot", effect = "NoSchedule"): Taint => ({
  key: taintKeyFor(type),
  value: id,
  effect,
});
/** A node sef marked for `id` (its taint and annotation). */
const marked = (id: string, value: Partial<MarkValue>, over: Partial<NodeView> = {}): NodeView =>
  node({
    taints: [sefTaint(id)],
    annotations: { [markAnnotationKey(id)]: encodeMark(mark({ eventId: id, ...value })) },
    ...over,
  });

describe("the mark's annotation", () => {
  it("one key per event under sef's own prefix, a name Kubernetes accepts (the taint-safe EventId, at most 63 characters)", () => {
    expect(markAnnotationKey(eventId)).toBe(`event.sef.azure.com/${eventId}`);
    const qualifiedName = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 120 }), (id) => {
        const key = markAnnotationKey(id);
        expect(key.startsWith(markAnnotationPrefix)).toBe(true);
        expect(key.slice(markAnnotationPrefix.length)).toMatch(qualifiedName);
      }),
      propertyParams(3501, 300),
    );
  });

  it("its JSON reads back as written; JSON that is not sef's is no mark value", () => {
    fc.assert(
      fc.property(
        fc.record({
          eventId: fc.string({ minLength: 1 }),
          eventType: fc.string(),
          notBefore: fc.option(fc.string({ minLength: 1 }), { nil: null }),
          policy: fc.constantFrom("taint", "cordon", "drain", "drain-then-approve"),
          cordoned: fc.boolean(),
          markedAt: fc.string(),
        }),
        fc.option(fc.string({ minLength: 1 }), { nil: undefined }),
        (value, drainedAt) => {
          const written: MarkValue = { ...value, ...(drainedAt !== undefined ? { drainedAt } : {}) };
          expect(decodeMark(encodeMark(written))).toEqual(written);
        },
      ),
      propertyParams(3502, 300),
    );
    expect(decodeMark("true")).toBeUndefined();
    expect(decodeMark("{not json")).toBeUndefined();
    expect(decodeMark(JSON.stringify({ eventType: "Reboot" }))).toBeUndefined();
    for (const notAMark of [
      "null",
      '"5DD55A71"',
      "[]",
      "42",
      JSON.stringify({ eventId: "" }),
      JSON.stringify({ eventId: 7 }),
    ])
      expect(decodeMark(notAMark)).toBeUndefined();
  });

  it("a value missing fields, or with empty ones, reads with none: no type, NotBefore, policy, cordon claim, time or drain", () => {
    const none = { eventId, eventType: "", notBefore: null, policy: "", cordoned: false, markedAt: "" };
    expect(decodeMark(JSON.stringify({ eventId }))).toEqual(none);
    expect(
      decodeMark(
        JSON.stringify({
          eventId,
          notBefore: "",
          drainedAt: "",
          cordoned: "true",
          eventType: 1,
          policy: null,
          markedAt: false,
        }),
      ),
    ).toEqual(none);
  });
});

describe("marking", () => {
  it("a schedulable node: the taint, the cordon and the mark saying sef cordoned it, in one patch; the node's own taints kept", () => {
    const patch = markPatch(node({ taints: [operatorTaint] }), event, "drain-then-approve", true, nowIso);
    expect(patch.taints).toEqual([
      operatorTaint,
      { key: "sef.azure.com/scheduled-event-reboot", value: eventId, effect: "NoSchedule", timeAdded: nowIso },
    ]);
    expect(patch.unschedulable).toBe(true);
    expect(Object.keys(patch.annotations)).toEqual([markAnnotationKey(eventId)]);
    expect(decodeMark(patch.annotations[markAnnotationKey(eventId)]!)).toEqual(mark({ cordoned: true }));
  });

  it("an operator's cordon and AKS node auto-drain's cordon are never claimed", () => {
    expect(aksAutoDrainTaintKey).toBe("remediator.kubernetes.azure.com/unschedulable");
    for (const before of [node({ unschedulable: true }), node({ unschedulable: true, taints: [aksTaint] })]) {
      const value = decodeMark(
        markPatch(before, event, "drain", true, nowIso).annotations[markAnnotationKey(eventId)]!,
      );
      expect(value?.cordoned).toBe(false);
    }
  });

  it("sef's own cordon is claimed again: another event's, or this event's from before a crash (its first time and drain kept)", () => {
    const other = marked(otherId, { cordoned: true }, { unschedulable: true });
    expect(markOf(applied(other, markPatch(other, event, "drain", true, nowIso)), eventId)?.cordoned).toBe(true);
    const again = marked(
      eventId,
      { cordoned: true, markedAt: "2024-01-01T00:00:00.000Z", drainedAt: "2024-01-01T00:05:00.000Z" },
      { unschedulable: true },
    );
    const value = decodeMark(markPatch(again, event, "drain", true, nowIso).annotations[markAnnotationKey(eventId)]!);
    expect(value).toMatchObject({
      cordoned: true,
      markedAt: "2024-01-01T00:00:00.000Z",
      drainedAt: "2024-01-01T00:05:00.000Z",
    });
    expect(markPatch(again, event, "drain", true, nowIso).taints).toHaveLength(1);
  });

  it("taint-only leaves unschedulable alone and claims nothing; a second event gets its own annotation beside the first", () => {
    const once = markPatch(node(), event, "taint", false, nowIso);
    expect(once).not.toHaveProperty("unschedulable");
    expect(markOf(applied(node(), once), eventId)).toMatchObject({ cordoned: false, policy: "taint" });
    const both = applied(
      marked(otherId, { cordoned: true }, { unschedulable: true }),
      markPatch(marked(otherId, { cordoned: true }, { unschedulable: true }), event, "drain", true, nowIso),
    );
    expect(
      marksOn(both)
        .map((m) => m.eventId)
        .sort(),
    ).toEqual([otherId, eventId].sort());
  });

  it("sef's taint is added once: kept when the node has it, added beside another event's or another handler's taint with the same EventId", () => {
    const has = node({ taints: [operatorTaint, sefTaint()] });
    expect(markPatch(has, event, "taint", false, nowIso).taints).toEqual([operatorTaint, sefTaint()]);
    const ours = { ...sefTaint(), timeAdded: nowIso };
    for (const other of [sefTaint(otherId), { key: "example.com/maintenance", value: eventId, effect: "NoSchedule" }]) {
      expect(markPatch(node({ taints: [other] }), event, "taint", false, nowIso).taints).toEqual([other, ours]);
    }
  });

  it("the mark's annotation is rewritten under its own key, whatever the case the event's EventId comes in now", () => {
    const upper = marked(eventId, { cordoned: true }, { unschedulable: true });
    const patch = markPatch(upper, { ...event, EventId: eventId.toLowerCase() }, "drain", true, nowIso);
    expect(Object.keys(patch.annotations)).toEqual([markAnnotationKey(eventId)]);
    expect(
      Object.keys(
        drainedPatch(upper, { ...event, EventId: eventId.toLowerCase() }, "drain", false, nowIso).annotations,
      ),
    ).toEqual([markAnnotationKey(eventId)]);
  });

  it("after a complete drain: the mark says when, its cordon claim kept, and the NoExecute taint only when asked", () => {
    const unclaimed = marked(eventId, { cordoned: false }, { unschedulable: true });
    expect(markOf(applied(unclaimed, drainedPatch(unclaimed, event, "drain", false, nowIso)), eventId)).toMatchObject({
      cordoned: false,
      drainedAt: nowIso,
    });
    // No mark left on the node (taken off by hand): the drained mark claims no cordon and is marked now.
    expect(
      decodeMark(drainedPatch(node(), event, "drain", false, nowIso).annotations[markAnnotationKey(eventId)]!),
    ).toEqual(mark({ policy: "drain", cordoned: false, drainedAt: nowIso }));
    const before = marked(eventId, { cordoned: true }, { unschedulable: true });
    const patch = drainedPatch(before, event, "drain-then-approve", false, nowIso);
    expect(patch.taints).toEqual(before.taints);
    expect(markOf(applied(before, patch), eventId)).toMatchObject({ cordoned: true, drainedAt: nowIso });
    expect(drainedPatch(before, event, "drain", true, nowIso).taints.map((t) => t.effect)).toEqual([
      "NoSchedule",
      "NoExecute",
    ]);
  });
});

describe("reading marks back", () => {
  it("the previous release's single-event keys are one mark (its cordon flag included); a taint alone is a mark too", () => {
    const legacy = node({
      unschedulable: true,
      taints: [sefTaint(), sefTaint(otherId, "Redeploy")],
      annotations: {
        [legacyAnnotationKeys.eventId]: eventId,
        [legacyAnnotationKeys.eventType]: "Reboot",
        [legacyAnnotationKeys.notBefore]: event.NotBefore,
        [legacyAnnotationKeys.cordoned]: "true",
        unrelated: "x",
      },
    });
    const marks = marksOn(legacy);
    expect(marks.find((m) => m.eventId === eventId)).toMatchObject({
      eventType: "Reboot",
      cordoned: true,
      annotationKeys: Object.values(legacyAnnotationKeys),
      taints: [sefTaint()],
    });
    expect(marks.find((m) => m.eventId === otherId)).toMatchObject({
      eventType: "Redeploy",
      cordoned: false,
      annotationKeys: [],
    });
  });

  it("an event's mark is found whatever the case of its EventId; another event's mark is not it", () => {
    expect(markOf(marked(eventId, {}), eventId.toLowerCase())?.eventId).toBe(eventId);
    expect(markOf(marked(otherId, {}), eventId)).toBeUndefined();
  });

  it("annotation and taint of one event are one mark, named as the annotation spells the EventId, each field from whichever says it", () => {
    const upper = node({
      taints: [sefTaint(eventId.toLowerCase())],
      annotations: { [markAnnotationKey(eventId)]: encodeMark(mark({ drainedAt: nowIso })) },
    });
    expect(marksOn(upper)).toEqual([
      {
        ...mark(),
        drainedAt: nowIso,
        annotationKeys: [markAnnotationKey(eventId)],
        taints: [sefTaint(eventId.toLowerCase())],
      },
    ]);
    // An EventId that is not taint-safe: the key holds its taint-safe form, the mark the EventId itself.
    const odd = "event:42";
    const oddNode = node({
      taints: [sefTaint("event-42")],
      annotations: { [markAnnotationKey(odd)]: encodeMark(mark({ eventId: odd })) },
    });
    expect(marksOn(oddNode).map((m) => [m.eventId, m.taints.length])).toEqual([[odd, 1]]);
    // A value sef cannot read: the key names the event, the taint its type.
    const unreadable = node({
      taints: [sefTaint(eventId, "Redeploy")],
      annotations: { [markAnnotationKey(eventId)]: "{oops" },
    });
    expect(markOf(unreadable, eventId)).toEqual({
      eventId,
      eventType: "Redeploy",
      notBefore: null,
      policy: "",
      cordoned: false,
      markedAt: "",
      drainedAt: null,
      annotationKeys: [markAnnotationKey(eventId)],
      taints: [sefTaint(eventId, "Redeploy")],
    });
  });

  it("the previous release's keys say what they hold and no more: type, NotBefore and cordon flag each absent or present", () => {
    const full = node({
      annotations: {
        [legacyAnnotationKeys.eventId]: eventId,
        [legacyAnnotationKeys.eventType]: "Freeze",
        [legacyAnnotationKeys.notBefore]: event.NotBefore,
        [legacyAnnotationKeys.cordoned]: "true",
      },
    });
    expect(marksOn(full)).toEqual([
      {
        eventId,
        eventType: "Freeze",
        notBefore: event.NotBefore,
        policy: "",
        cordoned: true,
        markedAt: "",
        drainedAt: null,
        annotationKeys: Object.values(legacyAnnotationKeys),
        taints: [],
      },
    ]);
    const bare = node({
      annotations: { [legacyAnnotationKeys.eventId]: eventId, [legacyAnnotationKeys.notBefore]: "" },
    });
    expect(marksOn(bare)).toEqual([
      {
        eventId,
        eventType: "",
        notBefore: null,
        policy: "",
        cordoned: false,
        markedAt: "",
        drainedAt: null,
        annotationKeys: [legacyAnnotationKeys.eventId, legacyAnnotationKeys.notBefore],
        taints: [],
      },
    ]);
  });

  it("a taint of sef's without a value is a mark of no known event", () => {
    const valueless = { key: taintKeyFor("Reboot"), effect: "NoSchedule" };
    expect(marksOn(node({ taints: [valueless] }))).toEqual([
      {
        eventId: "",
        eventType: "Reboot",
        notBefore: null,
        policy: "",
        cordoned: false,
        markedAt: "",
        drainedAt: null,
        annotationKeys: [],
        taints: [valueless],
      },
    ]);
  });
});

describe("the exclude-from-external-load-balancers label", () => {
  const markedWithout = (id: string): NodeView =>
    node({ taints: [sefTaint(id)], annotations: { [markAnnotationKey(id)]: encodeMark(mark({ eventId: id })) } });
  const label = "node.kubernetes.io/exclude-from-external-load-balancers";
  const labelled = (patch: ReturnType<typeof markPatch>, before: NodeView): NodeView => {
    const labels: Record<string, string> = { ...before.labels };
    for (const [key, value] of Object.entries(patch.labels ?? {}))
      if (value === null) delete labels[key];
      else labels[key] = value;
    return { ...applied(before, patch), labels };
  };

  it("is put on with the mark and claimed; off (setting false) neither; someone else's is never claimed", () => {
    const on = markPatch(node(), event, "cordon", true, nowIso, true);
    expect(on.labels).toEqual({ [label]: "true" });
    expect(decodeMark(on.annotations[markAnnotationKey(eventId)]!)).toMatchObject({ excludedLb: true });
    const off = markPatch(node(), event, "cordon", true, nowIso);
    expect(off).not.toHaveProperty("labels");
    expect(decodeMark(off.annotations[markAnnotationKey(eventId)]!)).not.toHaveProperty("excludedLb");
    const theirs = markPatch(node({ labels: { [label]: "" } }), event, "cordon", true, nowIso, true);
    expect(theirs).not.toHaveProperty("labels");
    expect(decodeMark(theirs.annotations[markAnnotationKey(eventId)]!)).not.toHaveProperty("excludedLb");
  });

  it("goes with the last of sef's marks that claims it, never while another claims it, never when only someone else's", () => {
    const first = node();
    const afterFirst = labelled(markPatch(first, event, "cordon", true, nowIso, true), first);
    const second = { ...event, EventId: otherId };
    const afterSecond = labelled(markPatch(afterFirst, second, "cordon", true, nowIso, true), afterFirst);
    expect(markOf(afterSecond, otherId)?.excludedLb).toBe(true); // sef's label: the second event claims it too
    expect(undoMarks(afterSecond, (m) => m.eventId === eventId).patch).not.toHaveProperty("labels");
    expect(undoMarks(afterSecond, () => true).patch?.labels).toEqual({ [label]: null });
    const drained = drainedPatch(afterFirst, event, "drain", false, nowIso);
    expect(decodeMark(drained.annotations[markAnnotationKey(eventId)]!)).toMatchObject({ excludedLb: true });
    const theirs = node({ labels: { [label]: "true" } });
    const afterTheirs = labelled(markPatch(theirs, event, "cordon", true, nowIso, true), theirs);
    expect(undoMarks(afterTheirs, () => true).patch).not.toHaveProperty("labels");
    const gone = { ...afterFirst, labels: {} }; // someone took it off meanwhile: nothing to remove
    expect(undoMarks(gone, () => true).patch).not.toHaveProperty("labels");
  });

  it("a mark that does not claim the label neither holds it nor claims it for another event; the claim is read from any of the event's annotations", () => {
    const first = node();
    const afterFirst = labelled(markPatch(first, event, "cordon", true, nowIso, true), first);
    const second = { ...event, EventId: otherId };
    // The second event marked with the setting off: its mark does not claim the label.
    const both = labelled(markPatch(afterFirst, second, "cordon", true, nowIso), afterFirst);
    expect(markOf(both, otherId)).not.toHaveProperty("excludedLb");
    // The claiming mark goes: the label goes too, though a mark that never claimed it stays.
    expect(undoMarks(both, (m) => m.eventId === eventId).patch?.labels).toEqual({ [label]: null });
    // Both go at once (one claims, one does not): the label goes.
    expect(undoMarks(both, () => true).patch?.labels).toEqual({ [label]: null });
    // Someone else's label and a mark of sef's that does not claim it: a new mark does not claim it either.
    const theirs = { ...markedWithout(otherId), labels: { [label]: "true" } };
    expect(markPatch(theirs, event, "cordon", true, nowIso, true)).not.toHaveProperty("labels");
    expect(
      decodeMark(markPatch(theirs, event, "cordon", true, nowIso, true).annotations[markAnnotationKey(eventId)]!),
    ).not.toHaveProperty("excludedLb");
    // Two annotations of one event (its id in two cases): a claim in the second one read still counts.
    const twoKeys = node({
      labels: { [label]: "true" },
      annotations: {
        [markAnnotationKey(eventId)]: encodeMark(mark()),
        [markAnnotationKey(eventId.toLowerCase())]: encodeMark(
          mark({ eventId: eventId.toLowerCase(), excludedLb: true }),
        ),
      },
    });
    expect(markOf(twoKeys, eventId)?.excludedLb).toBe(true);
    expect(undoMarks(twoKeys, () => true).patch?.labels).toEqual({ [label]: null });
  });
});

describe("the undo", () => {
  it("takes the event's taints (both effects) and annotation off, lifts sef's cordon, and touches nothing else", () => {
    const before = node({
      unschedulable: true,
      taints: [operatorTaint, handlerTaint, sefTaint(), sefTaint(eventId, "Reboot", "NoExecute")],
      annotations: { [markAnnotationKey(eventId)]: encodeMark(mark()), "example.com/owner": "team-a" },
    });
    const decision = undoMarks(before, (m) => m.eventId === eventId);
    expect(decision).toMatchObject({ uncordon: true, keptCordonedBecause: undefined });
    expect(decision.patch).toEqual({
      taints: [operatorTaint, handlerTaint],
      unschedulable: false,
      annotations: { [markAnnotationKey(eventId)]: null },
    });
  });

  it("keeps an operator's cordon, AKS node auto-drain's, and sef's own while another event of sef's claims it", () => {
    const operators = undoMarks(marked(eventId, { cordoned: false }, { unschedulable: true }), () => true);
    expect(operators).toMatchObject({ uncordon: false, keptCordonedBecause: expect.stringMatching(/operator/) });
    expect(operators.patch).not.toHaveProperty("unschedulable");
    const aks = undoMarks(
      marked(eventId, { cordoned: true }, { unschedulable: true, taints: [sefTaint(), aksTaint] }),
      (m) => m.eventId === eventId,
    );
    expect(aks).toMatchObject({ uncordon: false, keptCordonedBecause: expect.stringContaining(aksAutoDrainTaintKey) });
    expect(aks.patch?.taints).toEqual([aksTaint]);
    const two = node({
      unschedulable: true,
      taints: [sefTaint(), sefTaint(otherId)],
      annotations: {
        [markAnnotationKey(eventId)]: encodeMark(mark()),
        [markAnnotationKey(otherId)]: encodeMark(mark({ eventId: otherId })),
      },
    });
    expect(undoMarks(two, (m) => m.eventId === eventId)).toMatchObject({
      uncordon: false,
      keptCordonedBecause: expect.stringMatching(/another event/),
    });
    expect(undoMarks(two, () => true).uncordon).toBe(true);
  });

  it("the previous release's keys go with their event; a mark sef cannot read is taken off without lifting the cordon", () => {
    const legacy = node({
      unschedulable: true,
      taints: [sefTaint()],
      annotations: { [legacyAnnotationKeys.eventId]: eventId, [legacyAnnotationKeys.cordoned]: "true" },
    });
    expect(undoMarks(legacy, (m) => m.eventId === eventId)).toMatchObject({
      uncordon: true,
      patch: { annotations: { [legacyAnnotationKeys.eventId]: null, [legacyAnnotationKeys.cordoned]: null } },
    });
    const unreadable = node({ unschedulable: true, annotations: { [markAnnotationKey(eventId)]: "{oops" } });
    expect(undoMarks(unreadable, () => true)).toMatchObject({
      uncordon: false,
      patch: { annotations: { [markAnnotationKey(eventId)]: null } },
    });
  });

  it("nothing of the event's on the node: no patch", () => {
    expect(undoMarks(node({ unschedulable: true, taints: [operatorTaint] }), () => true)).toEqual({
      patch: undefined,
      undone: [],
      uncordon: false,
      keptCordonedBecause: undefined,
    });
  });
});

describe("reconciling with a document", () => {
  it("orphaned: a mark of an event neither listed nor owned by a node action, case-insensitively; a lone legacy cordon flag", () => {
    const orphaned = orphanedMark([eventId.toLowerCase()], [otherId]);
    const marks = marksOn(
      node({
        taints: [sefTaint(), sefTaint(otherId), sefTaint("11111111-2222-4333-8444-555555555555")],
        annotations: { [legacyAnnotationKeys.cordoned]: "true" },
      }),
    );
    expect(
      marks
        .filter(orphaned)
        .map((m) => m.eventId)
        .sort(),
    ).toEqual(["", "11111111-2222-4333-8444-555555555555"]);
  });

  it("a mark of no known event is no event's: not even of one whose EventId has no letter or digit (its taint value is 'unknown')", () => {
    const punctuation = "{}";
    const both = node({
      unschedulable: true,
      taints: [sefTaint("unknown")],
      annotations: { [legacyAnnotationKeys.cordoned]: "true" },
    });
    expect(marksOn(both).map((m) => [m.eventId, m.cordoned])).toEqual([
      ["", true],
      ["unknown", false],
    ]);
    expect(markOf(both, punctuation)).toMatchObject({ eventId: "unknown", cordoned: false });
    expect(
      marksOn(both)
        .filter(orphanedMark([punctuation], []))
        .map((m) => m.eventId),
    ).toEqual([""]);
  });

  it("whatever sef's marks and the node's own: only sef's orphaned marks go, and the cordon is lifted exactly when sef may", () => {
    const ids = [
      "A0000000-0000-4000-8000-000000000001",
      "B0000000-0000-4000-8000-000000000002",
      "C0000000-0000-4000-8000-000000000003",
    ];
    const sefMark = fc.record({
      id: fc.constantFrom(...ids),
      cordoned: fc.boolean(),
      type: fc.constantFrom("Reboot", "Redeploy", "Preempt"),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(sefMark, { selector: (m) => m.id, maxLength: 3 }),
        fc.subarray(ids),
        fc.subarray([operatorTaint, handlerTaint, aksTaint]),
        fc.boolean(),
        (sef, listed, foreign, unschedulable) => {
          const before = node({
            unschedulable,
            taints: [...foreign, ...sef.map((m) => sefTaint(m.id, m.type))],
            annotations: {
              "example.com/owner": "a",
              ...Object.fromEntries(
                sef.map((m) => [
                  markAnnotationKey(m.id),
                  encodeMark(mark({ eventId: m.id, eventType: m.type, cordoned: m.cordoned })),
                ]),
              ),
            },
          });
          const decision = undoMarks(before, orphanedMark(listed, []));
          const gone = sef.filter((m) => !listed.includes(m.id));
          expect(decision.undone.map((m) => m.eventId).sort()).toEqual(gone.map((m) => m.id).sort());
          if (decision.patch === undefined) return;
          const after = applied(before, decision.patch);
          expect(after.taints).toEqual([
            ...foreign,
            ...sef.filter((m) => listed.includes(m.id)).map((m) => sefTaint(m.id, m.type)),
          ]);
          expect(after.annotations["example.com/owner"]).toBe("a");
          const mayLift =
            unschedulable &&
            gone.some((m) => m.cordoned) &&
            !sef.some((m) => listed.includes(m.id) && m.cordoned) &&
            !foreign.includes(aksTaint);
          expect(decision.uncordon).toBe(mayLift);
          expect(after.unschedulable).toBe(unschedulable && !mayLift);
        },
      ),
      propertyParams(3503, 500),
    );
  });
});
