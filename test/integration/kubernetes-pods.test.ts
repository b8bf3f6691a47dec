// Pods as `kubectl drain` treats them, end to end: the built agent against the IMDS simulator and the testbed's
// Kubernetes API peer. A bare pod is left (DrainIncomplete names it, no approval) unless `force`; an opted-out pod is
// left and named; a 500 on an eviction is retried and named; pods that come back are evicted once (left when they
// tolerate sef's taint); a pod stuck terminating does not hold the drain; 429 throttling is waited out, not counted as
// a PodDisruptionBudget refusal; a 403 is retried and named. The rules themselves: test/actions/kubernetes-plan.test.ts.
import { describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import type { KubernetesPeer, PodSeed } from "../../src/testbed/peers/kubernetes/index.js";
import type { KubernetesRecord } from "../../src/contract/record.js";
import { waitForMetricsUrl, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import {
  kubeAgent,
  nodeName,
  nodePods,
  peerControl,
  startNodePeer,
  waitForKubernetesReady,
  type KubeAgent,
} from "../helpers/kubernetes-node.js";

const optOut = { "sef.azure.com/drain": "skip" };
/** sef's DaemonSet pod, kube-proxy, db-0 (StatefulSet), web-3, web-4, web-5 (ReplicaSet; web-5 with an emptyDir). */
const basePods = (): PodSeed[] => nodePods(6);
const bare: PodSeed = { namespace: "apps", name: "debug-shell", nodeName, stopsAfterSeconds: 0.5 };
const optedOut: PodSeed = {
  namespace: "apps",
  name: "batch-7",
  nodeName,
  labels: optOut,
  ownerReferences: [{ kind: "Job", name: "batch" }],
};

interface Node {
  sim: Simulator;
  peer: KubernetesPeer;
  setup: KubeAgent;
  agent: RunningProcess;
  metricsUrl: string;
}

interface Ran {
  node: Node;
  metrics: string;
  steps: KubernetesRecord[];
  detail: (outcome: string) => Record<string, unknown>;
}

/**
 * A node with `pods`, an agent with `kubernetes` settings, a Scheduled Reboot of this VM (`notBeforeInSeconds`), then
 * `body` (seeding more and waiting for what the test is about); the metrics are read before the agent stops.
 */
async function drainScenario(
  pods: PodSeed[],
  kubernetes: Record<string, unknown>,
  notBeforeInSeconds: number,
  body: (node: Node, eventId: string) => Promise<void>,
  prepare: (node: Omit<Node, "agent" | "metricsUrl" | "setup">) => Promise<void> = async () => undefined,
): Promise<Ran> {
  const sim = await startSimulator({ scenario: "idle" });
  const peer = await startNodePeer(sim, pods);
  const setup = kubeAgent(sim, peer, kubernetes);
  const agent = setup.start();
  let metrics = "";
  try {
    const metricsUrl = await waitForMetricsUrl(agent);
    await waitForKubernetesReady(agent);
    await prepare({ sim, peer });
    const eventId = "C0DE0035-0000-4000-8000-000000000003";
    sim.setEvents([
      {
        EventId: eventId,
        EventType: "Reboot",
        EventSource: "Platform",
        Resources: ["WestNO_0"],
        notBeforeInSeconds,
        autoStart: false,
      },
    ]);
    const node = { sim, peer, setup, agent, metricsUrl };
    await body(node, eventId);
    metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
    expect(await agent.stop("SIGTERM")).toBe(0);
    const steps = setup.kubernetesRecords();
    const detail = (outcome: string) =>
      JSON.parse(steps.find((r) => r.Outcome === outcome)?.Detail ?? "null") as Record<string, unknown>;
    return { node, metrics, steps, detail };
  } finally {
    await agent.stop("SIGKILL");
    await peer.close();
    await sim.close();
  }
}

const evictionsOf = (peer: KubernetesPeer, pod: string) => peer.state.evictions().filter((e) => e.pod === pod);
const remaining = (peer: KubernetesPeer) =>
  peer.state
    .pods({ nodeName })
    .map((p) => p.metadata.name)
    .sort();
const counter = (metrics: string, outcome: string): number =>
  Number(
    new RegExp(`^sef_kubernetes_evictions_total\\{outcome="${outcome}"\\} (\\d+)$`, "m").exec(metrics)?.[1] ?? NaN,
  );
const untilApproved = ({ sim }: Node) =>
  waitUntil(() => sim.status().approvals.length > 0, 90_000, "the approval after the drain");
const waitForStep = (setup: KubeAgent, outcome: string, timeoutMs = 90_000) =>
  waitUntil(() => setup.kubernetesRecords().some((r) => r.Outcome === outcome), timeoutMs, `the ${outcome} step`);

describe("kubernetes action: pods as kubectl drain treats them", () => {
  it("a bare pod is left: DrainIncomplete names it as soon as the rest is gone (not at the deadline), a Warning Event, no approval; an opted-out pod is left and named", async () => {
    const { node, steps, detail, metrics } = await drainScenario(
      [...basePods(), bare, optedOut],
      {},
      150,
      async ({ setup, agent }) => {
        await waitForStep(setup, "DrainIncomplete");
        // The drain's end leads to the approval rules (off here) in the same step, before this line is logged.
        await waitUntil(
          () => agent.stderr().includes("not approving after the drain"),
          15_000,
          "the approval decision",
        );
      },
    );
    const { peer, sim } = node;
    expect(steps.map((r) => r.Outcome)).toEqual(["Cordoned", "Draining", "DrainIncomplete"]);
    expect(detail("DrainIncomplete")).toMatchObject({
      podsEvicted: 4,
      podsLeft: ["apps/debug-shell"],
      podsWithoutController: ["apps/debug-shell"],
      podsOptedOut: ["apps/batch-7"],
      incompleteBecause: expect.stringMatching(/without a controller.*force/),
    });
    // Ended as soon as only the bare pod was left: long before the deadline (NotBefore − 2 s).
    const transition = node.setup.records().find((r) => r.RecordType === "Transition") as unknown as {
      NotBefore: string;
    };
    const incomplete = steps.find((r) => r.Outcome === "DrainIncomplete")!;
    expect(Date.parse(transition.NotBefore) - Date.parse(incomplete.TimeGenerated)).toBeGreaterThan(60_000);
    expect(evictionsOf(peer, "debug-shell")).toEqual([]);
    expect(evictionsOf(peer, "batch-7")).toEqual([]);
    expect(remaining(peer)).toEqual(["batch-7", "debug-shell", "kube-proxy-x1", "sef-abcde"]);
    const warning = peer.state
      .events()
      .find((e) => (e as unknown as { reason: string }).reason === "ScheduledEventDrainIncomplete") as unknown as {
      type: string;
      message: string;
    };
    expect(warning).toMatchObject({ type: "Warning", message: expect.stringContaining("apps/debug-shell") });
    expect(warning.message).toMatch(/without a controller/);
    expect(sim.status().approvals).toEqual([]);
    expect(metrics).toMatch(/^sef_kubernetes_drain_duration_seconds_count\{outcome="incomplete"\} 1$/m);
  }, 200_000);

  it("force: the bare pod is evicted too, the drain completes and is approved; the opted-out pod stays, named", async () => {
    const { node, steps, detail } = await drainScenario(
      [...basePods(), bare, optedOut],
      { force: true },
      150,
      untilApproved,
    );
    expect(steps.map((r) => r.Outcome)).toEqual(["Cordoned", "Draining", "Drained"]);
    expect(detail("Drained")).toMatchObject({ podsEvicted: 5, podsOptedOut: ["apps/batch-7"] });
    expect(detail("Drained")).not.toHaveProperty("podsWithoutController");
    expect(evictionsOf(node.peer, "debug-shell").map((e) => e.outcome)).toEqual(["evicted"]);
    expect(evictionsOf(node.peer, "batch-7")).toEqual([]);
    expect(remaining(node.peer)).toEqual(["batch-7", "kube-proxy-x1", "sef-abcde"]);
    expect(node.sim.status().approvals).toHaveLength(1);
  }, 200_000);

  it("a 500 on an eviction (two budgets cover the pod) is retried with backoff until the deadline, counted as an error, and named", async () => {
    const pods = basePods();
    const { node, detail, metrics } = await drainScenario(
      pods,
      { pdbRetryInitialMs: 500, pdbRetryMaxMs: 4_000 },
      25,
      async ({ setup }) => {
        await waitForStep(setup, "DrainIncomplete");
      },
      async ({ peer }) => {
        peer.state.addPodDisruptionBudget({
          namespace: "apps",
          name: "db",
          matchLabels: { app: "db" },
          maxUnavailable: 1,
        });
        peer.state.addPodDisruptionBudget({
          namespace: "apps",
          name: "db-too",
          matchLabels: { app: "db" },
          maxUnavailable: 1,
        });
      },
    );
    const refused = evictionsOf(node.peer, "db-0");
    expect(refused.map((e) => e.code)).toEqual(Array(refused.length).fill(500));
    // Backoff from 0.5 s doubling to 4 s over ~23 s: a handful of requests, not one per 200 ms poll.
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(refused.length).toBeLessThanOrEqual(12);
    expect(detail("DrainIncomplete")).toMatchObject({
      podsLeft: ["apps/db-0"],
      incompleteBecause: "at its deadline",
      podsBlockedByPdb: [],
      evictionErrors: [
        { pod: "apps/db-0", status: 500, message: expect.stringContaining("more than one PodDisruptionBudget") },
      ],
    });
    expect(counter(metrics, "error")).toBe(refused.length);
    expect(counter(metrics, "pdb_refused")).toBe(0);
  }, 200_000);

  // Needs the peer's returning-pod rules (k8s-peer: /__peer/seed `returningPods`).
  it("pods that come back are evicted once each: those tolerating sef's taint are left (named), those that do not are evicted once", async () => {
    const pods: PodSeed[] = [
      ...basePods().map((p) => (p.name.startsWith("web-") ? { ...p, labels: { app: "web" } } : p)),
      {
        namespace: "apps",
        name: "api-0",
        nodeName,
        labels: { app: "api" },
        ownerReferences: [{ kind: "ReplicaSet", name: "api-5c" }],
        stopsAfterSeconds: 0.5,
      },
    ];
    let returned: Array<{ replaced: string; pod: string }> = [];
    const { node, detail } = await drainScenario(
      pods,
      {},
      150,
      async ({ sim, peer }) => {
        await waitUntil(() => sim.status().approvals.length > 0, 90_000, "the approval after the drain");
        returned = (await peerControl(peer, "GET", "returned-pods")) as typeof returned;
      },
      async ({ peer }) => {
        await peerControl(peer, "POST", "seed", {
          returningPods: [
            // web pods come back tolerating everything (operator Exists), as often as they go.
            { namespace: "apps", matchLabels: { app: "web" }, delayMs: 200 },
            // api pods come back twice without tolerating the taint (bound to the node by name).
            {
              namespace: "apps",
              matchLabels: { app: "api" },
              delayMs: 200,
              maxReturns: 2,
              tolerations: [],
              stopsAfterSeconds: 0.5,
            },
          ],
        });
      },
    );
    const evictions = node.peer.state.evictions();
    const perPod = new Map<string, number>();
    for (const e of evictions) perPod.set(e.pod, (perPod.get(e.pod) ?? 0) + 1);
    expect([...perPod.values()].every((n) => n === 1)).toBe(true);
    // Three web pods, db-0, api-0 and its two comebacks; never a tolerating comeback.
    const webComebacks = remaining(node.peer).filter((name) => name.startsWith("web-7d9f-"));
    expect(webComebacks).toHaveLength(3);
    expect(
      returned
        .filter((r) => r.pod.startsWith("apps/web-7d9f-"))
        .map((r) => r.pod.slice("apps/".length))
        .sort(),
    ).toEqual(webComebacks);
    expect(evictions.filter((e) => e.pod.startsWith("web-7d9f-"))).toEqual([]);
    expect(evictions.filter((e) => e.pod.startsWith("api-5c-")).map((e) => e.outcome)).toEqual(["evicted", "evicted"]);
    expect(detail("Drained")).toMatchObject({
      podsEvicted: 7,
      podsArrivedTolerating: webComebacks.map((n) => `apps/${n}`),
    });
  }, 200_000);

  // Needs the peer's pods seeded terminating (k8s-peer: PodSeed `terminatingForSeconds`, a kubelet that never confirms).
  it("a pod stuck terminating past its grace is not waited for but leaves the drain incomplete (named, no approval); one within its grace is waited for until it is past", async () => {
    let seededAtMs = 0;
    const untilDeclined = async ({ setup, agent }: Node) => {
      await waitForStep(setup, "DrainIncomplete");
      await waitUntil(() => agent.stderr().includes("not approving after the drain"), 15_000, "the approval decision");
    };
    const { node, detail, steps } = await drainScenario(basePods(), {}, 150, untilDeclined, async ({ peer }) => {
      seededAtMs = Date.now();
      await peerControl(peer, "POST", "seed", {
        pods: [
          // Deletion began a minute ago with a 5 s grace: long past it (a finalizer or a kubelet that is gone).
          {
            namespace: "apps",
            name: "stuck-0",
            nodeName,
            ownerReferences: [{ kind: "ReplicaSet", name: "stuck-6b" }],
            terminationGracePeriodSeconds: 5,
            terminatingForSeconds: 60,
          },
          // Deletion begins now with an 8 s grace: waited for until 8 s plus the 10 s allowance have passed.
          {
            namespace: "apps",
            name: "hangs-0",
            nodeName,
            ownerReferences: [{ kind: "ReplicaSet", name: "hangs-6b" }],
            terminationGracePeriodSeconds: 8,
            terminatingForSeconds: 0,
          },
        ],
      });
    });
    const incomplete = steps.find((r) => r.Outcome === "DrainIncomplete")!;
    // 8 s of grace plus the 10 s allowance, less up to 1 s: deletionTimestamp is written in whole seconds.
    expect(Date.parse(incomplete.TimeGenerated) - seededAtMs).toBeGreaterThanOrEqual(17_000);
    expect(detail("DrainIncomplete")).toMatchObject({
      podsEvicted: 4,
      podsStuckTerminating: ["apps/hangs-0", "apps/stuck-0"],
      podsLeft: ["apps/hangs-0", "apps/stuck-0"],
      incompleteBecause: "pods are stuck terminating",
    });
    expect(node.sim.status().approvals).toEqual([]);
    expect(evictionsOf(node.peer, "stuck-0")).toEqual([]);
    expect(evictionsOf(node.peer, "hangs-0")).toEqual([]);
  }, 200_000);

  // Needs the peer's fault rules (k8s-peer: /__peer/seed `faults`) and the lean client's `throttled` outcome (k8s-lean).
  it("429 from API Priority and Fairness (Retry-After, no budget) is waited out: no eviction during the pause, counted throttled, not a PDB refusal", async () => {
    const { node, detail, metrics } = await drainScenario(
      basePods(),
      { pdbRetryMaxMs: 5_000 },
      150,
      untilApproved,
      async ({ peer }) => {
        await peerControl(peer, "POST", "seed", {
          faults: [
            {
              match: { verbs: ["create"], resources: ["pods/eviction"] },
              answer: { kind: "throttle", retryAfterSeconds: 2 },
              count: 3,
            },
          ],
        });
      },
    );
    const evictions = node.peer.state.evictions();
    const throttled = evictions.filter((e) => String(e.outcome) === "throttled");
    expect(throttled).toHaveLength(3);
    // Each throttled pod is asked again only after the 2 s Retry-After, and nothing more is asked meanwhile.
    for (const refusal of throttled) {
      const next = evictions.find((e) => e.pod === refusal.pod && e.atMs > refusal.atMs)!;
      expect(next.outcome).toBe("evicted");
      expect(next.atMs - refusal.atMs).toBeGreaterThanOrEqual(1_900);
    }
    expect(evictions).toHaveLength(4 + 3);
    expect(detail("Drained")).toMatchObject({ podsEvicted: 4, podsBlockedByPdb: [], evictionsThrottled: 3 });
    expect(counter(metrics, "throttled")).toBe(3);
    expect(counter(metrics, "pdb_refused")).toBe(0);
    expect(counter(metrics, "evicted")).toBe(4);
  }, 200_000);

  // Needs the peer's fault rules (k8s-peer: /__peer/seed `faults`).
  it("a 403 on an eviction is logged, counted as an error, retried until allowed, and named in Detail", async () => {
    const { node, detail, metrics } = await drainScenario(basePods(), {}, 150, untilApproved, async ({ peer }) => {
      await peerControl(peer, "POST", "seed", {
        faults: [
          {
            match: { verbs: ["create"], resources: ["pods/eviction"], names: ["web-4"] },
            answer: { kind: "forbidden" },
            count: 2,
          },
        ],
      });
    });
    expect(evictionsOf(node.peer, "web-4").map((e) => e.code)).toEqual([403, 403, 201]);
    expect(detail("Drained")).toMatchObject({
      podsEvicted: 4,
      evictionErrors: [{ pod: "apps/web-4", status: 403, message: expect.stringContaining("forbidden") }],
    });
    expect(counter(metrics, "error")).toBe(2);
    expect(node.agent.stderr()).toContain("eviction failed; retrying until the deadline");
  }, 200_000);
});
