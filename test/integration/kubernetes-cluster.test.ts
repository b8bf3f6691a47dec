// Events naming several nodes of one cluster, with the built agents (one per node, each its own VM to the IMDS
// simulator) against the Kubernetes API peer: a Reboot naming three nodes whose drains take different times (one held
// ~10 s by a PodDisruptionBudget) is approved once, by the first node, after the last node drained — approval rules
// on for every VM, so that any other node would approve by them; a VM of the event outside the cluster holds nothing;
// with `maxConcurrentDrains` 1, the second node drains only after the first freed its Lease (the peer's own logs), and
// an unmodified kubectl reads sef's Lease and its holder from the peer.
import { afterAll, describe, expect, it } from "vitest";
import type { ApprovalRecord, KubernetesRecord } from "../../src/contract/record.js";
import { startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { actionsSettled } from "../helpers/ledger-probe.js";
import { kubectl, removeKubectlHome } from "../testbed/kubectl.js";
import { nodeAgent, podsOn, scaleSetNodes, startScaleSetSimulator, vmNames } from "../helpers/kubernetes-cluster.js";
import {
  eventReasons,
  sefMarksOn,
  tearDown,
  waitForKubernetesReady,
  type KubeAgent,
} from "../helpers/kubernetes-node.js";

const reboot = (id: string, resources: string[]) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: resources,
  notBeforeInSeconds: 240,
  autoStart: false,
  startedForSeconds: 600,
});
/** Approval rules that approve every Reboot from every VM it names (without the multi-node gate, each node would). */
const rulesForEveryVm = { approval: { mode: "on", approver: "this-vm", rules: [{ eventType: ["Reboot"] }] } };
const markKey = (id: string): string => `event.sef.azure.com/${id}`;

/** When each node's mark first said it drained (the write that set the mark without cordoning). */
function drainedWriteMs(peer: KubernetesPeer, node: string, id: string): number | undefined {
  return peer.state
    .nodeWrites()
    .find((w) => w.node === node && w.cordoned === undefined && w.annotationsSet.includes(markKey(id)))?.atMs;
}

/** Ends the event (gone from the document), waits for every node's undo and every ledger to settle, stops the agents. */
async function endAndSettle(
  sim: { setEvents(e: never[]): unknown },
  setups: KubeAgent[],
  agents: RunningProcess[],
  peer: KubernetesPeer,
  nodes: string[],
): Promise<void> {
  sim.setEvents([]);
  await waitUntil(
    () =>
      nodes.every(
        (n) => sefMarksOn(peer.state.node(n)).taints.length === 0 && !sefMarksOn(peer.state.node(n)).cordoned,
      ),
    60_000,
    "every node's undo",
  );
  await waitUntil(() => setups.every((s) => actionsSettled(s.dataDir)), 60_000, "every agent's actions to settle");
  for (const agent of agents) expect(await agent.stop("SIGTERM")).toBe(0);
}

afterAll(removeKubectlHome);

describe("kubernetes action: events naming several nodes", () => {
  it("three nodes, one drain held ~10 s by a PDB: one approval POST in all, by the first node, after the last node drained", async () => {
    const sim = await startScaleSetSimulator();
    const members = scaleSetNodes(sim, 3);
    const nodes = members.map((m) => m.node.name);
    const budget = `db-${nodes[2]!.slice(-6)}`;
    const peer = await startKubernetesPeer({
      seed: {
        nodes: members.map((m) => m.node),
        pods: [...podsOn(nodes[0]!, 4), ...podsOn(nodes[1]!, 14), ...podsOn(nodes[2]!, 8, { budgeted: true })],
        podDisruptionBudgets: [
          {
            namespace: "apps",
            name: budget,
            matchLabels: { app: budget },
            maxUnavailable: 1,
            blockForMs: Number.POSITIVE_INFINITY,
          },
        ],
      },
    });
    const setups = members.map((m) => nodeAgent(sim, peer, m, {}, rulesForEveryVm));
    const agents: RunningProcess[] = [];
    const id = "C1A55E00-0000-4000-8000-000000000003";
    try {
      for (const setup of setups) agents.push(setup.start());
      for (const agent of agents) await waitForKubernetesReady(agent);
      sim.setEvents([reboot(id, vmNames(3))]);
      await waitUntil(
        () => peer.state.evictions().some((e) => e.pod === `${nodes[2]!.slice(-6)}-db-0` && e.outcome === "blocked"),
        90_000,
        "the PDB to hold the third node's drain",
      );
      peer.state.blockDisruptions("apps", budget, 10_000);
      await waitUntil(() => sim.status().approvals.length > 0, 120_000, "the approval");
      await endAndSettle(sim, setups, agents, peer, nodes);
    } finally {
      await tearDown(agents, peer, sim);
    }
    expect(sim.status().approvals.map((a) => [a.EventId, a.count])).toEqual([[id, 1]]);
    const approvedAtMs = sim.status().approvals[0]!.atMs;
    const drained = nodes.map((n) => drainedWriteMs(peer, n, id));
    for (const [i, atMs] of drained.entries()) expect(atMs, `${nodes[i]} drained`).toBeDefined();
    // The PDB held the last node's drain: from the peer's first refusal (the 10 s block was set after it).
    const firstRefusal = peer.state
      .evictions()
      .find((e) => e.pod === `${nodes[2]!.slice(-6)}-db-0` && e.outcome === "blocked")!;
    expect(drained[2]! - firstRefusal.atMs).toBeGreaterThanOrEqual(10_000);
    expect(Math.max(...(drained as number[]))).toBeLessThan(approvedAtMs);
    expect(
      Math.max(
        ...peer.state
          .evictions()
          .filter((e) => e.outcome === "evicted")
          .map((e) => e.atMs),
      ),
    ).toBeLessThan(approvedAtMs);
    // The first node approved, saying why; the others approved nothing (their approval was declined, not sent).
    const approvals = setups.map((s) => s.records().filter((r): r is ApprovalRecord => r.RecordType === "Approval"));
    expect(approvals[0]!.map((r) => r.Outcome)).toEqual(["Approved"]);
    expect(approvals[0]![0]!.Detail).toContain(`every node the event names has drained (3 of 3: ${nodes.join(", ")})`);
    expect(approvals[1]).toEqual([]);
    expect(approvals[2]).toEqual([]);
    // What each node said it waited for.
    const waiting = setups.map((s) =>
      s
        .kubernetesRecords()
        .filter((r: KubernetesRecord) => r.Outcome === "Waiting")
        .map((r) => JSON.parse(r.Detail) as Record<string, unknown>),
    );
    expect(waiting[0]).toEqual([
      expect.objectContaining({
        approver: nodes[0],
        nodesNamed: nodes,
        waitingFor: expect.arrayContaining([nodes[2]]),
      }),
    ]);
    for (const i of [1, 2])
      expect(waiting[i]).toEqual([expect.objectContaining({ approver: nodes[0], nodesNamed: nodes })]);
    const firstNodeEvents = peer.state
      .events()
      .filter((e) => (e as unknown as { involvedObject: { name: string } }).involvedObject.name === nodes[0]);
    const messages = firstNodeEvents.map(
      (e) => `${(e as unknown as { reason: string }).reason}: ${(e as unknown as { message: string }).message}`,
    );
    expect(messages).toContainEqual(
      expect.stringMatching(
        new RegExp(`^ScheduledEventWaiting: Reboot ${id}: waiting for [12] of 3 nodes: .*${nodes[2]}`),
      ),
    );
    expect(messages).toContainEqual(expect.stringMatching(/^ScheduledEventNodesDrained: /));
  }, 400_000);

  it("a VM of the event outside the cluster (first in Resources, no node) does not hold the approval: the node approves after its drain", async () => {
    const sim = await startScaleSetSimulator();
    const [member] = scaleSetNodes(sim, 1);
    const node = member!.node.name;
    const peer = await startKubernetesPeer({ seed: { nodes: [member!.node], pods: podsOn(node, 8) } });
    const setup = nodeAgent(sim, peer, member!);
    const agent = setup.start();
    const id = "C1A55E00-0000-4000-8000-000000000004";
    try {
      await waitForKubernetesReady(agent);
      sim.setEvents([reboot(id, ["other-vmss_4", member!.vmName])]);
      await waitUntil(() => sim.status().approvals.length > 0, 90_000, "the approval");
      await endAndSettle(sim, [setup], [agent], peer, [node]);
    } finally {
      await tearDown([agent], peer, sim);
    }
    expect(sim.status().approvals.map((a) => [a.EventId, a.count])).toEqual([[id, 1]]);
    expect(drainedWriteMs(peer, node, id)).toBeLessThan(sim.status().approvals[0]!.atMs);
    const approval = setup.records().find((r): r is ApprovalRecord => r.RecordType === "Approval")!;
    expect(approval).toMatchObject({
      Outcome: "Approved",
      Detail: expect.stringContaining("outside this cluster, not waited for: other-vmss_4"),
    });
    expect(setup.kubernetesRecords().map((r) => r.Outcome)).toEqual(["Cordoned", "Draining", "Drained", "Uncordoned"]);
    expect(eventReasons(peer)).not.toContain("ScheduledEventWaiting");
  }, 300_000);
});

describe("kubernetes action: maxConcurrentDrains", () => {
  it("limit 1, an event naming two nodes: the second node's evictions start only after the first freed the Lease (the peer's log), and kubectl reads the Lease", async () => {
    const sim = await startScaleSetSimulator();
    const members = scaleSetNodes(sim, 2);
    const nodes = members.map((m) => m.node.name);
    const budgets = nodes.map((n) => `db-${n.slice(-6)}`);
    const peer = await startKubernetesPeer({
      seed: {
        nodes: members.map((m) => m.node),
        pods: nodes.flatMap((n) => podsOn(n, 4, { budgeted: true })),
        // Both budgets hold their pod until the test lifts them: the first drain holds its slot meanwhile.
        podDisruptionBudgets: budgets.map((name) => ({
          namespace: "apps",
          name,
          matchLabels: { app: name },
          maxUnavailable: 1,
          blockForMs: Number.POSITIVE_INFINITY,
        })),
      },
    });
    const cap = { maxConcurrentDrains: { limit: 1, leaseDurationSeconds: 30 } };
    const setups = members.map((m) => nodeAgent(sim, peer, m, cap));
    const agents: RunningProcess[] = [];
    const id = "C1A55E00-0000-4000-8000-000000000005";
    const namespace = "sef-system"; // sef's own (POD_NAMESPACE): the cap's default
    let table = "";
    try {
      for (const setup of setups) agents.push(setup.start());
      for (const agent of agents) await waitForKubernetesReady(agent);
      sim.setEvents([reboot(id, vmNames(2))]);
      await waitUntil(
        () => peer.state.evictions().some((e) => e.outcome === "blocked"),
        90_000,
        "a budget to hold the first drain",
      );
      table = (await kubectl(peer.kubeconfigPath, ["get", "lease", "-n", namespace])).stdout;
      for (const name of budgets) peer.state.allowDisruptions("apps", name);
      await waitUntil(() => sim.status().approvals.length > 0, 120_000, "the approval");
      await endAndSettle(sim, setups, agents, peer, nodes);
    } finally {
      await tearDown(agents, peer, sim);
    }
    const writes = peer.state.leaseWrites().filter((w) => w.namespace === namespace);
    expect(new Set(writes.map((w) => w.name))).toEqual(new Set(["sef-drain-0"]));
    // The holder only ever changes through a release: no write hands the slot from one node to the other.
    const holders = writes.map((w) => w.holderIdentity).filter((h, i, all) => i === 0 || h !== all[i - 1]);
    const first = holders.find((h) => h !== "")!;
    const second = nodes.find((n) => n !== first)!;
    expect(holders).toEqual([first, "", second, ""]);
    const released = writes.find((w, i) => w.holderIdentity === "" && writes[i - 1]?.holderIdentity === first)!;
    const taken = writes.find((w) => w.holderIdentity === second)!;
    const evictionsOf = (node: string) => peer.state.evictions().filter((e) => e.nodeName === node);
    expect(evictionsOf(first).filter((e) => e.outcome === "evicted")).toHaveLength(2);
    expect(evictionsOf(second).filter((e) => e.outcome === "evicted")).toHaveLength(2);
    // Ordered by the peer's own monotonic stamps: every eviction of the first node's pods before it freed the slot,
    // every eviction of the second node's after it took it (which was after the release).
    expect(Math.max(...evictionsOf(first).map((e) => e.monotonicMs))).toBeLessThan(released.monotonicMs);
    expect(taken.monotonicMs).toBeGreaterThan(released.monotonicMs);
    expect(Math.min(...evictionsOf(second).map((e) => e.monotonicMs))).toBeGreaterThan(taken.monotonicMs);
    // The second node said it waited for a slot; the first did not.
    const slotWaits = (node: string) =>
      setups[nodes.indexOf(node)]!.kubernetesRecords().filter(
        (r) => r.Outcome === "Waiting" && r.Detail.includes("maxConcurrentDrains"),
      );
    expect(slotWaits(second)).toHaveLength(1);
    expect(slotWaits(first)).toEqual([]);
    expect(sim.status().approvals.map((a) => [a.EventId, a.count])).toEqual([[id, 1]]);
    // kubectl, while the first drain was held, read the Lease and its holder.
    expect(table).toMatch(new RegExp(`^NAME\\s+HOLDER\\s+AGE\\nsef-drain-0\\s+${first}\\s+\\S+\\n$`));
  }, 300_000);
});
