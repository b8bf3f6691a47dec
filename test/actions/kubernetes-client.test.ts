// The kubernetes action's client against the testbed's Kubernetes API peer (real HTTPS, the peer's API server rules):
// each call's answer as a value, errors as KubeApiError with status and reason; and the eviction answers (evicted,
// PodDisruptionBudget 429, gone, 500) — plus, as plain values, what a 429 means (budget or throttling) and its wait.
import { describe, expect, it, type TestContext } from "vitest";
import { createKubeApi, KubeApiError, type KubeApi } from "../../src/agent/actions/kubernetes/client.js";
import { evictionOutcomeOf, throttleBoundsMs } from "../../src/agent/actions/kubernetes/views.js";
import type { ApiAnswer } from "../../src/agent/actions/kubernetes/api-request.js";
import {
  startKubernetesPeer,
  type KubernetesPeer,
  type KubernetesSeed,
} from "../../src/testbed/peers/kubernetes/index.js";
import { SefError } from "../../src/errors/sef-error.js";

const node = "aks-nodepool1-0";
const owner = [{ kind: "ReplicaSet", name: "web-7d9f" }];

async function setUp(test: TestContext, seed: KubernetesSeed): Promise<{ peer: KubernetesPeer; kube: KubeApi }> {
  const peer = await startKubernetesPeer({ seed });
  const kube = await createKubeApi({ kubeconfig: peer.kubeconfigPath, requestTimeoutMs: 10_000 });
  test.onTestFinished(async () => {
    kube.close();
    await peer.close();
  });
  return { peer, kube };
}

describe.concurrent("kubernetes client calls against the Kubernetes API peer", () => {
  it("reads, lists by label and merge-patches a Node; a stale resourceVersion is a 409 KubeApiError (a SefError with a code)", async (test) => {
    const { peer, kube } = await setUp(test, {
      nodes: [
        {
          name: node,
          providerID: "azure:///vm/0",
          labels: { agentpool: "nodepool1" },
          taints: [{ key: "other", value: "x", effect: "NoSchedule" }],
        },
        { name: "aks-nodepool2-0", providerID: "azure:///vm/1", labels: { agentpool: "nodepool2" } },
      ],
    });
    const read = await kube.readNode(node);
    expect(read).toMatchObject({
      name: node,
      providerID: "azure:///vm/0",
      unschedulable: false,
      labels: { agentpool: "nodepool1" },
    });
    expect(read.taints).toEqual([{ key: "other", value: "x", effect: "NoSchedule" }]);
    expect((await kube.listNodes("agentpool=nodepool1")).map((n) => n.name)).toEqual([node]);
    expect((await kube.listNodes("")).length).toBe(2);
    const taint = { key: "sef.azure.com/scheduled-event-reboot", value: "E1", effect: "NoSchedule" };
    await kube.patchNode(
      node,
      { taints: [...read.taints, taint], unschedulable: true, annotations: { "sef.azure.com/event-id": "E1" } },
      read.resourceVersion,
    );
    const spec = peer.state.node(node)!.spec as { unschedulable?: boolean; taints?: unknown[] };
    expect(spec.unschedulable).toBe(true);
    expect(spec.taints).toHaveLength(2);
    const stale = await kube.patchNode(node, { taints: [], annotations: {} }, read.resourceVersion).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(stale).toBeInstanceOf(KubeApiError);
    expect(stale).toBeInstanceOf(SefError);
    expect(stale).toMatchObject({ status: 409, reason: "Conflict", code: "SEF_ERR_KUBE_API" });
    await expect(kube.readNode("no-such-node")).rejects.toMatchObject({ status: 404, reason: "NotFound" });
  });

  it("lists the node's pods as views, writes an Event on the Node", async (test) => {
    const { peer, kube } = await setUp(test, {
      nodes: [{ name: node, providerID: "azure:///vm/0" }],
      pods: [
        {
          namespace: "apps",
          name: "web-1",
          nodeName: node,
          ownerReferences: owner,
          terminationGracePeriodSeconds: 45,
          emptyDirVolumes: ["cache"],
        },
        {
          namespace: "kube-system",
          name: "kube-proxy-x",
          nodeName: node,
          ownerReferences: [{ kind: "DaemonSet", name: "kube-proxy" }],
        },
        { namespace: "apps", name: "elsewhere", nodeName: "another-node", ownerReferences: owner },
      ],
    });
    const pods = await kube.listPods(node);
    expect(pods.map((p) => `${p.namespace}/${p.name}`).sort()).toEqual(["apps/web-1", "kube-system/kube-proxy-x"]);
    expect(pods.find((p) => p.name === "web-1")).toMatchObject({
      controllerKinds: ["ReplicaSet"],
      phase: "Running",
      terminationGracePeriodSeconds: 45,
      hasEmptyDir: true,
      deletionTimestampMs: undefined,
      uid: expect.any(String),
    });
    const read = await kube.readNode(node);
    await kube.nodeEvent(read, "ScheduledEventNoticed", "Reboot E1 scheduled", "Normal");
    expect(peer.state.events()).toHaveLength(1);
    expect(peer.state.events()[0]).toMatchObject({
      reason: "ScheduledEventNoticed",
      type: "Normal",
      involvedObject: { kind: "Node", name: node, uid: read.uid },
    });
  });

  it("evictions: accepted, refused by a PodDisruptionBudget (429 naming it), gone (404), two budgets (500) — answers, not throws", async (test) => {
    const { peer, kube } = await setUp(test, {
      nodes: [{ name: node, providerID: "azure:///vm/0" }],
      pods: [
        { namespace: "apps", name: "web-1", nodeName: node, ownerReferences: owner },
        { namespace: "apps", name: "db-0", nodeName: node, labels: { app: "db" }, ownerReferences: owner },
        {
          namespace: "apps",
          name: "both-0",
          nodeName: node,
          labels: { app: "both", tier: "x" },
          ownerReferences: owner,
        },
      ],
      podDisruptionBudgets: [
        { namespace: "apps", name: "db", matchLabels: { app: "db" }, maxUnavailable: 1, blockForMs: "forever" },
        { namespace: "apps", name: "both-a", matchLabels: { app: "both" }, maxUnavailable: 1 },
        { namespace: "apps", name: "both-b", matchLabels: { tier: "x" }, maxUnavailable: 1 },
      ],
    });
    expect(await kube.evict({ namespace: "apps", name: "web-1", uid: "" }, 30)).toEqual({ kind: "evicted" });
    expect(await kube.evict({ namespace: "apps", name: "db-0", uid: "" }, 30)).toMatchObject({
      kind: "pdb",
      message: expect.stringMatching(/disruption budget/),
    });
    expect(await kube.evict({ namespace: "apps", name: "nobody", uid: "" }, 30)).toEqual({ kind: "gone" });
    expect(await kube.evict({ namespace: "apps", name: "both-0", uid: "" }, 30)).toMatchObject({
      kind: "error",
      status: 500,
    });
    expect(peer.state.evictions().map((e) => e.outcome)).toEqual(["evicted", "blocked", "not-found", "refused"]);
  });
});

/** An answer as the transport gives it. */
const answer = (status: number, body: unknown, headers: Record<string, string> = {}): ApiAnswer => ({
  status,
  body,
  header: (name) => headers[name.toLowerCase()],
});
const nowMs = Date.parse("2026-11-27T12:00:00Z");

describe("what an eviction's answer means", () => {
  it("a 429 whose Status names a disruption budget is a PDB refusal, even with a Retry-After (the API server sends one)", () => {
    const byCause = {
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: { causes: [{ reason: "DisruptionBudget", message: "The disruption budget db needs 1 healthy pods" }] },
    };
    expect(evictionOutcomeOf(answer(429, byCause, { "retry-after": "10" }), nowMs)).toEqual({
      kind: "pdb",
      message: byCause.message,
    });
    expect(
      evictionOutcomeOf(answer(429, { message: "x", details: { causes: [{ type: "DisruptionBudget" }] } }), nowMs).kind,
    ).toBe("pdb");
    expect(
      evictionOutcomeOf(
        answer(429, { message: "Cannot evict pod as it would violate the pod's disruption budget." }),
        nowMs,
      ).kind,
    ).toBe("pdb");
  });

  it("a 429 without a budget is throttling: Retry-After (seconds or date), else the Status's retryAfterSeconds, else 1 s, bounded", () => {
    const apf = {
      message: "Too many requests, please try again later.",
      reason: "TooManyRequests",
      details: { retryAfterSeconds: 3 },
    };
    expect(evictionOutcomeOf(answer(429, apf, { "retry-after": "2" }), nowMs)).toEqual({
      kind: "throttled",
      retryAfterMs: 2_000,
      message: apf.message,
    });
    expect(evictionOutcomeOf(answer(429, apf), nowMs)).toMatchObject({ kind: "throttled", retryAfterMs: 3_000 });
    expect(evictionOutcomeOf(answer(429, { message: "slow down" }), nowMs)).toMatchObject({
      retryAfterMs: throttleBoundsMs.fallback,
    });
    expect(
      evictionOutcomeOf(answer(429, {}, { "retry-after": new Date(nowMs + 5_000).toUTCString() }), nowMs),
    ).toMatchObject({ retryAfterMs: 5_000 });
    expect(evictionOutcomeOf(answer(429, {}, { "retry-after": "86400" }), nowMs)).toMatchObject({
      retryAfterMs: throttleBoundsMs.max,
    });
    expect(evictionOutcomeOf(answer(429, {}, { "retry-after": "0" }), nowMs)).toMatchObject({
      retryAfterMs: throttleBoundsMs.min,
    });
    expect(evictionOutcomeOf(answer(429, undefined), nowMs)).toMatchObject({ kind: "throttled", message: "HTTP 429" });
  });

  it("201 is evicted, 404 gone, 403 and 500 errors carrying their status and message", () => {
    expect(evictionOutcomeOf(answer(201, { status: "Success" }), nowMs)).toEqual({ kind: "evicted" });
    expect(evictionOutcomeOf(answer(404, { message: 'pods "x" not found' }), nowMs)).toEqual({ kind: "gone" });
    expect(evictionOutcomeOf(answer(403, { message: "forbidden: cannot create pods/eviction" }), nowMs)).toEqual({
      kind: "error",
      status: 403,
      message: "forbidden: cannot create pods/eviction",
    });
    expect(evictionOutcomeOf(answer(500, { message: "more than one PodDisruptionBudget" }), nowMs)).toMatchObject({
      kind: "error",
      status: 500,
    });
  });
});
