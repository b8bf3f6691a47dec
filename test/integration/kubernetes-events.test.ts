// The kubernetes action of the built agent with events side by side and at their edges, against the IMDS simulator
// and the local Kubernetes API peer: a Preempt noticed while a Reboot's drain is held by a PodDisruptionBudget is
// marked at once, its pods get its shorter grace (sent again to pods already terminating) and the held pod is deleted
// at its deadline with the time left; a drain that leaves a pod approves nothing early, an eviction never reaches a pod
// recreated under the same name (uid precondition), and the load-balancer label comes and goes with sef's marks.
import { afterAll, describe, expect, it } from "vitest";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitUntil } from "../helpers/agent-process.js";
import { actionsSettled } from "../helpers/ledger-probe.js";
import {
  kubeAgent,
  nodeName,
  nodePods,
  nodeSpec,
  startNodePeer,
  tearDown,
  waitForKubernetesReady,
} from "../helpers/kubernetes-node.js";
import { kubectl, removeKubectlHome } from "../testbed/kubectl.js";

afterAll(removeKubectlHome);

const pollIntervalMs = 200; // kubeAgent's
const lbLabel = "node.kubernetes.io/exclude-from-external-load-balancers";
const event = (id: string, over: Record<string, unknown> = {}) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  autoStart: false,
  ...over,
});

describe.concurrent("kubernetes action: events side by side, deadlines, incomplete drains", () => {
  it("a Preempt during a PDB-held Reboot drain: marked within a poll + 300 ms, its grace sent again to terminating pods, the held pod deleted at its deadline with the time left", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    // Pods that take 120 s to stop once asked: still terminating (the Reboot's grace) when the Preempt comes.
    const pods = nodePods(6, { graceSeconds: 120, stopsAfterSeconds: 120 }).map((p) =>
      p.name === "db-0" ? { ...p, stopsAfterSeconds: "never" as const } : p,
    );
    const peer = await startNodePeer(sim, pods, { pdbBlockMs: Number.POSITIVE_INFINITY });
    const setup = kubeAgent(sim, peer);
    const agent = setup.start();
    const reboot = "A1B2C3D4-0000-4000-8000-0000000000A1";
    const preempt = "A1B2C3D4-0000-4000-8000-0000000000B2";
    let publishedAtMs = 0;
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([event(reboot, { notBeforeInSeconds: 600 })]);
      await waitUntil(
        () =>
          peer.state.evictions().some((e) => e.pod === "db-0" && e.outcome === "blocked") &&
          peer.state.pods({ nodeName }).filter((p) => p.metadata.deletionTimestamp).length === 3,
        60_000,
        "the Reboot's drain, held by the PDB, its other pods terminating",
      );
      publishedAtMs = sim.setEvents([
        event(reboot, { notBeforeInSeconds: 600 }),
        event(preempt, { EventType: "Preempt", notBeforeInSeconds: 30 }),
      ]).changedAtMs;
      await waitUntil(
        () => setup.kubernetesRecords().some((r) => r.EventId === preempt && r.Outcome === "DrainIncomplete"),
        60_000,
        "the Preempt's deadline",
      );
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await tearDown([agent], peer, sim);
    }
    const preemptTaint = `sef.azure.com/scheduled-event-preempt=${preempt}:NoSchedule`;
    const marked = peer.state.nodeWrites().find((w) => w.taintsAdded.includes(preemptTaint))!;
    expect(marked.atMs - publishedAtMs).toBeLessThanOrEqual(pollIntervalMs + 300);
    // Every eviction after the notice asked for at most the Preempt's notice; the terminating pods were asked again.
    const after = peer.state.evictions().filter((e) => e.atMs >= publishedAtMs && e.outcome === "evicted");
    expect([...new Set(after.map((e) => e.pod))].sort()).toEqual(["web-3", "web-4", "web-5"]);
    for (const e of after) expect(e.gracePeriodSeconds, e.pod).toBeLessThanOrEqual(30);
    const before = peer.state.evictions().filter((e) => e.atMs < publishedAtMs && e.outcome === "evicted");
    expect(before.map((e) => e.gracePeriodSeconds)).toEqual([120, 120, 120]); // the Reboot's grace, before
    // The PDB still refused db-0 at the Preempt's deadline: deleted with the time left before NotBefore as its grace.
    const transition = setup
      .records()
      .find((r) => r.RecordType === "Transition" && r.EventId === preempt) as unknown as { NotBefore: string };
    const db = peer.state.pod("apps", "db-0")!;
    const deletedAtMs = Date.parse(db.metadata.deletionTimestamp!) - db.metadata.deletionGracePeriodSeconds! * 1000;
    expect(db.metadata.deletionGracePeriodSeconds).toBeGreaterThanOrEqual(1);
    expect(db.metadata.deletionGracePeriodSeconds).toBeLessThanOrEqual(2); // deadlineReserveMs 2 s
    expect(Date.parse(db.metadata.deletionTimestamp!)).toBeLessThanOrEqual(Date.parse(transition.NotBefore) + 1_000);
    expect(deletedAtMs).toBeGreaterThanOrEqual(Date.parse(transition.NotBefore) - 2_000 - 1_000);
    const incomplete = setup.kubernetesRecords().find((r) => r.EventId === preempt && r.Outcome === "DrainIncomplete")!;
    expect(JSON.parse(incomplete.Detail)).toMatchObject({
      podsDeletedAtDeadline: ["apps/db-0"],
      deadlineGraceSeconds: db.metadata.deletionGracePeriodSeconds,
    });
    expect(sim.status().approvals).toEqual([]);
  }, 150_000);

  it("a pod left (emptyDir, evictEmptyDir false) holds the approval the rules would give; a pod recreated under its name is not evicted; the load-balancer label comes and goes", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(6)); // web-5 has an emptyDir volume
    const rules = { approval: { mode: "on", approver: "this-vm", rules: [{ eventType: ["Reboot"] }] } };
    const setup = kubeAgent(sim, peer, { evictEmptyDir: false, drainLeadMs: 60_000 }, rules);
    const agent = setup.start();
    const id = "A1B2C3D4-0000-4000-8000-0000000000C3";
    // As the eviction of web-3 arrives, its StatefulSet-like controller has replaced it (a new uid, same name).
    peer.state.recreateBeforeNextEviction({
      namespace: "apps",
      name: "web-3",
      nodeName,
      ownerReferences: [{ kind: "ReplicaSet", name: "web-7d9f" }],
      tolerations: [{ operator: "Exists" }],
    });
    const oldUid = peer.state.pod("apps", "web-3")!.metadata.uid;
    let labelledDuringEvent: string | undefined;
    let movedAtMs = 0;
    try {
      await waitForKubernetesReady(agent);
      // Noticed 10 min ahead (the drain would start 1 min before NotBefore), then IMDS moves NotBefore to 45 s away.
      sim.setEvents([event(id, { notBeforeInSeconds: 600 })]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Cordoned"), 30_000, "the mark");
      movedAtMs = sim.setEvents([event(id, { notBeforeInSeconds: 45 })]).changedAtMs;
      await waitUntil(
        () => setup.kubernetesRecords().some((r) => r.Outcome === "DrainIncomplete"),
        60_000,
        "the drain",
      );
      labelledDuringEvent = peer.state.node(nodeName)!.metadata.labels?.[lbLabel];
      await waitUntil(() => actionsSettled(setup.dataDir), 30_000, "the actions to settle after the drain");
      expect(sim.status().approvals).toEqual([]);
      sim.setEvents([]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Uncordoned"), 30_000, "the undo");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await tearDown([agent], peer, sim);
    }
    const incomplete = JSON.parse(setup.kubernetesRecords().find((r) => r.Outcome === "DrainIncomplete")!.Detail);
    expect(incomplete).toMatchObject({
      podsLeft: ["apps/web-5"],
      podsWithEmptyDir: ["apps/web-5"],
      incompleteBecause: "pods with emptyDir volumes are not evicted (evictEmptyDir is false)",
      podsArrivedTolerating: ["apps/web-3"],
    });
    // The drain followed the moved NotBefore: it started at once, with the new deadline.
    expect(Math.abs(Date.parse(incomplete.deadline) - (movedAtMs + 45_000 - 2_000))).toBeLessThan(1_500);
    expect(sim.status().approvals).toEqual([]);
    // The eviction named the old uid: 409, and the new pod was never evicted.
    const web3 = peer.state.evictions().filter((e) => e.pod === "web-3");
    expect(web3.map((e) => `${e.outcome}:${e.code}`)).toEqual(["refused:409"]);
    const replaced = peer.state.pod("apps", "web-3")!;
    expect(replaced.metadata.uid).not.toBe(oldUid);
    expect(replaced.metadata.deletionTimestamp).toBeUndefined();
    expect(labelledDuringEvent).toBe("true");
    expect(peer.state.node(nodeName)!.metadata.labels?.[lbLabel]).toBeUndefined();
    expect(nodeSpec(peer.state.node(nodeName)).unschedulable).not.toBe(true);
  }, 150_000);

  it("dry run: a record and a Node Event (read with kubectl) say what would be done; nothing is patched, evicted or deleted", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(6), { pdbBlockMs: Number.POSITIVE_INFINITY });
    const setup = kubeAgent(sim, peer, { dryRun: true });
    const agent = setup.start();
    const id = "A1B2C3D4-0000-4000-8000-0000000000D4";
    let events: { stdout: string; exitCode: number } = { stdout: "", exitCode: -1 };
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([event(id, { notBeforeInSeconds: 60 })]);
      await waitUntil(
        () => peer.state.events().some((e) => (e as unknown as { reason: string }).reason === "ScheduledEventDryRun"),
        30_000,
        "the dry run's Node Event",
      );
      await waitUntil(() => actionsSettled(setup.dataDir), 30_000, "the actions to settle");
      events = await kubectl(peer.kubeconfigPath, [
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "reason=ScheduledEventDryRun",
        "-o",
        "jsonpath={.items[*].message}",
      ]);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await tearDown([agent], peer, sim);
    }
    expect(events.exitCode).toBe(0);
    expect(events.stdout).toContain(`Reboot ${id} would have the node tainted and cordoned`);
    expect(events.stdout).toContain("a drain would evict 4 pods");
    const [record] = setup.kubernetesRecords();
    expect(setup.kubernetesRecords()).toHaveLength(1);
    expect(record).toMatchObject({ Outcome: "Cordoned" });
    expect(JSON.parse(record!.Detail)).toMatchObject({
      dryRun: true,
      policy: "drain-then-approve",
      podsToEvict: ["apps/db-0", "apps/web-3", "apps/web-4", "apps/web-5"],
    });
    // Only reads and the Event: no PATCH, eviction or DELETE; the node as it was.
    const writes = peer.state.requests().filter((r) => r.method !== "GET");
    expect(writes.map((r) => `${r.method} ${r.resource}`)).toEqual(["POST events"]);
    expect(peer.state.evictions()).toEqual([]);
    expect(nodeSpec(peer.state.node(nodeName)).unschedulable).not.toBe(true);
    expect(sim.status().approvals).toEqual([]);
  }, 150_000);
});
