// Pure logic of the kubernetes action: policy resolution, drain start and deadline arithmetic, grace periods, which pods
// a drain evicts, the taint/annotation patches and the undo decisions, the PDB backoff and the node identity check.
import { describe, expect, it } from "vitest";
import { kubernetesSettingsSchema, policyFor, policyIncludes } from "../../src/agent/actions/kubernetes/settings.js";
import {
  annotationKeys,
  drainDeadlineMs,
  drainStartMs,
  gracePeriodSeconds,
  markPatch,
  nodeIsThisVm,
  noExecutePatch,
  pdbRetryDelayMs,
  podRef,
  selectEvictions,
  taintKeyFor,
  taintValueFor,
  undoPatch,
  type NodeView,
  type PodView,
} from "../../src/agent/actions/kubernetes/plan.js";
import { FakeClock } from "../helpers/fake-clock.js";

const defaults = kubernetesSettingsSchema.parse({});
const eventId = "5DD55A71-95BE-4B7E-B8A2-9C4A2F7C8A11";
const event = { EventId: eventId, EventType: "Reboot", NotBefore: "2024-01-01T00:15:00.000Z" };

const node = (over: Partial<NodeView> = {}): NodeView => ({
  name: "aks-np-0",
  providerID: "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/vmss/virtualMachines/0",
  unschedulable: false,
  taints: [],
  annotations: {},
  ...over,
});

const pod = (name: string, over: Partial<PodView> = {}): PodView => ({
  namespace: "apps",
  name,
  controllerKinds: ["ReplicaSet"],
  annotations: {},
  phase: "Running",
  terminationGracePeriodSeconds: 30,
  hasEmptyDir: false,
  terminating: false,
  ...over,
});

describe("policy", () => {
  it("defaults: Reboot, Redeploy, Preempt, Terminate drain then approve; Freeze and unknown types only forward", () => {
    expect(["Reboot", "Redeploy", "Preempt", "Terminate"].map((t) => policyFor(defaults, t))).toEqual(Array(4).fill("drain-then-approve"));
    expect(policyFor(defaults, "Freeze")).toBe("none");
    expect(policyFor(defaults, "LiveMigrate")).toBe("none");
  });

  it("matches EventType case-insensitively, and each type can be set (Freeze's opt-in taint)", () => {
    const settings = kubernetesSettingsSchema.parse({ policy: { Freeze: "taint", Reboot: "cordon", other: "drain" } });
    expect(policyFor(settings, "freeze")).toBe("taint");
    expect(policyFor(settings, "REBOOT")).toBe("cordon");
    expect(policyFor(settings, "Redeploy")).toBe("drain-then-approve");
    expect(policyFor(settings, "SomethingNew")).toBe("drain");
  });

  it("each policy includes the steps of the ones before it", () => {
    expect(policyIncludes("taint", "taint")).toBe(true);
    expect(policyIncludes("taint", "cordon")).toBe(false);
    expect(policyIncludes("cordon", "taint")).toBe(true);
    expect(policyIncludes("drain", "cordon")).toBe(true);
    expect(policyIncludes("drain", "drain-then-approve")).toBe(false);
    expect(policyIncludes("drain-then-approve", "drain")).toBe(true);
  });

  it("refuses an unknown policy and an unknown key, and gives every timing a default", () => {
    expect(kubernetesSettingsSchema.safeParse({ policy: { Reboot: "evict" } }).success).toBe(false);
    expect(kubernetesSettingsSchema.safeParse({ drainLead: 5 }).success).toBe(false);
    expect(defaults).toMatchObject({ drainLeadMs: 600_000, deadlineReserveMs: 5_000, pdbRetryInitialMs: 1_000, pdbRetryMaxMs: 15_000, evictEmptyDir: true, noExecuteTaintAfterDrain: false });
  });
});

describe("drain timing", () => {
  const clock = new FakeClock(Date.parse("2024-01-01T00:00:00.000Z"));

  it("a 15-minute notice waits until NotBefore minus the lead; a late one starts at once", async () => {
    const notBeforeMs = Date.parse(event.NotBefore);
    expect(drainStartMs(event.NotBefore, 600_000, clock.now())).toBe(notBeforeMs - 600_000);
    await clock.advance(10 * 60_000);
    expect(drainStartMs(event.NotBefore, 600_000, clock.now())).toBe(clock.now());
    expect(drainStartMs(null, 600_000, clock.now())).toBe(clock.now());
  });

  it("the deadline is NotBefore minus the reserve; with no NotBefore, 30 s from now", () => {
    expect(drainDeadlineMs(event.NotBefore, 5_000, 0)).toBe(Date.parse(event.NotBefore) - 5_000);
    expect(drainDeadlineMs(null, 5_000, 1_000)).toBe(31_000);
  });

  it("a Preempt's 30 s notice: the drain starts at once and every pod gets at most the 25 s left", () => {
    const nowMs = Date.parse("2024-01-01T00:00:00.000Z");
    const notBefore = new Date(nowMs + 30_000).toISOString();
    expect(drainStartMs(notBefore, defaults.drainLeadMs, nowMs)).toBe(nowMs);
    const left = drainDeadlineMs(notBefore, defaults.deadlineReserveMs, nowMs) - nowMs;
    expect(left).toBe(25_000);
    expect(gracePeriodSeconds(30, left)).toBe(25);
    expect(gracePeriodSeconds(10, left)).toBe(10);
    expect(gracePeriodSeconds(undefined, left)).toBe(25);
    expect(gracePeriodSeconds(undefined, 600_000)).toBe(30);
    expect(gracePeriodSeconds(120, 400)).toBe(1);
  });

  it("PDB refusals back off exponentially up to the maximum", () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => pdbRetryDelayMs(n, 1_000, 15_000))).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000]);
  });
});

describe("which pods a drain evicts", () => {
  it("all but DaemonSet pods, mirror pods, sef's own pod and finished pods; terminating pods are waited for", () => {
    const pods = [
      pod("web-1"),
      pod("ds-1", { controllerKinds: ["DaemonSet"] }),
      pod("etcd", { namespace: "kube-system", controllerKinds: [], annotations: { "kubernetes.io/config.mirror": "abc" } }),
      pod("sef-xyz", { namespace: "sef-system", controllerKinds: ["DaemonSet"] }),
      pod("sef-own", { namespace: "sef-system", controllerKinds: [] }),
      pod("job-1", { phase: "Succeeded", controllerKinds: ["Job"] }),
      pod("bare", { controllerKinds: [] }),
      pod("going", { terminating: true }),
      pod("cache", { hasEmptyDir: true }),
    ];
    const selection = selectEvictions(pods, { namespace: "sef-system", name: "sef-own" }, true);
    expect(selection.evict.map((p) => p.name)).toEqual(["web-1", "bare", "cache"]);
    expect(selection.terminating.map((p) => p.name)).toEqual(["going"]);
    expect(selection.skipped.map((s) => `${s.pod.name}:${s.reason}`)).toEqual(["ds-1:daemonset", "etcd:mirror", "sef-xyz:daemonset", "sef-own:self", "job-1:finished"]);
  });

  it("leaves emptyDir pods when evictEmptyDir is off", () => {
    const selection = selectEvictions([pod("cache", { hasEmptyDir: true }), pod("web")], undefined, false);
    expect(selection.evict.map((p) => p.name)).toEqual(["web"]);
    expect(selection.skipped).toEqual([{ pod: expect.objectContaining({ name: "cache" }), reason: "emptydir" }]);
  });
});

describe("taints, annotations and the undo", () => {
  const nowIso = "2024-01-01T00:00:01.000Z";
  const operatorTaint = { key: "dedicated", value: "gpu", effect: "NoSchedule" };

  it("one key per EventType with the EventId as value, NoSchedule, beside the node's own taints", () => {
    expect(taintKeyFor("Reboot")).toBe("sef.azure.com/scheduled-event-reboot");
    expect(taintKeyFor("Some New Type!")).toBe("sef.azure.com/scheduled-event-some-new-type");
    expect(taintValueFor(eventId)).toBe(eventId);
    const patch = markPatch(node({ taints: [operatorTaint] }), event, true, nowIso);
    expect(patch.taints).toEqual([operatorTaint, { key: "sef.azure.com/scheduled-event-reboot", value: eventId, effect: "NoSchedule", timeAdded: nowIso }]);
    expect(patch.unschedulable).toBe(true);
    expect(patch.annotations).toEqual({
      [annotationKeys.eventId]: eventId,
      [annotationKeys.eventType]: "Reboot",
      [annotationKeys.notBefore]: event.NotBefore,
      [annotationKeys.cordoned]: "true",
    });
  });

  it("taint-only leaves unschedulable alone; marking twice adds no second taint", () => {
    const once = markPatch(node(), event, false, nowIso);
    expect(once).not.toHaveProperty("unschedulable");
    expect(markPatch(node({ taints: once.taints }), event, false, nowIso).taints).toHaveLength(1);
  });

  it("an operator's cordon is not claimed: no sef cordoned annotation", () => {
    expect(markPatch(node({ unschedulable: true }), event, true, nowIso).annotations).not.toHaveProperty(annotationKeys.cordoned);
  });

  it("the NoExecute taint is added beside the NoSchedule one", () => {
    const marked = markPatch(node(), event, true, nowIso).taints;
    expect(noExecutePatch(node({ taints: marked }), event, nowIso).taints.map((t) => t.effect)).toEqual(["NoSchedule", "NoExecute"]);
  });

  it("undo: both of the event's taints and its annotations go, the operator's taint stays, and sef's cordon is lifted", () => {
    const marked = node({
      unschedulable: true,
      taints: [operatorTaint, { key: taintKeyFor("Reboot"), value: eventId, effect: "NoSchedule" }, { key: taintKeyFor("Reboot"), value: eventId, effect: "NoExecute" }],
      annotations: { [annotationKeys.eventId]: eventId, [annotationKeys.eventType]: "Reboot", [annotationKeys.notBefore]: event.NotBefore, [annotationKeys.cordoned]: "true", other: "x" },
    });
    const decision = undoPatch(marked, event, true, 0);
    expect(decision.uncordon).toBe(true);
    expect(decision.patch).toEqual({
      taints: [operatorTaint],
      unschedulable: false,
      annotations: { [annotationKeys.eventId]: null, [annotationKeys.eventType]: null, [annotationKeys.notBefore]: null, [annotationKeys.cordoned]: null },
    });
  });

  it("undo keeps an operator's cordon, and sef's own while another event holds the node", () => {
    const cordoned = node({ unschedulable: true, taints: [{ key: taintKeyFor("Reboot"), value: eventId, effect: "NoSchedule" }] });
    const operators = undoPatch(cordoned, event, false, 0);
    expect(operators.uncordon).toBe(false);
    expect(operators.patch).not.toHaveProperty("unschedulable");
    expect(operators.patch.taints).toEqual([]);
    expect(operators.keptCordonedBecause).toMatch(/operator/);
    const held = undoPatch(cordoned, event, true, 1);
    expect(held.uncordon).toBe(false);
    expect(held.keptCordonedBecause).toMatch(/another event/);
  });

  it("undo leaves annotations another event wrote, and does nothing to a node someone else uncordoned", () => {
    const other = node({ annotations: { [annotationKeys.eventId]: "other-event" } });
    const decision = undoPatch(other, event, true, 0);
    expect(decision.patch.annotations).toEqual({});
    expect(decision.uncordon).toBe(false);
    expect(decision.keptCordonedBecause).toBeUndefined();
  });
});

describe("taints, annotations and the undo: the edges", () => {
  const nowIso = "2024-01-01T00:00:01.000Z";
  const key = taintKeyFor("Reboot");

  it("taint keys and values: runs of other characters become one '-', trimmed, clipped (40 and 63), 'unknown' when nothing is left", () => {
    expect(taintKeyFor("Live  Migration")).toBe("sef.azure.com/scheduled-event-live-migration");
    expect(taintKeyFor("x".repeat(50))).toBe(`sef.azure.com/scheduled-event-${"x".repeat(40)}`);
    expect(taintKeyFor("!!!")).toBe("sef.azure.com/scheduled-event-unknown");
    expect(taintValueFor("a b")).toBe("a-b");
    expect(taintValueFor("--a.b--")).toBe("a.b");
    expect(taintValueFor("y".repeat(70))).toBe("y".repeat(63));
    expect(taintValueFor("!!!")).toBe("unknown");
  });

  it("an event's taint is the one with both its type's key and its id's value", () => {
    const otherEvent = { key, value: "another-event", effect: "NoSchedule" };
    const otherType = { key: taintKeyFor("Freeze"), value: eventId, effect: "NoSchedule" };
    expect(undoPatch(node({ taints: [otherEvent, otherType] }), event, true, 0).patch.taints).toEqual([otherEvent, otherType]);
  });

  it("marking adds the NoSchedule taint beside the event's NoExecute one, with an empty NotBefore annotation when none is known", () => {
    const noExecute = { key, value: eventId, effect: "NoExecute" };
    const patch = markPatch(node({ taints: [noExecute] }), { ...event, NotBefore: null }, false, nowIso);
    expect(patch.taints).toEqual([noExecute, { key, value: eventId, effect: "NoSchedule", timeAdded: nowIso }]);
    expect(patch.annotations[annotationKeys.notBefore]).toBe("");
  });

  it("the NoExecute taint is not added twice, beside other taints", () => {
    const taints = [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }, { key, value: eventId, effect: "NoSchedule" }, { key, value: eventId, effect: "NoExecute" }];
    expect(noExecutePatch(node({ taints }), event, nowIso).taints).toEqual(taints);
  });

  it("undo removes only the annotations there are, keeps nothing cordoned on a schedulable node, and keeps sef's cordon annotation while another event holds the node", () => {
    const partial = undoPatch(node({ annotations: { [annotationKeys.eventId]: eventId } }), event, false, 0);
    expect(partial.patch.annotations).toEqual({ [annotationKeys.eventId]: null });
    expect(partial.keptCordonedBecause).toBeUndefined();
    const lifted = undoPatch(node({ unschedulable: true }), event, true, 0);
    expect(lifted).toMatchObject({ uncordon: true, keptCordonedBecause: undefined });
    const held = undoPatch(node({ unschedulable: true, annotations: { [annotationKeys.cordoned]: "true" } }), event, true, 2);
    expect(held.patch.annotations).toEqual({});
    expect(held.keptCordonedBecause).toBe("another event sef acts on still holds the node (2)");
  });
});

describe("which pods: the edges", () => {
  it("only sef's own pod (same namespace and name) is kept as self; failed pods are finished; pods are named namespace/name", () => {
    const self = { namespace: "sef", name: "sef-abcde" };
    const pods = [pod("sef-abcde", { namespace: "apps" }), pod("other", { namespace: "sef" }), pod("sef-abcde", { namespace: "sef" }), pod("crashed", { phase: "Failed" })];
    const selection = selectEvictions(pods, self, true);
    expect(selection.evict.map(podRef)).toEqual(["apps/sef-abcde", "sef/other"]);
    expect(selection.skipped.map((s) => [podRef(s.pod), s.reason])).toEqual([
      ["sef/sef-abcde", "self"],
      ["apps/crashed", "finished"],
    ]);
  });
});

describe("which node", () => {
  it("the Node's providerID must name this VM's resource id (case-insensitive); unknown is no match", () => {
    const resourceId = "/subscriptions/s/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/vmss/virtualMachines/0";
    expect(nodeIsThisVm(node().providerID, resourceId)).toBe(true);
    expect(nodeIsThisVm(node().providerID, resourceId.replace("/0", "/1"))).toBe(false);
    expect(nodeIsThisVm("", resourceId)).toBe(false);
    expect(nodeIsThisVm(node().providerID, "")).toBe(false);
    expect(nodeIsThisVm("kind://docker/kind/kind-worker", resourceId)).toBe(false);
  });
});
