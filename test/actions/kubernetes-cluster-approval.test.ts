// The approval after a node's own steps (cluster-approval.ts) in-process, on the fake clock, against the testbed's
// Kubernetes API peer on loopback (three nodes of a VMSS Uniform pool): an event naming one VM approved after a
// complete drain; one naming several listed once and declined by the nodes that do not approve it (a Waiting record and
// a Node Event naming the approver); the approving node waiting for the others' marks to say drained, then approving,
// or declining at the deadline; a named node gone from the cluster holds nothing. End to end, with the built agents:
// test/integration/kubernetes-cluster.test.ts.
import { capturingLogger } from "../helpers/capturing-logger.js";
import { Registry } from "prom-client";
import { describe, expect, it, type TestContext } from "vitest";
import type { KubernetesRecord } from "../../src/contract/record.js";
import type { ActionRow, HoldVerdict } from "../../src/agent/actions/action-ledger.js";
import { createKubeApi, type KubeApi } from "../../src/agent/actions/kubernetes/client.js";
import { ClusterApproval } from "../../src/agent/actions/kubernetes/cluster-approval.js";
import { drainedReason, incompleteReason } from "../../src/agent/actions/kubernetes/cluster.js";
import { encodeMark, markAnnotationKey } from "../../src/agent/actions/kubernetes/marks.js";
import { KubernetesMetrics } from "../../src/agent/actions/kubernetes/metrics.js";
import { NodeIo } from "../../src/agent/actions/kubernetes/node-io.js";
import { initialNodeState, type NodeActionState } from "../../src/agent/actions/kubernetes/node-state.js";
import type { NodePolicy } from "../../src/agent/actions/kubernetes/settings.js";
import { azureNodeSeed, startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { transition, vm } from "./fixtures.js";

const eventId = "D0000000-0000-4000-8000-00000000000A";
const resourceId = (n: number): string =>
  `/subscriptions/s/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/${n}`;
const seeds = [0, 1, 2].map((n) => azureNodeSeed(resourceId(n)));
const nodes = seeds.map((s) => s.name);
const vmNames = ["pool_0", "pool_1", "pool_2"];
const podPollMs = 2_000;
const startMs = Date.parse("2026-12-07T10:00:00.000Z");
const row = { eventKey: eventId, actionKey: `kubernetes:${eventId}` } as ActionRow;

interface Release {
  verdict: HoldVerdict;
  reason: string;
  state: NodeActionState;
}

interface SetUp {
  peer: KubernetesPeer;
  approval: ClusterApproval;
  clock: FakeClock;
  steps: { state: NodeActionState; record: KubernetesRecord }[];
  saved: NodeActionState[];
  releases: Release[];
  /** The deadline the host reports (wall ms). */
  deadline: { ms: number };
  markDrained: (node: string) => void;
  eventsOn: (node: string) => { reason: string; message: string; type: string }[];
  nodeReads: () => string[];
  listed: () => number;
  /** What the approval logged (pino's JSON lines, parsed). */
  lines: Array<Record<string, unknown>>;
}

async function setUp(
  test: TestContext,
  thisNode: string,
  drained: string[] = [],
  /** The KubeApi the approval reads the named nodes through (default: the client itself). */
  wrap: (kube: KubeApi) => KubeApi = (kube) => kube,
): Promise<SetUp> {
  const mark = (drainedAt?: string): string =>
    encodeMark({
      eventId,
      eventType: "Reboot",
      notBefore: "2026-12-07T10:15:00.000Z",
      policy: "drain-then-approve",
      cordoned: true,
      markedAt: "2026-12-07T09:58:00.000Z",
      ...(drainedAt !== undefined ? { drainedAt } : {}),
    });
  const peer = await startKubernetesPeer({
    seed: {
      nodes: seeds.map((s) => ({
        ...s,
        annotations: {
          [markAnnotationKey(eventId)]: mark(drained.includes(s.name) ? "2026-12-07T09:59:00.000Z" : undefined),
        },
      })),
    },
  });
  const kube = await createKubeApi({ kubeconfig: peer.kubeconfigPath, requestTimeoutMs: 10_000 });
  test.onTestFinished(async () => {
    kube.close();
    await peer.close();
  });
  const clock = new FakeClock(startMs);
  const { logger, lines } = capturingLogger();
  const metrics = new KubernetesMetrics(new Registry());
  const io = new NodeIo({
    nodeName: thisNode,
    api: () => kube,
    vm: () => vm,
    clock,
    logger,
    metrics,
    agentVersion: "1.0.0",
  });
  const steps: SetUp["steps"] = [];
  const saved: NodeActionState[] = [];
  const releases: Release[] = [];
  const deadline = { ms: startMs + 60_000 };
  const reader = wrap(kube);
  const approval = new ClusterApproval({
    io,
    api: () => reader,
    clock,
    logger,
    podPollMs,
    deadlineMs: () => deadline.ms,
    commitStep: (_row, state, record) => steps.push({ state, record }),
    saveState: (_row, state) => saved.push(state),
    release: (_row, state, verdict, reason) => {
      releases.push({ verdict, reason, state });
      return 7;
    },
  });
  const markDrained = (node: string): void => {
    peer.state.updateNode(node, (n) => {
      n.metadata.annotations = {
        ...n.metadata.annotations,
        [markAnnotationKey(eventId)]: mark("2026-12-07T10:00:30.000Z"),
      };
    });
  };
  const eventsOn = (node: string) =>
    peer.state
      .events()
      .map((e) => e as unknown as { involvedObject: { name: string }; reason: string; message: string; type: string })
      .filter((e) => e.involvedObject.name === node)
      .map(({ reason, message, type }) => ({ reason, message, type }));
  const nodeReads = () =>
    peer.state
      .requests()
      .filter((r) => r.resource === "nodes" && r.verb === "get")
      .map((r) => r.name ?? "");
  const listed = () => peer.state.requests().filter((r) => r.resource === "nodes" && r.verb === "list").length;
  return { peer, approval, clock, steps, saved, releases, deadline, markDrained, eventsOn, nodeReads, listed, lines };
}

const reboot = (resources: string[]) => transition({ EventId: eventId, EventType: "Reboot", Resources: resources });
const drainedState = (): NodeActionState => ({ ...initialNodeState(), phase: "drained" });
const detailOf = (record: KubernetesRecord): Record<string, unknown> =>
  JSON.parse(record.Detail) as Record<string, unknown>;
const policy: NodePolicy = "drain-then-approve";

describe.concurrent("the approval after the node's steps (cluster-approval.ts) against the Kubernetes API peer", () => {
  it("an event naming only this VM: approved after a complete drain, without listing the nodes", async (test) => {
    const s = await setUp(test, nodes[0]!);
    expect(await s.approval.settle(row, reboot([vmNames[0]!]), drainedState(), policy)).toBe(7);
    expect(s.releases.map((r) => [r.verdict, r.reason])).toEqual([["approve", drainedReason]]);
    expect(s.lines).toEqual([]); // approving: nothing said of not approving
    expect(s.listed()).toBe(0);
    expect(s.saved).toEqual([]);
    expect(s.steps).toEqual([]);
  });

  it("a node that does not approve (not first): the nodes listed once, a Waiting record and a Node Event naming the approver, declined", async (test) => {
    const s = await setUp(test, nodes[1]!);
    const record = reboot(["other_7", ...vmNames]);
    await s.approval.settle(row, record, drainedState(), policy);
    expect(s.listed()).toBe(1);
    expect(s.saved).toHaveLength(1);
    expect(s.saved[0]!.named).toEqual({
      nodes: nodes.map((node, i) => expect.objectContaining({ node, vmName: vmNames[i] })),
      outside: ["other_7"],
    });
    expect(s.steps).toHaveLength(1);
    expect(s.steps[0]!.record).toMatchObject({ EventId: eventId, EventStatus: "Scheduled", Outcome: "Waiting" });
    expect(detailOf(s.steps[0]!.record)).toEqual({
      node: nodes[1],
      policy,
      nodesNamed: nodes,
      outsideCluster: ["other_7"],
      approver: nodes[0],
    });
    expect(s.eventsOn(nodes[1]!)).toEqual([
      {
        reason: "ScheduledEventWaiting",
        type: "Normal",
        message: `Reboot ${eventId} names 3 nodes of this cluster: ${nodes[0]} approves it once all have drained`,
      },
    ]);
    expect(s.releases.map((r) => r.verdict)).toEqual(["decline"]);
    expect(s.releases[0]!.reason).toContain(`${nodes[0]} approves it once all have drained`);
    expect(s.lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: "not approving after the drain",
        eventId,
        verdict: "decline",
        why: s.releases[0]!.reason,
      }),
    ]);
    // Settled again (a restart): the nodes are not listed again.
    await s.approval.settle(row, record, { ...drainedState(), named: s.saved[0]!.named! }, policy);
    expect(s.listed()).toBe(1);
  });

  it("the approving node waits for the others' marks to say drained, then approves once", async (test) => {
    const s = await setUp(test, nodes[0]!, [nodes[1]!]);
    const record = reboot(vmNames);
    expect(await s.approval.settle(row, record, drainedState(), policy)).toBe(0);
    expect(s.releases).toEqual([]);
    expect(s.steps).toHaveLength(1);
    const waiting = s.steps[0]!;
    expect(waiting.state).toMatchObject({ phase: "waiting", waitingFor: [nodes[2]] });
    expect(detailOf(waiting.record)).toEqual({
      node: nodes[0],
      policy,
      nodesNamed: nodes,
      approver: nodes[0],
      waitingFor: [nodes[2]],
    });
    expect(s.eventsOn(nodes[0]!)).toEqual([
      {
        reason: "ScheduledEventWaiting",
        type: "Normal",
        message: `Reboot ${eventId}: waiting for 1 of 3 nodes: ${nodes[2]}; this node approves it once all have drained`,
      },
    ]);
    expect(s.lines).toEqual([
      expect.objectContaining({
        level: 30,
        eventId,
        waitingFor: [nodes[2]],
        msg: `waiting for 1 of 3 nodes: ${nodes[2]}`,
      }),
    ]);
    // Still draining: looked at again after podPollMs (or at the deadline when sooner, at least 50 ms).
    const saves = s.saved.length;
    expect(await s.approval.wait(row, record, waiting.state, policy)).toBe(podPollMs);
    expect(s.saved).toHaveLength(saves);
    s.clock.jump(60_000 - 1_000);
    expect(await s.approval.wait(row, record, waiting.state, policy)).toBe(1_000);
    s.clock.jump(990);
    expect(await s.approval.wait(row, record, waiting.state, policy)).toBe(50);
    s.markDrained(nodes[2]!);
    expect(await s.approval.wait(row, record, waiting.state, policy)).toBe(7);
    expect(s.releases.map((r) => r.verdict)).toEqual(["approve"]);
    expect(s.releases[0]!.reason).toBe(`every node the event names has drained (3 of 3: ${nodes.join(", ")})`);
    expect(s.releases[0]!.state.waitingFor).toEqual([]);
    expect(s.lines.map((l) => l.msg)).not.toContain("not approving after the drain");
    expect(s.eventsOn(nodes[0]!).map((e) => [e.reason, e.message])).toContainEqual([
      "ScheduledEventNodesDrained",
      `Reboot ${eventId}: ${s.releases[0]!.reason}`,
    ]);
  });

  it("fewer nodes left: the wait saves them; a named node gone from the cluster (404) holds nothing", async (test) => {
    const s = await setUp(test, nodes[0]!);
    const record = reboot(vmNames);
    await s.approval.settle(row, record, drainedState(), policy);
    const state = s.steps[0]!.state;
    expect(state.waitingFor).toEqual([nodes[1], nodes[2]]);
    s.markDrained(nodes[1]!);
    await s.approval.wait(row, record, state, policy);
    expect(s.saved.at(-1)!.waitingFor).toEqual([nodes[2]]);
    s.peer.state.injectFault({
      match: { resources: ["nodes"], verbs: ["get"], names: [nodes[2]!] },
      answer: { kind: "status", code: 404, reason: "NotFound", message: `nodes "${nodes[2]}" not found` },
    });
    await s.approval.wait(row, record, state, policy);
    expect(s.releases.map((r) => r.verdict)).toEqual(["approve"]);
  });

  it("any other error reading a named node is thrown (the step is tried again), nothing released", async (test) => {
    const s = await setUp(test, nodes[0]!);
    const record = reboot(vmNames);
    await s.approval.settle(row, record, drainedState(), policy);
    // The other nodes' reads fail (500), not this node's: a swallowed error would approve (this node's Event read works).
    s.peer.state.injectFault({
      match: { resources: ["nodes"], verbs: ["get"], names: [nodes[1]!, nodes[2]!] },
      answer: { kind: "internal-error" },
    });
    await expect(s.approval.wait(row, record, s.steps[0]!.state, policy)).rejects.toThrow();
    expect(s.releases).toEqual([]);
  });

  it("the deadline with a node still draining: declined, a NotApproved record and a Warning Event", async (test) => {
    const s = await setUp(test, nodes[0]!, [nodes[1]!]);
    const record = reboot(vmNames);
    await s.approval.settle(row, record, drainedState(), policy);
    s.clock.jump(60_000);
    await s.approval.wait(row, record, s.steps[0]!.state, policy);
    expect(s.releases.map((r) => r.verdict)).toEqual(["decline"]);
    const reason = `not every node had drained by the deadline: waiting for 1 of 3 nodes: ${nodes[2]}; the event starts at NotBefore`;
    expect(s.releases[0]!.reason).toBe(reason);
    expect(s.releases[0]!.state.waitingFor).toEqual([nodes[2]]);
    const last = s.steps.at(-1)!.record;
    expect(last.Outcome).toBe("NotApproved");
    expect(detailOf(last)).toEqual({
      node: nodes[0],
      policy,
      nodesNamed: nodes,
      approver: nodes[0],
      waitingFor: [nodes[2]],
      reason,
    });
    expect(s.lines.at(-1)).toMatchObject({ level: 40, eventId, waitingFor: [nodes[2]], msg: reason });
    expect(s.eventsOn(nodes[0]!).at(-1)).toEqual({
      reason: "ScheduledEventNotApproved",
      type: "Warning",
      message: `Reboot ${eventId}: ${reason}`,
    });
  });

  it("every other node already drained: approved at once, without a Waiting record", async (test) => {
    const s = await setUp(test, nodes[0]!, [nodes[1]!, nodes[2]!]);
    await s.approval.settle(row, reboot(vmNames), drainedState(), policy);
    expect(s.steps).toEqual([]);
    expect(s.releases.map((r) => r.verdict)).toEqual(["approve"]);
    expect(s.eventsOn(nodes[0]!).map((e) => e.reason)).toEqual(["ScheduledEventNodesDrained"]);
  });

  it("an incomplete drain declines; policy drain leaves a complete wave to the rules (done)", async (test) => {
    const s = await setUp(test, nodes[0]!, [nodes[1]!, nodes[2]!]);
    await s.approval.settle(row, reboot(vmNames), { ...initialNodeState(), phase: "incomplete" }, policy);
    expect(s.releases.map((r) => [r.verdict, r.reason])).toEqual([["decline", incompleteReason]]);
    expect(s.steps).toEqual([]); // the approving node names no other approver
    expect(s.lines.at(-1)).toMatchObject({
      msg: "not approving after the drain",
      verdict: "decline",
      why: incompleteReason,
    });
    await s.approval.settle(row, reboot(vmNames), drainedState(), "drain");
    expect(s.releases[1]!.verdict).toBe("done");
    const single = s.lines.length;
    // A policy that does not ask for the approval says nothing of it.
    await s.approval.settle(row, reboot([vmNames[0]!]), drainedState(), "cordon");
    expect(s.releases[2]!.verdict).toBe("done");
    expect(s.lines).toHaveLength(single);
  });

  it("past the deadline before the nodes were listed: declined without listing them", async (test) => {
    const s = await setUp(test, nodes[0]!);
    s.deadline.ms = startMs;
    await s.approval.settle(row, reboot(vmNames), drainedState(), policy);
    expect(s.listed()).toBe(0);
    expect(s.releases.map((r) => [r.verdict, r.reason])).toEqual([
      ["decline", "the nodes the event names could not be listed before the deadline; the event starts at NotBefore"],
    ]);
  });

  it("records name VMs outside the cluster only when there are: none on a declining node's, some on the approver's", async (test) => {
    const s = await setUp(test, nodes[2]!);
    await s.approval.settle(row, reboot(vmNames), drainedState(), policy);
    expect(detailOf(s.steps[0]!.record)).toEqual({ node: nodes[2], policy, nodesNamed: nodes, approver: nodes[0] });

    const approver = await setUp(test, nodes[0]!);
    await approver.approval.settle(row, reboot([...vmNames, "other_7"]), drainedState(), policy);
    expect(detailOf(approver.steps[0]!.record)).toEqual({
      node: nodes[0],
      policy,
      nodesNamed: nodes,
      outsideCluster: ["other_7"],
      approver: nodes[0],
      waitingFor: [nodes[1], nodes[2]],
    });
  });

  it("an event naming one other node of the cluster but not this one: declined, no Waiting record, no Node Event", async (test) => {
    const s = await setUp(test, nodes[0]!);
    await s.approval.settle(row, reboot([vmNames[1]!, "other_7"]), drainedState(), policy);
    expect(s.saved.at(-1)!.named).toEqual({
      nodes: [expect.objectContaining({ node: nodes[1] })],
      outside: ["other_7"],
    });
    expect(s.releases.map((r) => [r.verdict, r.reason])).toEqual([
      ["decline", `this node (${nodes[0]}) is not among the nodes the event names; it leaves the approval to them`],
    ]);
    expect(s.steps).toEqual([]);
    expect(s.eventsOn(nodes[0]!)).toEqual([]);
  });

  it("a named node without sef's mark for the event (its agent has not marked it yet) is waited for", async (test) => {
    const s = await setUp(test, nodes[0]!, [nodes[1]!]);
    s.peer.state.updateNode(nodes[2]!, (n) => {
      n.metadata.annotations = {};
    });
    expect(await s.approval.settle(row, reboot(vmNames), drainedState(), policy)).toBe(0);
    expect(s.steps[0]!.state).toMatchObject({ phase: "waiting", waitingFor: [nodes[2]] });
    expect(s.releases).toEqual([]);
  });

  it("only the Kubernetes API's own NotFound means a named node is gone: another error with a 404 status is thrown", async (test) => {
    const s = await setUp(test, nodes[0]!, [], (kube) => ({
      ...kube,
      readNode: async (name) => {
        if (name !== nodes[2]) return kube.readNode(name);
        throw Object.assign(new Error("HTTP 404 from a proxy in front of the API server"), { status: 404 });
      },
    }));
    await expect(s.approval.settle(row, reboot(vmNames), drainedState(), policy)).rejects.toThrow(/proxy/);
    expect(s.steps).toEqual([]);
    expect(s.releases).toEqual([]);
  });
});
