// The kubernetes action of the built agent against the IMDS simulator and the local Kubernetes API peer: a Scheduled
// Reboot on a node of 20 pods (2 DaemonSet pods, one held by a PodDisruptionBudget for a while) is tainted and cordoned,
// drained through the Eviction API, approved only after, and undone when the event is over.
import { describe, expect, it } from "vitest";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitUntil, waitForMetricsUrl } from "../helpers/agent-process.js";
import {
  eventReasons,
  kubeAgent,
  waitForKubernetesReady,
  nodeName,
  nodePods,
  nodeSpec,
  sefMarkOf,
  sefMarksOn,
  startNodePeer,
} from "../helpers/kubernetes-node.js";

const taintKey = "sef.azure.com/scheduled-event-reboot";
const event = (id: string, over: Record<string, unknown> = {}) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  notBeforeInSeconds: 120,
  autoStart: false,
  ...over,
});

describe("kubernetes action: drain, approve, undo", () => {
  it("a Scheduled Reboot: tainted and cordoned within a poll, every evictable pod evicted (the PDB pod once allowed), approved after, uncordoned on Completed", async () => {
    const pdbBlockMs = 12_000;
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(20), { pdbBlockMs });
    const setup = kubeAgent(sim, peer);
    const agent = setup.start();
    const id = "A1B2C3D4-0000-4000-8000-000000000001";
    let metrics = "";
    try {
      const metricsUrl = await waitForMetricsUrl(agent);
      await waitForKubernetesReady(agent);
      // The budget allows no disruption from the notice on, then for pdbBlockMs after the drain first asks.
      peer.state.blockDisruptions("apps", "db", Number.POSITIVE_INFINITY);
      sim.setEvents([event(id)]);
      await waitUntil(() => nodeSpec(peer.state.node(nodeName)).unschedulable === true, 30_000, "the cordon");
      expect(nodeSpec(peer.state.node(nodeName)).taints).toContainEqual(
        expect.objectContaining({ key: taintKey, value: id, effect: "NoSchedule" }),
      );
      expect(sefMarkOf(peer.state.node(nodeName), id)).toMatchObject({
        eventId: id,
        eventType: "Reboot",
        policy: "drain-then-approve",
        cordoned: true,
      });
      await waitUntil(
        () => peer.state.evictions().some((e) => e.pod === "db-0" && e.outcome === "blocked"),
        60_000,
        "the first refusal by the PDB",
      );
      peer.state.blockDisruptions("apps", "db", pdbBlockMs);
      await waitUntil(() => sim.status().approvals.length > 0, 90_000, "the approval after the drain");
      const approvedAtMs = sim.status().approvals[0]!.atMs;
      const evictions = peer.state.evictions();
      const evicted = evictions.filter((e) => e.outcome === "evicted");
      // 17 ReplicaSet pods and db-0; never a DaemonSet pod, never sef's own.
      expect(evicted.map((e) => e.pod).sort()).toEqual(
        [
          ...nodePods(20)
            .slice(2)
            .map((p) => p.name),
        ].sort(),
      );
      expect(evictions.filter((e) => e.pod === "db-0").map((e) => e.outcome)).toContain("blocked");
      // The hold, as the peer saw it: from its first refusal (the block of pdbBlockMs was set after it) to db-0's
      // eviction, on the peer's monotonic clock.
      const firstRefusal = evictions.find((e) => e.pod === "db-0" && e.outcome === "blocked")!;
      const dbEvicted = evicted.find((e) => e.pod === "db-0")!;
      expect(dbEvicted.monotonicMs - firstRefusal.monotonicMs).toBeGreaterThanOrEqual(pdbBlockMs);
      expect(Math.max(...evicted.map((e) => e.atMs))).toBeLessThan(approvedAtMs);
      expect(
        peer.state
          .pods({ nodeName })
          .map((p) => p.metadata.name)
          .sort(),
      ).toEqual(["kube-proxy-x1", "sef-abcde"]);
      await waitUntil(
        () => setup.records().some((r) => r.RecordType === "Transition" && r.EventStatus === "Started"),
        15_000,
        "the event to start",
      );
      metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
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
    expect(sim.status().approvals).toHaveLength(1);
    expect(eventReasons(peer)).toEqual([
      "ScheduledEventNoticed",
      "ScheduledEventDraining",
      "ScheduledEventDrained",
      "ScheduledEventUncordoned",
    ]);
    const steps = setup.kubernetesRecords();
    // Within one poll: the node is patched right after the poll that recorded the Scheduled transition (no waiting).
    const scheduled = setup.records().find((r) => r.RecordType === "Transition" && r.EventStatus === "Scheduled")!;
    const firstPatch = peer.state
      .requests()
      .find((r) => r.method === "PATCH" && r.path.startsWith(`/api/v1/nodes/${nodeName}`))!;
    expect(firstPatch.atMs - Date.parse(scheduled.TimeGenerated)).toBeLessThan(3_000);
    expect(steps.map((r) => `${r.EventStatus}:${r.Outcome}`)).toEqual([
      "Scheduled:Cordoned",
      "Scheduled:Draining",
      "Scheduled:Drained",
      "Completed:Uncordoned",
    ]);
    const drained = JSON.parse(steps[2]!.Detail) as Record<string, unknown>;
    expect(drained).toMatchObject({
      node: nodeName,
      policy: "drain-then-approve",
      podsEvicted: 18,
      podsBlockedByPdb: ["apps/db-0"],
    });
    expect(drained.pdbHeldSeconds).toBeGreaterThan(5);
    expect(steps[2]!.ElapsedMs).toBeGreaterThan(5_000);
    const kinds = setup.records().map((r) => r.RecordType);
    expect(kinds.lastIndexOf("Kubernetes", kinds.indexOf("Approval"))).toBeGreaterThan(-1);
    expect(setup.records().find((r) => r.RecordType === "Approval")).toMatchObject({
      Outcome: "Approved",
      Detail: expect.stringContaining("drain-then-approve"),
    });
    expect(metrics).toMatch(/^sef_kubernetes_evictions_total\{outcome="evicted"\} 18$/m);
    expect(metrics).toMatch(/^sef_kubernetes_evictions_total\{outcome="pdb_refused"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^sef_kubernetes_drain_duration_seconds_count\{outcome="drained"\} 1$/m);
  }, 200_000);
});
