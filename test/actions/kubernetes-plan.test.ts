// Pure logic of the kubernetes action: policy resolution, drain start and deadline arithmetic, grace periods, which pods
// a drain evicts (as kubectl drain: controllers, opt-out, stuck terminating, arrivals, once per uid) and when it is
// over, the drain's Detail, the taint key and value, the backoffs and the node check (the marks: kubernetes-marks.test.ts).
import { describe, expect, it } from "vitest";
import {
  deadlineActionFor,
  kubernetesSettingsSchema,
  policyFor,
  policyIncludes,
} from "../../src/agent/actions/kubernetes/settings.js";
import {
  deadlineDeleteGraceSeconds,
  drainDeadlineMs,
  drainStartMs,
  gracePeriodSeconds,
  nodeIsThisVm,
  pdbRetryDelayMs,
  taintKeyFor,
  taintValueFor,
  throttleFloorMs,
  throttleWaitMs,
  type NodeView,
} from "../../src/agent/actions/kubernetes/plan.js";
import {
  drainOptOutLabel,
  drainVerdict,
  isSystemCritical,
  podIdentity,
  podViewOf,
  selectEvictions,
  skippedFor,
  stuckTerminatingAllowanceMs,
  toleratesTaint,
  type DrainRules,
  type PodView,
} from "../../src/agent/actions/kubernetes/pods.js";
import { drainDetail } from "../../src/agent/actions/kubernetes/records.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { podView } from "./kubernetes-fixtures.js";

const defaults = kubernetesSettingsSchema.parse({});
const eventId = "5DD55A71-95BE-4B7E-B8A2-9C4A2F7C8A11";
const event = { EventId: eventId, EventType: "Reboot", NotBefore: "2024-01-01T00:15:00.000Z" };

const node = (over: Partial<NodeView> = {}): NodeView => ({
  name: "aks-np-0",
  providerID:
    "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/vmss/virtualMachines/0",
  unschedulable: false,
  taints: [],
  annotations: {},
  ...over,
});

const pod = podView;

describe("policy", () => {
  it("defaults: Reboot, Redeploy, Preempt, Terminate drain then approve; Freeze and unknown types only forward", () => {
    expect(["Reboot", "Redeploy", "Preempt", "Terminate"].map((t) => policyFor(defaults, t))).toEqual(
      Array(4).fill("drain-then-approve"),
    );
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
    expect(defaults).toMatchObject({
      drainLeadMs: 600_000,
      deadlineReserveMs: 5_000,
      pdbRetryInitialMs: 1_000,
      pdbRetryMaxMs: 15_000,
      evictEmptyDir: true,
      force: false,
      noExecuteTaintAfterDrain: false,
    });
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

  it("PDB refusals back off exponentially up to the maximum, with equal jitter (sef's one backoff formula)", () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => pdbRetryDelayMs(n, 1_000, 15_000, 1))).toEqual([
      1_000, 2_000, 4_000, 8_000, 15_000, 15_000,
    ]);
    expect([1, 2, 3, 4, 5, 6].map((n) => pdbRetryDelayMs(n, 1_000, 15_000, 0))).toEqual([
      500, 1_000, 2_000, 4_000, 7_500, 7_500,
    ]);
  });

  it("a throttled eviction waits the server's Retry-After, at least the floor, at most the cap", () => {
    expect(throttleFloorMs).toBe(1_000);
    expect(throttleWaitMs(5_000, 15_000, 0)).toBe(5_000);
    expect(throttleWaitMs(5_000, 15_000, 0.5)).toBe(6_250);
    expect(throttleWaitMs(12_000, 15_000, 0.99)).toBe(15_000);
    expect(throttleWaitMs(0, 15_000, 0)).toBe(1_000);
    expect(throttleWaitMs(3_600_000, 15_000, 0)).toBe(15_000);
    expect(throttleWaitMs(Number.NaN, 15_000, 0)).toBe(1_000);
    expect(throttleWaitMs(5_000, 500, 0.7)).toBe(500);
  });
});

describe("issue 44: deadlines, priorities, pods left", () => {
  const nowMs = Date.parse("2024-01-01T00:10:00.000Z");
  const sefTaint = { key: taintKeyFor("Reboot"), value: eventId, effect: "NoSchedule" };
  const rules = (over: Partial<DrainRules> = {}): DrainRules => ({
    self: undefined,
    evictEmptyDir: true,
    force: false,
    taint: sefTaint,
    roster: undefined,
    evicted: new Set(),
    nowMs,
    ...over,
  });
  const names = (pods: PodView[]) => pods.map((p) => p.name);

  it("a pod deleted at the deadline gets the whole seconds left before NotBefore, at least 1", () => {
    expect(deadlineDeleteGraceSeconds(nowMs + 7_999, nowMs)).toBe(7);
    expect(deadlineDeleteGraceSeconds(nowMs + 2_000, nowMs)).toBe(2);
    expect(deadlineDeleteGraceSeconds(nowMs + 1_999, nowMs)).toBe(1);
    expect(deadlineDeleteGraceSeconds(nowMs, nowMs)).toBe(1);
    expect(deadlineDeleteGraceSeconds(nowMs - 5_000, nowMs)).toBe(1);
  });

  it("delete at the deadline for Preempt and Terminate by default, leave for the others; set per type", () => {
    const defaults = kubernetesSettingsSchema.parse({});
    expect(
      ["Freeze", "Reboot", "Redeploy", "Preempt", "terminate", "Other"].map((t) => deadlineActionFor(defaults, t)),
    ).toEqual(["leave", "leave", "leave", "delete", "delete", "leave"]);
    const set = kubernetesSettingsSchema.parse({ atDeadline: { Reboot: "delete", Preempt: "leave" } });
    expect([deadlineActionFor(set, "reboot"), deadlineActionFor(set, "Preempt")]).toEqual(["delete", "leave"]);
    expect(kubernetesSettingsSchema.safeParse({ atDeadline: { Reboot: "kill" } }).success).toBe(false);
    expect(defaults).toMatchObject({ excludeFromLoadBalancers: true, podSelector: "", dryRun: false });
  });

  it("system-critical: the two system classes, or a priority from 2 000 000 000", () => {
    expect(isSystemCritical(pod("a", { priority: 1_999_999_999 }))).toBe(false);
    expect(isSystemCritical(pod("a", { priority: 2_000_000_000 }))).toBe(true);
    expect(isSystemCritical(pod("a", { priorityClassName: "system-node-critical" }))).toBe(true);
    expect(isSystemCritical(pod("a", { priorityClassName: "system-cluster-critical" }))).toBe(true);
    expect(isSystemCritical(pod("a", { priorityClassName: "high" }))).toBe(false);
  });

  it("lowest priority first; system-critical pods wait while another pod is to evict or terminating", () => {
    const critical = pod("crit", { priorityClassName: "system-cluster-critical", priority: 2_000_000_000 });
    const mixed = selectEvictions([critical, pod("b", { priority: 5 }), pod("a", { priority: -1 })], rules());
    expect([names(mixed.evict), names(mixed.deferred)]).toEqual([["a", "b"], ["crit"]]);
    expect(drainVerdict(mixed, nowMs, nowMs + 1)).toEqual({ kind: "continue" });
    const going = selectEvictions([critical, pod("b", { deletionTimestampMs: nowMs + 5_000 })], rules());
    expect([names(going.evict), names(going.deferred)]).toEqual([[], ["crit"]]);
    expect(drainVerdict(going, nowMs, nowMs)).toMatchObject({ podsLeft: ["apps/b", "apps/crit"] });
    const criticalGoing = pod("crit-2", { priority: 2_000_000_001, deletionTimestampMs: nowMs + 5_000 });
    const alone = selectEvictions(
      [criticalGoing, critical, pod("node", { priorityClassName: "system-node-critical" })],
      rules(),
    );
    expect([names(alone.evict), names(alone.deferred)]).toEqual([["node", "crit"], []]);
    // Already in order stays in order (a comparator of the sum, not the difference, would swap them).
    const ordered = selectEvictions([pod("p3", { priority: 3 }), pod("p5", { priority: 5 })], rules());
    expect(names(ordered.evict)).toEqual(["p3", "p5"]);
    const onlyDeferred = { ...going, terminating: [] };
    expect(drainVerdict(onlyDeferred, nowMs, nowMs + 1)).toEqual({ kind: "continue" });
  });

  it("a terminating pod is asked again only when its grace ends more than a second after what the soonest deadline allows", () => {
    const at = (deletionTimestampMs: number) => pod("t", { deletionTimestampMs });
    const shorter = (deletion: number, graceDeadlineMs?: number) =>
      names(
        selectEvictions([at(deletion)], rules(graceDeadlineMs === undefined ? {} : { graceDeadlineMs })).shorterGrace,
      );
    expect(shorter(nowMs + 600_000)).toEqual([]);
    expect(shorter(nowMs + 6_000, nowMs + 5_000)).toEqual([]);
    expect(shorter(nowMs + 6_001, nowMs + 5_000)).toEqual(["t"]);
    // The deadline passed: a second is still allowed.
    expect(shorter(nowMs + 2_000, nowMs - 10_000)).toEqual([]);
    expect(shorter(nowMs + 2_001, nowMs - 10_000)).toEqual(["t"]);
    expect(shorter(nowMs + 2_001, nowMs + 1_500)).toEqual([]);
    // Evicted once by this drain and still listed without a deletionTimestamp: nothing to shorten.
    const evicted = selectEvictions([pod("e")], rules({ evicted: new Set(["uid-e"]), graceDeadlineMs: nowMs }));
    expect([names(evicted.terminating), names(evicted.shorterGrace)]).toEqual([["e"], []]);
  });

  it("pods left for any reason end the drain incomplete, named, with every reason", () => {
    const selection = selectEvictions(
      [
        pod("cache", { hasEmptyDir: true }),
        pod("stuck", { deletionTimestampMs: nowMs - stuckTerminatingAllowanceMs - 1 }),
        pod("bare", { controllerKinds: [] }),
      ],
      rules({ evictEmptyDir: false }),
    );
    expect(drainVerdict(selection, nowMs, nowMs + 60_000)).toEqual({
      kind: "incomplete",
      podsLeft: ["apps/bare", "apps/cache", "apps/stuck"],
      reason:
        "pods without a controller are not evicted unless force is set; pods with emptyDir volumes are not evicted (evictEmptyDir is false); pods are stuck terminating",
    });
    // Every pod left in name order, whatever its reason (no controller is named before emptyDir otherwise).
    const mixed = selectEvictions(
      [pod("zz-bare", { controllerKinds: [] }), pod("aa-cache", { hasEmptyDir: true })],
      rules({ evictEmptyDir: false }),
    );
    expect(drainVerdict(mixed, nowMs, nowMs + 60_000)).toMatchObject({ podsLeft: ["apps/aa-cache", "apps/zz-bare"] });
    const bare = selectEvictions(
      [pod("zeta", { controllerKinds: [] }), pod("alpha", { controllerKinds: [] })],
      rules(),
    );
    expect(skippedFor(bare, "no-controller")).toEqual(["apps/alpha", "apps/zeta"]);
    const emptyDirOnly = selectEvictions([pod("cache", { hasEmptyDir: true })], rules({ evictEmptyDir: false }));
    expect(drainVerdict(emptyDirOnly, nowMs, nowMs + 60_000)).toEqual({
      kind: "incomplete",
      podsLeft: ["apps/cache"],
      reason: "pods with emptyDir volumes are not evicted (evictEmptyDir is false)",
    });
    const atDeadline = selectEvictions(
      [pod("web"), pod("cache", { hasEmptyDir: true })],
      rules({ evictEmptyDir: false }),
    );
    expect(drainVerdict(atDeadline, nowMs, nowMs)).toEqual({
      kind: "incomplete",
      podsLeft: ["apps/cache", "apps/web"],
      reason: "at its deadline",
    });
  });
});

describe("which pods a drain evicts", () => {
  const nowMs = Date.parse("2024-01-01T00:10:00.000Z");
  const sefTaint = { key: taintKeyFor("Reboot"), value: eventId, effect: "NoSchedule" };
  const rules = (over: Partial<DrainRules> = {}): DrainRules => ({
    self: { namespace: "sef-system", name: "sef-own" },
    evictEmptyDir: true,
    force: false,
    taint: sefTaint,
    roster: undefined,
    evicted: new Set(),
    nowMs,
    ...over,
  });
  const names = (pods: PodView[]) => pods.map((p) => p.name);
  const skips = (selection: ReturnType<typeof selectEvictions>) =>
    selection.skipped.map((s) => `${s.pod.name}:${s.reason}`);

  it("all but DaemonSet pods, mirror pods, sef's own pod and finished pods; terminating pods are waited for", () => {
    const pods = [
      pod("web-1"),
      pod("ds-1", { controllerKinds: ["DaemonSet"] }),
      pod("etcd", {
        namespace: "kube-system",
        controllerKinds: [],
        annotations: { "kubernetes.io/config.mirror": "abc" },
      }),
      pod("sef-xyz", { namespace: "sef-system", controllerKinds: ["DaemonSet"] }),
      pod("sef-own", { namespace: "sef-system", controllerKinds: [] }),
      pod("job-1", { phase: "Succeeded", controllerKinds: ["Job"] }),
      pod("going", { deletionTimestampMs: nowMs + 20_000 }),
      pod("cache", { hasEmptyDir: true }),
    ];
    const selection = selectEvictions(pods, rules());
    expect(names(selection.evict)).toEqual(["web-1", "cache"]);
    expect(names(selection.terminating)).toEqual(["going"]);
    expect(skips(selection)).toEqual([
      "ds-1:daemonset",
      "etcd:mirror",
      "sef-xyz:daemonset",
      "sef-own:self",
      "job-1:finished",
    ]);
  });

  it("leaves emptyDir pods when evictEmptyDir is off", () => {
    const selection = selectEvictions(
      [pod("cache", { hasEmptyDir: true }), pod("web")],
      rules({ evictEmptyDir: false }),
    );
    expect(names(selection.evict)).toEqual(["web"]);
    expect(selection.skipped).toEqual([{ pod: expect.objectContaining({ name: "cache" }), reason: "emptydir" }]);
  });

  it("a pod without a controller (a bare pod, or owners none of which is its controller) is left unless force is set", () => {
    const bare = pod("bare", { controllerKinds: [] });
    const finishedBare = pod("done", { controllerKinds: [], phase: "Failed" });
    const selection = selectEvictions([bare, finishedBare, pod("web")], rules());
    expect(names(selection.evict)).toEqual(["web"]);
    expect(skips(selection)).toEqual(["bare:no-controller", "done:finished"]);
    expect(names(selectEvictions([bare, pod("web")], rules({ force: true })).evict)).toEqual(["bare", "web"]);
  });

  it("the opt-out label leaves a pod (whatever its controller); another value of it does not", () => {
    expect(drainOptOutLabel).toEqual({ key: "sef.azure.com/drain", value: "skip" });
    const optedOut = pod("batch", { labels: { "sef.azure.com/drain": "skip" } });
    const bareOptedOut = pod("bare", { controllerKinds: [], labels: { "sef.azure.com/drain": "skip" } });
    const other = pod("web", { labels: { "sef.azure.com/drain": "yes" } });
    const selection = selectEvictions([optedOut, bareOptedOut, other], rules({ force: true }));
    expect(names(selection.evict)).toEqual(["web"]);
    expect(skips(selection)).toEqual(["batch:opted-out", "bare:opted-out"]);
  });

  it("a pod past its deletionTimestamp plus the allowance is stuck (not waited for); within it, it is waited for", () => {
    const onTime = pod("on-time", { deletionTimestampMs: nowMs - stuckTerminatingAllowanceMs });
    const stuck = pod("stuck", { deletionTimestampMs: nowMs - stuckTerminatingAllowanceMs - 1 });
    const unreadable = podViewOf({
      metadata: {
        name: "odd",
        namespace: "apps",
        deletionTimestamp: "not a time",
        ownerReferences: [{ kind: "ReplicaSet", controller: true }],
      },
    });
    const selection = selectEvictions([onTime, stuck, unreadable], rules());
    expect(names(selection.terminating)).toEqual(["on-time"]);
    expect(names(selection.stuck)).toEqual(["stuck", "odd"]);
    expect(selection.evict).toEqual([]);
  });

  it("arrivals after the drain's start are evicted unless they tolerate sef's taint; pods of the start are evicted even if they do", () => {
    const tolerates = [{ operator: "Exists" }];
    const start = [pod("old-tolerant", { tolerations: tolerates }), pod("old")];
    const roster = new Set(start.map(podIdentity));
    const arrivals = [
      pod("new-tolerant", { tolerations: tolerates }),
      pod("new"),
      pod("new-other", { tolerations: [{ key: "dedicated", operator: "Exists" }] }),
    ];
    const selection = selectEvictions([...start, ...arrivals], rules({ roster }));
    expect(names(selection.evict)).toEqual(["old-tolerant", "old", "new", "new-other"]);
    expect(skips(selection)).toEqual(["new-tolerant:tolerating-arrival"]);
  });

  it("each pod is evicted once: an evicted uid still listed is waited for; the same name with a new uid is another pod", () => {
    const first = pod("db-0", { uid: "uid-1" });
    const comeback = pod("db-0", { uid: "uid-2" });
    const comebackTolerating = pod("db-0", {
      uid: "uid-3",
      tolerations: [{ key: sefTaint.key, operator: "Exists", effect: "NoSchedule" }],
    });
    const evicted = new Set(["uid-1"]);
    const roster = new Set(["uid-1"]);
    expect(names(selectEvictions([first], rules({ roster, evicted })).terminating)).toEqual(["db-0"]);
    expect(selectEvictions([first], rules({ roster, evicted })).evict).toEqual([]);
    expect(selectEvictions([comeback], rules({ roster, evicted })).evict.map((p) => p.uid)).toEqual(["uid-2"]);
    expect(skips(selectEvictions([comebackTolerating], rules({ roster, evicted })))).toEqual([
      "db-0:tolerating-arrival",
    ]);
  });

  it("tolerations match as Kubernetes matches them (empty key or effect: any; Exists; Equal compares the value)", () => {
    const t = sefTaint;
    expect(toleratesTaint({ operator: "Exists" }, t)).toBe(true);
    expect(toleratesTaint({ operator: "Exists", effect: "NoExecute" }, t)).toBe(false);
    expect(toleratesTaint({ key: t.key, operator: "Exists" }, t)).toBe(true);
    expect(toleratesTaint({ key: t.key, value: eventId, effect: "NoSchedule" }, t)).toBe(true);
    expect(toleratesTaint({ key: t.key, operator: "Equal", value: "other-event" }, t)).toBe(false);
    expect(toleratesTaint({ key: "node.kubernetes.io/unschedulable", operator: "Exists" }, t)).toBe(false);
    expect(toleratesTaint({ key: t.key, operator: "Lt", value: "5" }, t)).toBe(false);
    expect(toleratesTaint({ key: t.key, operator: "Equal", value: eventId }, t)).toBe(true);
    // An operator Kubernetes does not know tolerates nothing, even with the taint's own value.
    expect(toleratesTaint({ key: t.key, operator: "Gt", value: eventId }, t)).toBe(false);
    // A taint without a value is tolerated by Equal without one, and not by Equal with one.
    const bareTaint = { key: "example.com/maintenance", effect: "NoSchedule" };
    expect(toleratesTaint({ key: bareTaint.key, operator: "Equal" }, bareTaint)).toBe(true);
    expect(toleratesTaint({ key: bareTaint.key }, bareTaint)).toBe(true);
    expect(toleratesTaint({ key: bareTaint.key, operator: "Equal", value: "x" }, bareTaint)).toBe(false);
  });

  it("pod objects of the API become PodViews: controller, uid, labels, tolerations, deletionTimestamp (string or Date)", () => {
    const deletion = "2024-01-01T00:10:30Z";
    const view = podViewOf({
      metadata: {
        namespace: "apps",
        name: "web-1",
        uid: "u-1",
        labels: { app: "web" },
        ownerReferences: [
          { kind: "Deployment", controller: false },
          { kind: "ReplicaSet", controller: true },
        ],
        deletionTimestamp: deletion,
      },
      spec: {
        terminationGracePeriodSeconds: 45,
        volumes: [{}, { emptyDir: {} }],
        tolerations: [{ operator: "Exists" }],
      },
      status: { phase: "Running" },
    });
    expect(view).toEqual({
      namespace: "apps",
      name: "web-1",
      uid: "u-1",
      labels: { app: "web" },
      annotations: {},
      controllerKinds: ["ReplicaSet"],
      phase: "Running",
      terminationGracePeriodSeconds: 45,
      hasEmptyDir: true,
      deletionTimestampMs: Date.parse(deletion),
      tolerations: [{ operator: "Exists" }],
      priority: 0,
      priorityClassName: "",
    });
    expect(podViewOf({ metadata: { deletionTimestamp: new Date(deletion) } }).deletionTimestampMs).toBe(
      Date.parse(deletion),
    );
    expect(podViewOf({ metadata: { name: "bare", ownerReferences: [{ kind: "ReplicaSet" }] } })).toMatchObject({
      namespace: "default",
      controllerKinds: [],
      deletionTimestampMs: undefined,
    });
    expect(podIdentity(podViewOf({ metadata: { name: "no-uid", namespace: "x" } }))).toBe("x/no-uid");
  });

  it("what a pod object leaves out reads as nothing: no name, uid or phase, no emptyDir (a volume of another kind, or emptyDir null)", () => {
    expect(podViewOf({})).toEqual({
      namespace: "default",
      name: "",
      uid: "",
      labels: {},
      annotations: {},
      controllerKinds: [],
      phase: "",
      terminationGracePeriodSeconds: undefined,
      hasEmptyDir: false,
      deletionTimestampMs: undefined,
      tolerations: [],
      priority: 0,
      priorityClassName: "",
    });
    expect(podViewOf({ spec: { priority: 7, priorityClassName: "batch" } })).toMatchObject({
      priority: 7,
      priorityClassName: "batch",
    });
    expect(podViewOf({ spec: { volumes: [{}, { emptyDir: null }] } }).hasEmptyDir).toBe(false);
    const mirror = podViewOf({ metadata: { name: "etcd", annotations: { "kubernetes.io/config.mirror": "abc" } } });
    expect(mirror.annotations).toEqual({ "kubernetes.io/config.mirror": "abc" });
    expect(selectEvictions([mirror], rules({ force: true })).skipped.map((s) => s.reason)).toEqual(["mirror"]);
  });

  it("only sef's own pod is kept as self: its name in another namespace, or another pod of its namespace, is evicted", () => {
    const selection = selectEvictions(
      [pod("sef-own", { namespace: "apps" }), pod("web", { namespace: "sef-system" })],
      rules(),
    );
    expect(selection.evict.map(podIdentity)).toEqual(["uid-sef-own", "uid-web"]);
    expect(selection.skipped).toEqual([]);
  });

  it("pods left without a controller are named in order", () => {
    const bare = ["zeta", "alpha", "mid"].map((name) => pod(name, { controllerKinds: [] }));
    expect(drainVerdict(selectEvictions(bare, rules()), nowMs, nowMs + 60_000)).toMatchObject({
      podsLeft: ["apps/alpha", "apps/mid", "apps/zeta"],
    });
  });

  it("the drain is over when nothing is left to evict or wait for: drained, or incomplete when pods without a controller stay", () => {
    const deadlineMs = nowMs + 60_000;
    const clean = selectEvictions(
      [pod("ds", { controllerKinds: ["DaemonSet"] }), pod("opt", { labels: { [drainOptOutLabel.key]: "skip" } })],
      rules(),
    );
    expect(drainVerdict(clean, nowMs, deadlineMs)).toEqual({ kind: "drained" });
    // A pod stuck terminating is not waited for, but the event takes it down with the node: incomplete, named.
    const stuck = selectEvictions([pod("stuck", { deletionTimestampMs: 0 })], rules());
    expect(drainVerdict(stuck, nowMs, deadlineMs)).toEqual({
      kind: "incomplete",
      podsLeft: ["apps/stuck"],
      reason: "pods are stuck terminating",
    });
    const bare = selectEvictions([pod("bare", { controllerKinds: [] })], rules());
    expect(drainVerdict(bare, nowMs, deadlineMs)).toEqual({
      kind: "incomplete",
      podsLeft: ["apps/bare"],
      reason: expect.stringMatching(/without a controller.*force/),
    });
    const waiting = selectEvictions(
      [pod("bare", { controllerKinds: [] }), pod("going", { deletionTimestampMs: nowMs + 5_000 })],
      rules(),
    );
    expect(drainVerdict(waiting, nowMs, deadlineMs)).toEqual({ kind: "continue" });
    expect(drainVerdict(waiting, deadlineMs, deadlineMs)).toEqual({
      kind: "incomplete",
      podsLeft: ["apps/bare", "apps/going"],
      reason: "at its deadline",
    });
  });

  it("Detail of a drain names what was left and why, and leaves out what is empty", () => {
    const progress = {
      evicted: ["apps/a", "apps/b"],
      pdbBlocked: ["apps/db-0"],
      pdbHeldMs: 12_345,
      throttled: 3,
      evictionErrors: [{ pod: "apps/c", status: 403, message: "forbidden" }],
    };
    const left = {
      podsOptedOut: ["apps/opt"],
      podsArrivedTolerating: [],
      podsStuckTerminating: ["apps/stuck"],
      podsWithoutController: ["apps/bare"],
      podsWithEmptyDir: ["apps/cache"],
    };
    expect(
      drainDetail(
        { outcome: "incomplete", podsLeft: ["apps/bare"], reason: "r", ...progress, ...left },
        "2024-01-01T00:14:55.000Z",
      ),
    ).toEqual({
      podsEvicted: 2,
      podsBlockedByPdb: ["apps/db-0"],
      pdbHeldSeconds: 12.3,
      podsWithoutController: ["apps/bare"],
      podsOptedOut: ["apps/opt"],
      podsStuckTerminating: ["apps/stuck"],
      podsWithEmptyDir: ["apps/cache"],
      evictionErrors: [{ pod: "apps/c", status: 403, message: "forbidden" }],
      evictionsThrottled: 3,
      podsLeft: ["apps/bare"],
      incompleteBecause: "r",
      deadline: "2024-01-01T00:14:55.000Z",
    });
    const none = {
      podsOptedOut: [],
      podsArrivedTolerating: [],
      podsStuckTerminating: [],
      podsWithoutController: [],
      podsWithEmptyDir: [],
    };
    expect(drainDetail({ outcome: "drained", evicted: [], pdbBlocked: [], pdbHeldMs: 0, ...none }, "x")).toEqual({
      podsEvicted: 0,
      podsBlockedByPdb: [],
      pdbHeldSeconds: 0,
    });
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
    const resourceId =
      "/subscriptions/s/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/vmss/virtualMachines/0";
    expect(nodeIsThisVm(node().providerID, resourceId)).toBe(true);
    expect(nodeIsThisVm(node().providerID, resourceId.replace("/0", "/1"))).toBe(false);
    expect(nodeIsThisVm("", resourceId)).toBe(false);
    expect(nodeIsThisVm(node().providerID, "")).toBe(false);
    expect(nodeIsThisVm("kind://docker/kind/kind-worker", resourceId)).toBe(false);
  });

  it("the providerID is the azure:// scheme and the resource id, in any case; an unknown resource id matches not even a bare scheme", () => {
    const resourceId = "/subscriptions/s/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/vm-1";
    expect(nodeIsThisVm(`AZURE://${resourceId.toUpperCase()}`, resourceId)).toBe(true);
    expect(nodeIsThisVm(resourceId, resourceId)).toBe(false);
    expect(nodeIsThisVm(`gce://${resourceId}`, resourceId)).toBe(false);
    expect(nodeIsThisVm("azure://", "")).toBe(false);
  });
});

describe("taint keys and values: the edges", () => {
  it("runs of other characters become one '-', trimmed, clipped (40 and 63), 'unknown' when nothing is left", () => {
    expect(taintKeyFor("Live  Migration")).toBe("sef.azure.com/scheduled-event-live-migration");
    expect(taintKeyFor("x".repeat(50))).toBe(`sef.azure.com/scheduled-event-${"x".repeat(40)}`);
    expect(taintKeyFor("!!!")).toBe("sef.azure.com/scheduled-event-unknown");
    expect(taintKeyFor("(Planned) Reboot.")).toBe("sef.azure.com/scheduled-event-planned-reboot");
    expect(taintValueFor("a b")).toBe("a-b");
    expect(taintValueFor("--a.b--")).toBe("a.b");
    expect(taintValueFor("y".repeat(70))).toBe("y".repeat(63));
    expect(taintValueFor("!!!")).toBe("unknown");
  });
});
