// The Node is the truth for what sef left on it, with the built agent against the IMDS simulator and the Kubernetes API
// peer: after a Redeploy that reimaged the data directory the marks are taken off within a poll or two of the
// restart; kill -9 right after the mark patch (before the ledger recorded it) leaves the cordon claim on the Node, in
// the cordon's own patch; a node marked by the previous release is reconciled after the upgrade; an operator's cordon,
// another handler's taint and AKS node auto-drain's taint and cordon are never touched through a whole event.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import type { KubernetesRecord } from "../../src/contract/record.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { logLines, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { actionsSettled } from "../helpers/ledger-probe.js";
import {
  eventReasons,
  kubeAgent,
  nodeName,
  nodePods,
  nodeSpec,
  sefMarkOf,
  sefMarksOn,
  startNodePeer,
  tearDown,
  waitForKubernetesReady,
} from "../helpers/kubernetes-node.js";

const event = (id: string, over: Record<string, unknown> = {}) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  notBeforeInSeconds: 180,
  autoStart: false,
  startedForSeconds: 600,
  ...over,
});
const clean = { cordoned: false, taints: [], sefAnnotations: [] };
const operatorTaint = { key: "example.com/maintenance", value: "disk", effect: "NoSchedule" };
const aksTaint = { key: "remediator.kubernetes.azure.com/unschedulable", effect: "NoSchedule" };
const steps = (records: KubernetesRecord[]): string[] =>
  records.map((r) => `${r.EventType}:${r.EventStatus}:${r.Outcome}`);

/** Kubernetes records the agent's store holds (read-only, beside a dead agent's files). */
function storedKubernetesRecords(dataDir: string): number {
  const db = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM outbox WHERE record_type = 'Kubernetes'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** When the agent logged that its Kubernetes client is ready (its pino `time`). */
const readyAtMs = (agent: RunningProcess): number =>
  logLines(agent.stderr()).find((l) => l.msg === "Kubernetes client loaded; the kubernetes action is ready")!
    .time as number;

describe("kubernetes action: the Node holds sef's marks", () => {
  it("a Redeploy approved, the agent killed, its data directory gone (a reimage), the event over: the restarted agent takes the marks off", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(6));
    const setup = kubeAgent(sim, peer, {}, { pollIntervalMs: 1_000 });
    const first = setup.start();
    let second: RunningProcess | undefined;
    const id = "E0A1B2C3-0000-4000-8000-000000000011";
    try {
      await waitForKubernetesReady(first);
      sim.setEvents([event(id, { EventType: "Redeploy" })]);
      await waitUntil(() => sim.status().approvals.length > 0, 90_000, "the approval after the drain");
      expect(sefMarksOn(peer.state.node(nodeName))).toMatchObject({
        cordoned: true,
        taints: [expect.objectContaining({ value: id })],
      });
      expect(await first.stop("SIGKILL")).toBe("SIGKILL");
      rmSync(setup.dataDir, { recursive: true, force: true });
      sim.setEvents([]);
      second = setup.start();
      await waitForKubernetesReady(second);
      await waitUntil(
        () => setup.kubernetesRecords().some((r) => r.Outcome === "Uncordoned"),
        30_000,
        "the reconciled undo",
      );
      expect(await second.stop("SIGTERM")).toBe(0);
    } finally {
      await tearDown([first, second], peer, sim);
    }
    expect(sefMarksOn(peer.state.node(nodeName))).toEqual(clean);
    // Within a poll or two of the restarted agent's client being ready (the document was read before it).
    const uncordonedAtMs = peer.state.nodeWrites().find((w) => w.cordoned === false)!.atMs;
    const polls = sim
      .requestLog("/metadata/scheduledevents")
      .filter((r) => r.atMs >= readyAtMs(second!) && r.atMs <= uncordonedAtMs);
    expect(polls.length).toBeLessThanOrEqual(2);
    expect(steps(setup.kubernetesRecords())).toEqual([
      "Redeploy:Scheduled:Cordoned",
      "Redeploy:Scheduled:Draining",
      "Redeploy:Scheduled:Drained",
      "Redeploy:Completed:Uncordoned",
    ]);
    expect(JSON.parse(setup.kubernetesRecords()[3]!.Detail)).toMatchObject({
      policy: "drain-then-approve",
      reason: expect.stringContaining("no longer in the IMDS document"),
    });
    expect(eventReasons(peer).at(-1)).toBe("ScheduledEventUncordoned");
    expect(sim.status().approvals.map((a) => a.count)).toEqual([1]);
  }, 300_000);

  it("kill -9 right after the mark patch, before the ledger recorded it: the cordon claim came in the cordon's patch, and the restart carries on from it", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(4));
    const setup = kubeAgent(sim, peer, { drainLeadMs: 60_000 });
    const first = setup.start();
    let second: RunningProcess | undefined;
    const id = "E0A1B2C3-0000-4000-8000-000000000012";
    try {
      await waitForKubernetesReady(first);
      // Killed when the peer has applied the mark patch and before it answers it: the agent never hears the answer.
      const killed = new Promise<void>((resolve) => {
        const stop = peer.state.onNodeWrite(() => {
          first.child.kill("SIGKILL");
          stop();
          resolve();
        });
      });
      sim.setEvents([event(id)]);
      await killed;
      expect(await first.exited).toBe("SIGKILL");
      expect(storedKubernetesRecords(setup.dataDir)).toBe(0); // the step's record never committed
      second = setup.start();
      await waitForKubernetesReady(second);
      await waitUntil(
        () => setup.kubernetesRecords().some((r) => r.Outcome === "Cordoned"),
        30_000,
        "the resumed step",
      );
      sim.setEvents([]);
      await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Uncordoned"), 30_000, "the undo");
      expect(await second.stop("SIGTERM")).toBe(0);
    } finally {
      await tearDown([first, second], peer, sim);
    }
    const writes = peer.state.nodeWrites();
    // One patch: the taint, the cordon and the mark saying sef cordoned; the resumed step claims the cordon again
    // from the mark (the node was cordoned by then) and changes nothing; the undo lifts it.
    expect(writes[0]).toMatchObject({
      cordoned: true,
      taintsAdded: [`sef.azure.com/scheduled-event-reboot=${id}:NoSchedule`],
      annotationsSet: [`event.sef.azure.com/${id}`],
    });
    expect(writes.slice(1, -1).every((w) => w.cordoned === undefined && w.taintsAdded.length === 0)).toBe(true);
    expect(writes.at(-1)).toMatchObject({ cordoned: false, annotationsRemoved: [`event.sef.azure.com/${id}`] });
    expect(steps(setup.kubernetesRecords())).toEqual(["Reboot:Scheduled:Cordoned", "Reboot:Canceled:Uncordoned"]);
    expect(sefMarksOn(peer.state.node(nodeName))).toEqual(clean);
  }, 300_000);

  it("a node marked by the previous release (single-event annotations) is reconciled after the upgrade", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startNodePeer(sim, nodePods(4));
    const id = "E0A1B2C3-0000-4000-8000-000000000013";
    peer.state.updateNode(nodeName, (node) => {
      Object.assign(node.spec as object, {
        unschedulable: true,
        taints: [operatorTaint, { key: "sef.azure.com/scheduled-event-terminate", value: id, effect: "NoSchedule" }],
      });
      node.metadata.annotations = {
        ...node.metadata.annotations,
        "sef.azure.com/event-id": id,
        "sef.azure.com/event-type": "Terminate",
        "sef.azure.com/not-before": "",
        "sef.azure.com/cordoned": "true",
      };
    });
    const setup = kubeAgent(sim, peer);
    const agent = setup.start();
    try {
      await waitForKubernetesReady(agent);
      await waitUntil(() => setup.kubernetesRecords().length > 0, 30_000, "the reconciled undo");
      await waitUntil(() => actionsSettled(setup.dataDir), 30_000, "the ledger to settle");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await tearDown([agent], peer, sim);
    }
    expect(sefMarksOn(peer.state.node(nodeName))).toEqual({
      cordoned: false,
      taints: [operatorTaint],
      sefAnnotations: [],
    });
    expect(steps(setup.kubernetesRecords())).toEqual(["Terminate:Completed:Uncordoned"]);
  }, 300_000);

  it("an operator's cordon and another handler's taint, then AKS node auto-drain's taint and cordon: untouched through a whole event", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const operators = await startNodePeer(sim, nodePods(6), { unschedulable: true });
    operators.state.updateNode(nodeName, (node) => Object.assign(node.spec as object, { taints: [operatorTaint] }));
    const aks = await startNodePeer(sim, nodePods(6));
    const results: Array<{
      marks: ReturnType<typeof sefMarksOn>;
      records: KubernetesRecord[];
      uncordons: number;
      mark: Record<string, unknown> | undefined;
    }> = [];
    for (const [i, peer] of [operators, aks].entries()) {
      const setup = kubeAgent(sim, peer);
      const agent = setup.start();
      const id = `E0A1B2C3-0000-4000-8000-00000000002${i}`;
      let mark: Record<string, unknown> | undefined;
      try {
        await waitForKubernetesReady(agent);
        sim.setEvents([event(id)]);
        await waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === "Draining"), 60_000, "the drain");
        mark = sefMarkOf(peer.state.node(nodeName), id);
        // AKS node auto-drain acts on the same event: its taint beside sef's cordon.
        if (peer === aks)
          peer.state.updateNode(nodeName, (node) =>
            Object.assign(node.spec as object, { taints: [...(nodeSpec(node).taints ?? []), aksTaint] }),
          );
        await waitUntil(() => sim.status().approvals.some((a) => a.EventId === id), 90_000, "the approval");
        await waitUntil(
          () =>
            setup
              .records()
              .some((r) => r.RecordType === "Transition" && r.EventId === id && r.EventStatus === "Started"),
          30_000,
          "the event to start",
        );
        sim.setEvents([]);
        await waitUntil(
          () => actionsSettled(setup.dataDir) && setup.kubernetesRecords().some((r) => r.EventStatus === "Completed"),
          60_000,
          "the end of the event",
        );
        expect(await agent.stop("SIGTERM")).toBe(0);
      } finally {
        await agent.stop("SIGKILL");
        await peer.close();
      }
      results.push({
        marks: sefMarksOn(peer.state.node(nodeName)),
        records: setup.kubernetesRecords(),
        uncordons: peer.state.nodeWrites().filter((w) => w.cordoned === false).length,
        mark,
      });
    }
    await sim.close();
    const [byOperator, byAks] = results;
    expect(byOperator!.mark).toMatchObject({ cordoned: false }); // the operator's cordon was never claimed
    expect(byOperator!.marks).toEqual({ cordoned: true, taints: [operatorTaint], sefAnnotations: [] });
    expect(byOperator!.uncordons).toBe(0);
    expect(steps(byOperator!.records).at(-1)).toBe("Reboot:Completed:Released");
    expect(JSON.parse(byOperator!.records.at(-1)!.Detail)).toMatchObject({
      keptCordoned: expect.stringContaining("operator"),
    });
    expect(byAks!.mark).toMatchObject({ cordoned: true }); // sef cordoned it first...
    expect(byAks!.marks).toEqual({ cordoned: true, taints: [aksTaint], sefAnnotations: [] }); // ...and left the cordon to AKS
    expect(byAks!.uncordons).toBe(0);
    expect(JSON.parse(byAks!.records.at(-1)!.Detail)).toMatchObject({
      keptCordoned: expect.stringContaining("remediator.kubernetes.azure.com/unschedulable"),
    });
    for (const r of results)
      expect(steps(r.records).slice(0, 3)).toEqual([
        "Reboot:Scheduled:Cordoned",
        "Reboot:Scheduled:Draining",
        "Reboot:Scheduled:Drained",
      ]);
  }, 400_000);
});
