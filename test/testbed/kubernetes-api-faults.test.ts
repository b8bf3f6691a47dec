// The Kubernetes peer's fault injection and drain edge cases over HTTPS with a plain client: API Priority and
// Fairness throttling (429, plain text, Retry-After, flow-schema headers) told apart from a budget's refusal (a Status
// with a DisruptionBudget cause, Retry-After only while the budget is unprocessed), 403 and 500 on evictions, the
// /__peer/ control surface, pods that come back after an eviction, and pods stuck terminating.
import { describe, expect, it } from "vitest";
import {
  flowSchemaUid,
  priorityLevelUid,
  type KubernetesPeer,
  type OwnerSeed,
} from "../../src/testbed/peers/kubernetes/index.js";
import { waitFor } from "../helpers/wait.js";
import { requestPeer } from "./peer-client.js";
import { peerPerTest } from "./peer-kit.js";

const start = peerPerTest();

const rs = (name: string): OwnerSeed[] => [{ kind: "ReplicaSet", name }];
const evict = (p: KubernetesPeer, name: string, namespace = "default") =>
  requestPeer(p, "POST", `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, {
    body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace } },
  });
const evictionFaults = { match: { verbs: ["create"], resources: ["pods/eviction"] } } as const;

describe("fault injection", () => {
  it("throttles as APF does, for `count` requests of the chosen verb and resource, then lets them through", async () => {
    const p = await start({
      nodes: [{ name: "n1" }],
      pods: [{ name: "web-1", nodeName: "n1", ownerReferences: rs("web-7d"), terminationGracePeriodSeconds: 0 }],
    });
    const id = p.state.injectFault({ ...evictionFaults, answer: { kind: "throttle", retryAfterSeconds: 2 }, count: 2 });
    const listed = await requestPeer(p, "GET", "/api/v1/nodes");
    expect(listed.code).toBe(200);
    expect([
      listed.headers["x-kubernetes-pf-flowschema-uid"],
      listed.headers["x-kubernetes-pf-prioritylevel-uid"],
    ]).toEqual([flowSchemaUid, priorityLevelUid]);
    const throttled = await evict(p, "web-1");
    expect(throttled.code).toBe(429);
    expect(throttled.text).toBe("Too many requests, please try again later.\n");
    expect(throttled.headers).toMatchObject({
      "retry-after": "2",
      "content-type": "text/plain; charset=utf-8",
      "x-content-type-options": "nosniff",
      "x-kubernetes-pf-flowschema-uid": flowSchemaUid,
      "x-kubernetes-pf-prioritylevel-uid": priorityLevelUid,
    });
    expect((await evict(p, "web-1")).code).toBe(429);
    expect((await evict(p, "web-1")).code).toBe(201);
    expect(p.state.evictions().map((e) => [e.pod, e.nodeName, e.outcome, e.code, e.fault])).toEqual([
      ["web-1", "n1", "throttled", 429, id],
      ["web-1", "n1", "throttled", 429, id],
      ["web-1", "n1", "evicted", 201, undefined],
    ]);
    expect(p.state.faults()).toMatchObject([{ id, seen: 2, hits: 2, active: false }]);
    expect(p.state.stats().evictions.byNode.n1).toEqual({
      requests: 3,
      evicted: 1,
      blocked: 0,
      throttled: 2,
      refused: 0,
      notFound: 0,
    });
    expect(p.state.requests().filter((r) => r.fault === id)).toHaveLength(2);
    expect(
      (await requestPeer(p, "GET", "/api/v1/nodes", { token: null })).headers["x-kubernetes-pf-flowschema-uid"],
    ).toBeUndefined();
  });

  it("tells a budget's refusal apart: a Status with a DisruptionBudget cause; Retry-After 10 only while the budget is unprocessed", async () => {
    const p = await start({
      nodes: [{ name: "n1" }],
      pods: [{ name: "db-0", nodeName: "n1", labels: { app: "db" }, ownerReferences: rs("db") }],
      podDisruptionBudgets: [{ name: "db", matchLabels: { app: "db" }, maxUnavailable: 0, processingForMs: 60_000 }],
    });
    const unprocessed = await evict(p, "db-0");
    expect(unprocessed.code).toBe(429);
    expect(unprocessed.headers["retry-after"]).toBe("10");
    expect(unprocessed.body).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      reason: "TooManyRequests",
      details: {
        causes: [
          { reason: "DisruptionBudget", message: "The disruption budget db is still being processed by the server." },
        ],
        retryAfterSeconds: 10,
      },
      code: 429,
    });
    expect(
      (
        (await requestPeer(p, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/db")).body.status as {
          observedGeneration: number;
        }
      ).observedGeneration,
    ).toBe(0);
    p.state.holdBudgetProcessing("default", "db", 0);
    const refused = await evict(p, "db-0");
    expect(refused.headers["retry-after"]).toBeUndefined();
    expect(refused.body).toMatchObject({
      reason: "TooManyRequests",
      details: {
        causes: [
          { reason: "DisruptionBudget", message: "The disruption budget db needs 1 healthy pods and has 1 currently" },
        ],
      },
    });
    expect((refused.body.details as Record<string, unknown>).retryAfterSeconds).toBeUndefined();
    expect(p.state.evictions().map((e) => [e.outcome, e.budget])).toEqual([
      ["blocked", "db"],
      ["blocked", "db"],
    ]);
  });

  it("answers evictions with RBAC's 403 or a 500 for a while, and seeds fault rules from the seed", async () => {
    const p = await start({
      nodes: [{ name: "n1" }],
      pods: [
        { name: "web-1", nodeName: "n1", ownerReferences: rs("web-7d") },
        { name: "web-2", nodeName: "n1", ownerReferences: rs("web-7d") },
      ],
      faults: [
        {
          ...evictionFaults,
          match: { ...evictionFaults.match, names: ["web-1"] },
          answer: { kind: "forbidden" },
          count: 1,
        },
      ],
    });
    const forbidden = await evict(p, "web-1");
    expect(forbidden).toMatchObject({
      code: 403,
      body: {
        reason: "Forbidden",
        message: `pods "web-1" is forbidden: User "system:serviceaccount:sef-system:sef" cannot create resource "pods/eviction" in API group "" in the namespace "default"`,
        details: { name: "web-1", kind: "pods" },
      },
    });
    p.state.injectFault({ ...evictionFaults, answer: { kind: "internal-error" }, forMs: 60_000 });
    expect(await evict(p, "web-2")).toMatchObject({
      code: 500,
      body: { reason: "InternalError", message: "Internal error occurred: etcdserver: leader changed" },
    });
    expect(await evict(p, "web-1")).toMatchObject({ code: 500 });
    expect(p.state.pod("default", "web-1")?.metadata.deletionTimestamp).toBeUndefined();
    expect(p.state.evictions().map((e) => [e.pod, e.outcome, e.code])).toEqual([
      ["web-1", "refused", 403],
      ["web-2", "refused", 500],
      ["web-1", "refused", 500],
    ]);
  });

  it("is driven over /__peer/ too: install, list and remove rules, read stats and logs, seed; never logged, token required", async () => {
    const p = await start({ nodes: [{ name: "n1" }] });
    const installed = await requestPeer(p, "POST", "/__peer/faults", {
      body: { match: { verbs: ["list"], resources: ["nodes"] }, answer: { kind: "throttle" } },
    });
    expect(installed).toMatchObject({ code: 201, body: { id: expect.stringMatching(/^fault-\d+$/) } });
    expect((await requestPeer(p, "GET", "/api/v1/nodes")).code).toBe(429);
    expect((await requestPeer(p, "GET", "/api/v1/nodes/n1")).code).toBe(200);
    const rules = JSON.parse((await requestPeer(p, "GET", "/__peer/faults")).text) as { id: string; hits: number }[];
    expect(rules).toMatchObject([{ id: installed.body.id, hits: 1 }]);
    expect((await requestPeer(p, "DELETE", `/__peer/faults/${String(installed.body.id)}`)).code).toBe(200);
    expect((await requestPeer(p, "DELETE", `/__peer/faults/${String(installed.body.id)}`)).code).toBe(404);
    expect((await requestPeer(p, "GET", "/api/v1/nodes")).code).toBe(200);
    expect(await requestPeer(p, "POST", "/__peer/faults", { body: { answer: { kind: "teapot" } } })).toMatchObject({
      code: 400,
      body: { error: expect.stringContaining("answer.kind") },
    });
    expect(
      (await requestPeer(p, "POST", "/__peer/seed", { body: { nodes: [{ name: "n2" }], leases: [{ name: "l1" }] } }))
        .code,
    ).toBe(201);
    expect(p.state.nodes().map((n) => n.metadata.name)).toEqual(["n1", "n2"]);
    const stats = await requestPeer(p, "GET", "/__peer/stats");
    expect(stats.body).toMatchObject({ requests: { total: 3, byCode: { "200": 2, "429": 1 }, faulted: 1 } });
    expect((await requestPeer(p, "GET", "/__peer/stats", { token: null })).code).toBe(401);
    expect((await requestPeer(p, "GET", "/__peer/nothing")).code).toBe(404);
    expect(p.state.requests().some((r) => r.path.startsWith("/__peer/"))).toBe(false);
  });
});

describe("pods that come back", () => {
  it("a matching evicted pod is replaced on the same node after the delay, tolerating everything, up to maxReturns", async () => {
    const p = await start({
      nodes: [{ name: "n1", unschedulable: true }],
      pods: [
        {
          namespace: "apps",
          name: "agent-x",
          nodeName: "n1",
          labels: { app: "agent" },
          ownerReferences: rs("agent-7c"),
          terminationGracePeriodSeconds: 0,
        },
      ],
      returningPods: [{ namespace: "apps", matchLabels: { app: "agent" }, delayMs: 200, maxReturns: 1 }],
    });
    expect((await evict(p, "agent-x", "apps")).code).toBe(201);
    const back = await waitFor("the pod to come back", () => p.state.pods({ namespace: "apps" })[0]);
    expect(back).toMatchObject({
      metadata: { labels: { app: "agent" }, ownerReferences: [{ kind: "ReplicaSet", name: "agent-7c" }] },
      spec: { nodeName: "n1", tolerations: [{ operator: "Exists" }] },
      status: { phase: "Running" },
    });
    expect(back.metadata.name).toMatch(/^agent-7c-[a-z0-9]{5}$/);
    expect(p.state.returnedPods()).toMatchObject([
      { rule: "returning-1", replaced: "apps/agent-x", pod: `apps/${back.metadata.name}`, nodeName: "n1" },
    ]);
    expect((await evict(p, back.metadata.name, "apps")).code).toBe(201);
    // maxReturns 1: the second eviction is final; wait past the delay on a pod that would have come back.
    await waitFor("the replacement to be gone", () => p.state.pods({ namespace: "apps" }).length === 0);
    const sentinel = p.state.addReturningPods({ namespace: "apps", matchLabels: { app: "probe" }, delayMs: 200 });
    p.state.addPod({
      namespace: "apps",
      name: "probe",
      nodeName: "n1",
      labels: { app: "probe" },
      terminationGracePeriodSeconds: 0,
    });
    expect((await evict(p, "probe", "apps")).code).toBe(201);
    await waitFor("the probe to come back", () => p.state.returnedPods().find((r) => r.rule === sentinel));
    expect(p.state.returnedPods().filter((r) => r.rule === "returning-1")).toHaveLength(1);
  });
});

describe("pods stuck terminating", () => {
  it("a pod with a finalizer stays after its grace period, terminal, until the finalizer goes; no finalizer may be added meanwhile", async () => {
    const p = await start({
      nodes: [{ name: "n1" }],
      pods: [
        {
          name: "held",
          nodeName: "n1",
          ownerReferences: rs("held-1"),
          finalizers: ["example.com/hold"],
          terminationGracePeriodSeconds: 1,
        },
      ],
    });
    expect((await evict(p, "held")).code).toBe(201);
    const stopped = await waitFor(
      "the containers to stop",
      () => p.state.pod("default", "held")?.metadata.deletionGracePeriodSeconds === 0 && p.state.pod("default", "held"),
    );
    expect(stopped.status).toMatchObject({ phase: "Succeeded" });
    expect(stopped.metadata.deletionTimestamp).toBeDefined();
    const path = "/api/v1/namespaces/default/pods/held";
    const adding = await requestPeer(p, "PATCH", path, {
      contentType: "application/merge-patch+json",
      body: { metadata: { finalizers: ["example.com/hold", "example.com/more"] } },
    });
    expect(adding).toMatchObject({
      code: 422,
      body: {
        reason: "Invalid",
        message: `Pod "held" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/more"}`,
      },
    });
    expect((await evict(p, "held")).code).toBe(201);
    expect(p.state.pod("default", "held")).toBeDefined();
    const released = await requestPeer(p, "PATCH", path, {
      contentType: "application/json-patch+json",
      body: [{ op: "remove", path: "/metadata/finalizers" }],
    });
    expect(released.code).toBe(200);
    expect((await requestPeer(p, "GET", path)).code).toBe(404);
  });

  it("a pod whose kubelet never confirms stays terminating past its grace until a delete with grace 0; a seeded one is already past it", async () => {
    const p = await start({
      nodes: [{ name: "n1", ready: false }],
      pods: [
        {
          name: "lost",
          nodeName: "n1",
          ownerReferences: rs("lost-1"),
          terminationGracePeriodSeconds: 1,
          stopsAfterSeconds: "never",
        },
        { name: "control", nodeName: "n1", ownerReferences: rs("control-1"), terminationGracePeriodSeconds: 1 },
        {
          name: "old",
          nodeName: "n1",
          ownerReferences: rs("old-1"),
          terminationGracePeriodSeconds: 30,
          terminatingForSeconds: 600,
        },
      ],
    });
    const old = p.state.pod("default", "old");
    expect(old?.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(Date.now() - Date.parse(old?.metadata.deletionTimestamp ?? "")).toBeGreaterThan(560_000);
    expect((await evict(p, "old")).code).toBe(201);
    expect(p.state.pod("default", "old")?.metadata.deletionTimestamp).toBe(old?.metadata.deletionTimestamp);
    expect((await evict(p, "lost")).code).toBe(201);
    expect((await evict(p, "control")).code).toBe(201);
    const terminating = p.state.pod("default", "lost");
    expect(terminating?.metadata.deletionGracePeriodSeconds).toBe(1);
    // The control pod, evicted after it with the same grace period, going proves the grace period has passed.
    await waitFor("the control pod to go", () => p.state.pod("default", "control") === undefined);
    expect(p.state.pod("default", "lost")?.metadata).toMatchObject({
      deletionTimestamp: terminating?.metadata.deletionTimestamp,
      deletionGracePeriodSeconds: 1,
    });
    expect((await requestPeer(p, "DELETE", "/api/v1/namespaces/default/pods/lost?gracePeriodSeconds=0")).code).toBe(
      200,
    );
    expect(
      (await requestPeer(p, "DELETE", "/api/v1/namespaces/default/pods/old", { body: { gracePeriodSeconds: 0 } })).code,
    ).toBe(200);
    expect(p.state.pods()).toEqual([]);
  });
});
