// The kubernetes action of the built agent, the paths beside the full drain: a Canceled event is undone, an operator's
// own cordon stays, Freeze changes nothing by default, a Preempt's 30 s notice is drained and approved inside it, and a
// drain cut by kill -9 resumes after the restart with the event approved once.
import { describe, expect, it } from "vitest";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitUntil } from "../helpers/agent-process.js";
import { actionSteps, actionsSettled } from "../helpers/ledger-probe.js";
import {
  eventReasons,
  kubeAgent,
  waitForKubernetesReady,
  nodeName,
  nodePods,
  nodeSpec,
  sefMarksOn,
  startNodePeer,
} from "../helpers/kubernetes-node.js";

const event = (id: string, over: Record<string, unknown> = {}) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  notBeforeInSeconds: 900,
  autoStart: false,
  ...over,
});

describe.concurrent("kubernetes action: undo, operator cordon, Freeze, Preempt, kill -9", () => {
  it("Canceled before the drain started: the taint, the annotations and sef's cordon are taken off", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(6));
    const setup = kubeAgent(sim, peer, { drainLeadMs: 60_000 });
    const agent = setup.start();
    const id = "B1B2C3D4-0000-4000-8000-000000000002";
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([event(id)]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Cordoned"), 15_000, "the cordon");
      expect(nodeSpec(peer.state.node(nodeName)).unschedulable).toBe(true);
      sim.setEvents([]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Uncordoned"), 15_000, "the undo");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    const node = peer.state.node(nodeName);
    expect(sefMarksOn(node)).toEqual({ cordoned: false, taints: [], sefAnnotations: [] });
    expect(peer.state.evictions()).toEqual([]);
    expect(sim.status().approvals).toEqual([]);
    expect(setup.kubernetesRecords().map((r) => `${r.EventStatus}:${r.Outcome}`)).toEqual([
      "Scheduled:Cordoned",
      "Canceled:Uncordoned",
    ]);
    expect(eventReasons(peer)).toEqual(["ScheduledEventNoticed", "ScheduledEventUncordoned"]);
  }, 150_000);

  it("a node an operator cordoned stays cordoned after the event (only sef's taint goes)", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(4), { unschedulable: true });
    const setup = kubeAgent(sim, peer, { drainLeadMs: 60_000 });
    const agent = setup.start();
    const id = "C1B2C3D4-0000-4000-8000-000000000003";
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([event(id)]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Cordoned"), 15_000, "the first step");
      expect(nodeSpec(peer.state.node(nodeName)).taints).toHaveLength(1);
      sim.setEvents([]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Released"), 15_000, "the undo");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    const node = peer.state.node(nodeName);
    expect(sefMarksOn(node)).toMatchObject({ cordoned: true, taints: [] });
    const released = setup.kubernetesRecords().find((r) => r.Outcome === "Released")!;
    expect(JSON.parse(released.Detail)).toMatchObject({ keptCordoned: expect.stringContaining("operator") });
  }, 150_000);

  it("Freeze changes nothing by default: no patch, no eviction, no Kubernetes record, the event is only forwarded", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(4));
    const setup = kubeAgent(sim, peer);
    const agent = setup.start();
    const before = JSON.stringify(peer.state.node(nodeName));
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([
        event("D1B2C3D4-0000-4000-8000-000000000004", {
          EventType: "Freeze",
          DurationInSeconds: 5,
          notBeforeInSeconds: 30,
        }),
      ]);
      await waitUntil(() => setup.records().some((r) => r.RecordType === "Transition"), 15_000, "the transition");
      await waitUntil(() => actionsSettled(setup.dataDir), 15_000, "the actions on the Freeze to settle");
      sim.setEvents([]);
      await waitUntil(
        () => setup.records().some((r) => r.RecordType === "Transition" && r.EventStatus === "Canceled"),
        15_000,
        "the end of the event",
      );
      await waitUntil(() => actionsSettled(setup.dataDir), 15_000, "the actions on its end to settle");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    expect(JSON.stringify(peer.state.node(nodeName))).toBe(before);
    expect(peer.state.requests().filter((r) => r.method !== "GET")).toEqual([]);
    expect(setup.kubernetesRecords()).toEqual([]);
    expect(sim.status().approvals).toEqual([]);
  }, 150_000);

  it("a Preempt with 30 s notice is drained (grace periods capped by the time left) and approved inside the notice", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(10, { graceSeconds: 60, stopsAfterSeconds: 2 }));
    const setup = kubeAgent(sim, peer);
    const agent = setup.start();
    const id = "E1B2C3D4-0000-4000-8000-000000000005";
    let scheduledAtMs = 0;
    try {
      await waitForKubernetesReady(agent);
      // The simulator's own clock, on both ends of the bound: when it listed the event and when the approval came.
      scheduledAtMs = sim.setEvents([event(id, { EventType: "Preempt", notBeforeInSeconds: 30 })]).changedAtMs;
      await waitUntil(() => sim.status().approvals.length > 0, 30_000, "the approval");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    expect(sim.status().approvals[0]!.atMs - scheduledAtMs).toBeLessThan(30_000);
    const evicted = peer.state.evictions().filter((e) => e.outcome === "evicted");
    expect(evicted).toHaveLength(8);
    for (const e of evicted) expect(e.gracePeriodSeconds ?? 99, e.pod).toBeLessThanOrEqual(28);
    expect(setup.kubernetesRecords().map((r) => r.Outcome)).toEqual(["Cordoned", "Draining", "Drained"]);
    expect(nodeSpec(peer.state.node(nodeName)).taints).toContainEqual(
      expect.objectContaining({ key: "sef.azure.com/scheduled-event-preempt", value: id }),
    );
  }, 150_000);

  it("kill -9 mid-drain: the restarted agent resumes the drain, approves once, and takes no step twice", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(12), { pdbBlockMs: 0 });
    const setup = kubeAgent(sim, peer);
    const first = setup.start();
    let second: ReturnType<typeof setup.start> | undefined;
    const id = "F1B2C3D4-0000-4000-8000-000000000006";
    try {
      await waitForKubernetesReady(first);
      peer.state.blockDisruptions("apps", "db", Number.POSITIVE_INFINITY);
      sim.setEvents([event(id, { notBeforeInSeconds: 120 })]);
      await waitUntil(
        () => peer.state.evictions().some((e) => e.pod === "db-0" && e.outcome === "blocked"),
        60_000,
        "the drain to be held by the PDB",
      );
      await waitUntil(
        () => peer.state.evictions().filter((e) => e.outcome === "evicted").length === 9,
        60_000,
        "the other pods' evictions",
      );
      // Once the progress is persisted (after each group of evictions), while the PDB still holds db-0.
      const persisted = (step: unknown) => {
        const drain = (step as { drain?: { evicted: string[]; pdbBlocked: string[] } }).drain;
        return drain !== undefined && drain.evicted.length === 9 && drain.pdbBlocked.includes("apps/db-0");
      };
      await waitUntil(() => actionSteps(setup.dataDir).some(persisted), 15_000, "the drain's progress in the ledger");
      expect(peer.state.pods({ nodeName }).map((p) => p.metadata.name)).toContain("db-0");
      expect(await first.stop("SIGKILL")).toBe("SIGKILL");
      const blockedBeforeKill = peer.state
        .evictions()
        .filter((e) => e.pod === "db-0" && e.outcome === "blocked").length;
      expect(sim.status().approvals).toEqual([]);
      second = setup.start();
      await waitForKubernetesReady(second);
      await waitUntil(
        () =>
          peer.state.evictions().filter((e) => e.pod === "db-0" && e.outcome === "blocked").length > blockedBeforeKill,
        60_000,
        "the resumed drain to ask again",
      );
      peer.state.allowDisruptions("apps", "db");
      await waitUntil(() => sim.status().approvals.length > 0, 60_000, "the approval after the resumed drain");
      await waitUntil(() => actionsSettled(setup.dataDir), 30_000, "the actions to settle after the approval");
      expect(await second.stop("SIGTERM")).toBe(0);
    } finally {
      await first.stop("SIGKILL");
      await second?.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    expect(sim.status().approvals.map((a) => [a.EventId, a.count])).toEqual([[id, 1]]);
    expect(peer.state.evictions().filter((e) => e.pod === "db-0" && e.outcome === "evicted")).toHaveLength(1);
    expect(
      peer.state
        .pods({ nodeName })
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(["kube-proxy-x1", "sef-abcde"]);
    const outcomes = setup.kubernetesRecords().map((r) => r.Outcome);
    expect(outcomes).toEqual(["Cordoned", "Draining", "Drained"]);
    expect(JSON.parse(setup.kubernetesRecords()[2]!.Detail)).toMatchObject({
      podsEvicted: 10,
      podsBlockedByPdb: ["apps/db-0"],
    });
  }, 200_000);
});
