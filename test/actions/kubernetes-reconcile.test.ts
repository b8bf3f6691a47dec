// The reconciliation of the Node with IMDS (reconcile.ts) in-process, on the fake clock, against the testbed's
// Kubernetes API peer on loopback: which marks are taken off (not listed, not owned), when it reads the Node (the first
// document, a change of the listed or owned events, never twice for the same), its records and metrics, a Node of
// another VM left alone, and a failed attempt tried again after the policy's wait. End to end (the built agent):
// test/integration/kubernetes-reconcile.test.ts.
import { capturingLogger } from "../helpers/capturing-logger.js";
import { Registry } from "prom-client";
import { describe, expect, it, type TestContext } from "vitest";
import type { KubernetesRecord } from "../../src/contract/record.js";
import { createKubeApi } from "../../src/agent/actions/kubernetes/client.js";
import { encodeMark, markAnnotationKey, type MarkValue } from "../../src/agent/actions/kubernetes/marks.js";
import { KubernetesMetrics } from "../../src/agent/actions/kubernetes/metrics.js";
import { NodeIo } from "../../src/agent/actions/kubernetes/node-io.js";
import { NodeReconciler } from "../../src/agent/actions/kubernetes/reconcile.js";
import { startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { FakeClock } from "../helpers/fake-clock.js";

const nodeName = "aks-pool1-vmss000000";
const vmId =
  "/subscriptions/0000/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool1/virtualMachines/0";
const idleMs = 60_000;
const retryPolicy = { initialDelayMs: 1_000, maxDelayMs: 10_000, multiplier: 2 };

const ids = {
  listed: "A0000000-0000-4000-8000-000000000001",
  owned: "B0000000-0000-4000-8000-000000000002",
  gone: "C0000000-0000-4000-8000-000000000003",
};

const mark = (eventId: string, eventType: string, cordoned: boolean): MarkValue => ({
  eventId,
  eventType,
  notBefore: "2026-12-07T10:00:00.000Z",
  policy: "drain-then-approve",
  cordoned,
  markedAt: "2026-12-07T09:50:00.000Z",
});

interface SetUp {
  peer: KubernetesPeer;
  reconciler: NodeReconciler;
  clock: FakeClock;
  metrics: KubernetesMetrics;
  registry: Registry;
  committed: KubernetesRecord[][];
  owned: string[];
  nodeRequests: () => number;
  /** What the reconciler logged (pino's JSON lines, parsed). */
  lines: Array<Record<string, unknown>>;
}

/** The node marked for `marks` (each with its NoSchedule taint), cordoned; the reconciler of VM `vmResourceId`. */
async function setUp(
  test: TestContext,
  marks: MarkValue[],
  options: {
    vmResourceId?: string;
    owned?: string[];
    extraAnnotations?: Record<string, string>;
    /** The jitter of the retry waits (default 0; `undefined` given: the reconciler's own, Math.random). */
    random?: () => number;
  } = {},
): Promise<SetUp> {
  const peer = await startKubernetesPeer({
    seed: {
      nodes: [
        {
          name: nodeName,
          providerID: `azure://${vmId}`,
          unschedulable: true,
          annotations: {
            ...Object.fromEntries(marks.map((m) => [markAnnotationKey(m.eventId), encodeMark(m)])),
            ...options.extraAnnotations,
          },
          taints: marks.map((m) => ({
            key: `sef.azure.com/scheduled-event-${m.eventType.toLowerCase()}`,
            value: m.eventId,
            effect: "NoSchedule",
          })),
        },
      ],
    },
  });
  const kube = await createKubeApi({ kubeconfig: peer.kubeconfigPath, requestTimeoutMs: 10_000 });
  test.onTestFinished(async () => {
    kube.close();
    await peer.close();
  });
  const clock = new FakeClock(Date.parse("2026-12-07T09:55:00.000Z"));
  const registry = new Registry();
  const metrics = new KubernetesMetrics(registry);
  const { logger, lines } = capturingLogger();
  const vm = () => ({ VmResourceId: vmId }) as never;
  const io = new NodeIo({ nodeName, api: () => kube, vm, clock, logger, metrics, agentVersion: "1.0.0-test" });
  const committed: KubernetesRecord[][] = [];
  const owned = [...(options.owned ?? [])];
  const reconciler = new NodeReconciler({
    io,
    vmResourceId: () => options.vmResourceId ?? vmId,
    ownedEventIds: () => owned,
    commit: (records) => committed.push(records),
    clock,
    logger,
    metrics,
    retryPolicy,
    random: "random" in options ? options.random : () => 0,
  });
  const nodeRequests = () => peer.state.requests().filter((r) => r.resource === "nodes").length;
  return { peer, reconciler, clock, metrics, registry, committed, owned, nodeRequests, lines };
}

/** One metric's value as the exposition format gives it (one series). */
async function metricValue(registry: Registry, name: string, labels = ""): Promise<number> {
  const text = await registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

const annotationsOf = (peer: KubernetesPeer): string[] =>
  Object.keys(peer.state.node(nodeName)?.metadata.annotations ?? {})
    .filter((key) => key.includes("sef.azure.com/"))
    .sort();
const taintValuesOf = (peer: KubernetesPeer): string[] =>
  ((peer.state.node(nodeName)?.spec as { taints?: { value?: string }[] }).taints ?? []).map((t) => t.value ?? "");

describe.concurrent("reconciliation of the Node with IMDS (reconcile.ts) against the Kubernetes API peer", () => {
  it("takes off only the marks of events neither listed nor owned, with one record each, once per change", async (test) => {
    const s = await setUp(
      test,
      [mark(ids.listed, "Reboot", true), mark(ids.owned, "Redeploy", true), mark(ids.gone, "Freeze", true)],
      { owned: [ids.owned] },
    );
    // Before any document: nothing is read.
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(s.nodeRequests()).toBe(0);
    expect(s.reconciler.documentRead([ids.listed])).toBe(true);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(annotationsOf(s.peer)).toEqual([markAnnotationKey(ids.listed), markAnnotationKey(ids.owned)].sort());
    expect(taintValuesOf(s.peer).sort()).toEqual([ids.listed, ids.owned].sort());
    expect(s.committed).toHaveLength(1);
    const [record] = s.committed[0]!;
    expect(s.committed[0]).toHaveLength(1);
    expect(record).toMatchObject({
      RecordType: "Kubernetes",
      EventId: ids.gone,
      EventType: "Freeze",
      EventStatus: "Completed",
      Outcome: "Released", // the other marks still claim the cordon
    });
    expect(JSON.parse(record!.Detail)).toMatchObject({
      node: nodeName,
      policy: "drain-then-approve",
      reason: "the event is no longer in the IMDS document (reconciled with the Node)",
    });
    expect(await metricValue(s.registry, "sef_kubernetes_steps_total", '{outcome="Released"}')).toBe(1);
    expect(s.lines.filter((l) => l.msg === "took sef's marks of events IMDS no longer lists off the node")).toEqual([
      expect.objectContaining({ level: 30, events: [ids.gone], uncordoned: false }),
    ]);
    const reasons = s.peer.state.events().map((e) => (e as unknown as { reason: string }).reason);
    expect(reasons).toEqual(["ScheduledEventReleased"]);
    // The same document again, in another order and case: no change, nothing read.
    const before = s.nodeRequests();
    expect(s.reconciler.documentRead([ids.listed.toLowerCase()])).toBe(false);
    expect(s.reconciler.documentRead([ids.gone, ids.listed])).toBe(true);
    expect(s.reconciler.documentRead([ids.listed, ids.gone.toLowerCase()])).toBe(false); // any order, any case
    expect(s.reconciler.documentRead([ids.listed])).toBe(true);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(s.nodeRequests()).toBe(before);
    // The owned event's action ended (its own undo not yet run): a change of the owned events reads the node again.
    s.owned.length = 0;
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(s.nodeRequests()).toBeGreaterThan(before);
    expect(annotationsOf(s.peer)).toEqual([markAnnotationKey(ids.listed)]);
    expect(s.committed.map((records) => records.map((r) => r.EventId))).toEqual([[ids.gone], [ids.owned]]);
    // The listed event is gone too: the last mark goes and the node is uncordoned.
    expect(s.reconciler.documentRead([])).toBe(true);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(annotationsOf(s.peer)).toEqual([]);
    expect(taintValuesOf(s.peer)).toEqual([]);
    expect((s.peer.state.node(nodeName)?.spec as { unschedulable?: boolean }).unschedulable).not.toBe(true);
    expect(s.committed[2]!.map((r) => [r.EventId, r.Outcome])).toEqual([[ids.listed, "Uncordoned"]]);
    expect(await metricValue(s.registry, "sef_kubernetes_steps_total", '{outcome="Uncordoned"}')).toBe(1);
    expect(await metricValue(s.registry, "sef_kubernetes_steps_total", '{outcome="Released"}')).toBe(2);
  });

  it("a document with nothing to take off: one read, no patch, no record", async (test) => {
    const s = await setUp(test, [mark(ids.listed, "Reboot", true)]);
    expect(s.reconciler.documentRead([ids.listed])).toBe(true);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    const resourceRequests = s.peer.state.requests().filter((r) => r.resource !== undefined);
    expect(resourceRequests.map((r) => `${r.method} ${r.resource}`)).toEqual(["GET nodes"]);
    expect(s.committed).toEqual([]);
    expect(s.peer.state.events()).toEqual([]);
  });

  it("a lone cordon flag of the previous release is taken off without a record", async (test) => {
    const s = await setUp(test, [], { extraAnnotations: { "sef.azure.com/cordoned": "true" } });
    s.reconciler.documentRead([]);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(annotationsOf(s.peer)).toEqual([]);
    expect((s.peer.state.node(nodeName)?.spec as { unschedulable?: boolean }).unschedulable).not.toBe(true);
    expect(s.committed.flat()).toEqual([]);
  });

  it("a Node of another VM is read and left alone, and not read again for the same events", async (test) => {
    const s = await setUp(test, [mark(ids.gone, "Reboot", true)], { vmResourceId: `${vmId}0` });
    s.reconciler.documentRead([]);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(annotationsOf(s.peer)).toEqual([markAnnotationKey(ids.gone)]);
    expect(s.committed).toEqual([]);
    expect(s.lines).toEqual([
      expect.objectContaining({
        level: 40,
        node: nodeName,
        providerID: `azure://${vmId}`,
        msg: "NODE_NAME names another VM's node: its marks are not reconciled with this VM's events",
      }),
    ]);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(s.nodeRequests()).toBe(1);
  });

  it("a failed read is counted and tried again after the policy's wait (doubling), not before", async (test) => {
    const s = await setUp(test, [mark(ids.gone, "Reboot", true)]);
    s.peer.state.injectFault({
      match: { resources: ["nodes"], verbs: ["get"] },
      answer: { kind: "internal-error" },
      count: 2,
    });
    s.reconciler.documentRead([]);
    // random 0: equal jitter gives half the policy's delay: 500 ms, then 1,000 ms.
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(500);
    expect(await metricValue(s.registry, "sef_kubernetes_api_errors_total")).toBe(1);
    s.clock.jump(200);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(300);
    expect(s.nodeRequests()).toBe(1);
    s.clock.jump(300);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(1_000);
    expect(s.nodeRequests()).toBe(2);
    s.clock.jump(1_000);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(annotationsOf(s.peer)).toEqual([]);
    expect(s.committed.map((records) => records.map((r) => r.EventId))).toEqual([[ids.gone]]);
    expect(await metricValue(s.registry, "sef_kubernetes_api_errors_total")).toBe(2);
    // The first failure in a row is a warning, the next ones debug (every 12th a warning again).
    const tries = s.lines.filter((l) => l.msg === "could not reconcile the node with IMDS; trying again");
    expect(tries.map((l) => [l.level, l.failures])).toEqual([
      [40, 1],
      [20, 2],
    ]);
    expect(tries[0]!.err).toBeDefined();
    // After a success the failures start again from the first wait.
    s.peer.state.injectFault({
      match: { resources: ["nodes"], verbs: ["get"] },
      answer: { kind: "internal-error" },
      count: 1,
    });
    s.reconciler.documentRead([ids.listed]);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(500);
  });

  it("the wait after a failure takes the jitter given (0.5: three quarters of the delay), else Math.random's", async (test) => {
    const internalError = {
      match: { resources: ["nodes"], verbs: ["get"] },
      answer: { kind: "internal-error" },
    } as const;
    const half = await setUp(test, [mark(ids.gone, "Reboot", true)], { random: () => 0.5 });
    half.peer.state.injectFault({ ...internalError, count: 1 });
    half.reconciler.documentRead([]);
    expect(await half.reconciler.reconcileIfDue(idleMs)).toBe(750);
    const own = await setUp(test, [mark(ids.gone, "Reboot", true)], { random: undefined });
    own.peer.state.injectFault({ ...internalError, count: 1 });
    own.reconciler.documentRead([]);
    const waitMs = await own.reconciler.reconcileIfDue(idleMs);
    expect(waitMs).toBeGreaterThanOrEqual(500); // equal jitter: half the policy's 1 s, up to all of it
    expect(waitMs).toBeLessThanOrEqual(1_000);
  });

  it("a mark sef cannot read, with no taint to name its type, is taken off with EventType Unknown", async (test) => {
    const s = await setUp(test, [], { extraAnnotations: { [markAnnotationKey(ids.gone)]: "not sef's JSON" } });
    s.reconciler.documentRead([]);
    expect(await s.reconciler.reconcileIfDue(idleMs)).toBe(idleMs);
    expect(annotationsOf(s.peer)).toEqual([]);
    expect(s.committed.flat().map((r) => [r.EventId, r.EventType])).toEqual([[ids.gone, "Unknown"]]);
  });

  it("EventIds are compared whole: [ab, c] then [a, bc] is a change", async (test) => {
    const s = await setUp(test, []);
    expect(s.reconciler.documentRead(["ab", "c"])).toBe(true);
    expect(s.reconciler.documentRead(["a", "bc"])).toBe(true);
    expect(s.reconciler.documentRead(["bc", "a"])).toBe(false);
  });
});
