// Pure logic of the kubernetes action: policy resolution, drain start and deadline arithmetic, grace periods, which pods
// a drain evicts, the taint key and value, the PDB backoff and the node identity check.
import { describe, expect, it } from "vitest";
import { kubernetesSettingsSchema, policyFor, policyIncludes } from "../../src/agent/actions/kubernetes/settings.js";
import {
  drainDeadlineMs,
  drainStartMs,
  gracePeriodSeconds,
  nodeIsThisVm,
  pdbRetryDelayMs,
  selectEvictions,
  taintKeyFor,
  taintValueFor,
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

describe("the taint", () => {
  it("one key per EventType with the EventId as value (the marks as a whole: kubernetes-marks.test.ts)", () => {
    expect(taintKeyFor("Reboot")).toBe("sef.azure.com/scheduled-event-reboot");
    expect(taintKeyFor("Some New Type!")).toBe("sef.azure.com/scheduled-event-some-new-type");
    expect(taintValueFor(eventId)).toBe(eventId);
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
