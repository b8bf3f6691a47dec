// The kubernetes action of the built agent at its edges: a drain whose deadline passes while a PodDisruptionBudget
// still holds a pod (DrainIncomplete names it, no approval), and a NODE_NAME that is not this VM (nothing done, counted).
import { describe, expect, it } from "vitest";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitForMetricsUrl, waitUntil } from "../helpers/agent-process.js";
import { actionsSettled } from "../helpers/ledger-probe.js";
import {
  eventReasons,
  kubeAgent,
  nodeName,
  nodePods,
  nodeSpec,
  providerIdOf,
  startNodePeer,
  waitForKubernetesReady,
} from "../helpers/kubernetes-node.js";

const event = (id: string, over: Record<string, unknown> = {}) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  autoStart: false,
  ...over,
});

describe.concurrent("kubernetes action: incomplete drain, another VM's node, in-cluster credentials", () => {
  it("in-cluster credentials (service-account token and CA, KUBERNETES_SERVICE_HOST/PORT) as a pod has them", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(4));
    const setup = kubeAgent(
      sim,
      peer,
      { kubeconfig: undefined, inClusterPathPrefix: peer.inCluster.pathPrefix, drainLeadMs: 60_000 },
      {},
      peer.inCluster.env,
    );
    const agent = setup.start();
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([event("AD1B2C3D-0000-4000-8000-000000000009", { notBeforeInSeconds: 900 })]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Cordoned"), 30_000, "the first step");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    expect(agent.stderr()).toContain('"credentials":"in-cluster"');
    expect(nodeSpec(peer.state.node(nodeName)).unschedulable).toBe(true);
  }, 150_000);

  it("the deadline passes with a pod held by a PDB: DrainIncomplete names it, a Warning Event, and no approval", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(6), { pdbBlockMs: Number.POSITIVE_INFINITY });
    const setup = kubeAgent(sim, peer, { deadlineReserveMs: 5_000 });
    const agent = setup.start();
    const id = "AB1B2C3D-0000-4000-8000-000000000007";
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([event(id, { notBeforeInSeconds: 25 })]);
      await waitUntil(
        () => setup.kubernetesRecords().some((r) => r.Outcome === "DrainIncomplete"),
        60_000,
        "the incomplete drain",
      );
      await waitUntil(
        () => actionsSettled(setup.dataDir),
        30_000,
        "the actions to settle after it (no approval to follow)",
      );
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    const incomplete = setup.kubernetesRecords().find((r) => r.Outcome === "DrainIncomplete")!;
    expect(JSON.parse(incomplete.Detail)).toMatchObject({
      podsLeft: ["apps/db-0"],
      podsBlockedByPdb: ["apps/db-0"],
      podsEvicted: 3,
    });
    const transition = setup.records().find((r) => r.RecordType === "Transition")! as { NotBefore: string };
    // The deadline is NotBefore minus the reserve: the step is written after it, and before NotBefore.
    expect(Date.parse(incomplete.TimeGenerated)).toBeGreaterThanOrEqual(Date.parse(transition.NotBefore) - 5_000);
    expect(sim.status().approvals).toEqual([]);
    expect(eventReasons(peer)).toContain("ScheduledEventDrainIncomplete");
    expect(
      peer.state.events().find((e) => (e as unknown as { reason: string }).reason === "ScheduledEventDrainIncomplete"),
    ).toMatchObject({ type: "Warning" });
    expect(nodeSpec(peer.state.node(nodeName)).unschedulable).toBe(true);
  }, 150_000);

  it("a NODE_NAME whose providerID is another VM: the node is left alone, the mismatch is counted, the event only forwarded", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(4), { providerID: providerIdOf(sim, "WestNO_1") });
    const setup = kubeAgent(sim, peer);
    const agent = setup.start();
    let metrics = "";
    try {
      const metricsUrl = await waitForMetricsUrl(agent);
      await waitForKubernetesReady(agent);
      sim.setEvents([event("AC1B2C3D-0000-4000-8000-000000000008", { notBeforeInSeconds: 60 })]);
      await waitUntil(() => agent.stderr().includes("the node is not this VM"), 30_000, "the mismatch");
      metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
    expect(metrics).toMatch(/^sef_kubernetes_node_mismatch_total 1$/m);
    expect(peer.state.requests().filter((r) => r.method !== "GET")).toEqual([]);
    expect(setup.kubernetesRecords()).toEqual([]);
    expect(sim.status().approvals).toEqual([]);
  }, 150_000);
});
