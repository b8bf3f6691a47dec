// The Kubernetes peer over HTTPS with a plain client, for the API behaviour kubectl's conformance run does not reach:
// the Status bodies, patch formats and optimistic concurrency, list paging and selectors, the eviction rules (budget
// refusal, several budgets, grace periods, dryRun, terminating and Pending pods), events validation, watch refusal,
// and close() within its deadline while a client holds a request open.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:tls";
import { request } from "node:https";
import { describe, expect, it } from "vitest";
import type { KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { requestPeer } from "./peer-client.js";
import { peerPerTest } from "./peer-kit.js";

interface Answer {
  code: number;
  body: Record<string, unknown>;
}

const start = peerPerTest();

async function call(
  p: KubernetesPeer,
  method: string,
  path: string,
  body?: unknown,
  contentType = "application/json",
  token: string | null = p.token,
): Promise<Answer> {
  const answer = await requestPeer(p, method, path, { body, contentType, token });
  return { code: answer.code, body: answer.body };
}

const eviction = (name: string, deleteOptions?: object): object => ({
  apiVersion: "policy/v1",
  kind: "Eviction",
  metadata: { name, namespace: "default" },
  ...(deleteOptions ? { deleteOptions } : {}),
});
const owned = [{ kind: "ReplicaSet", name: "rs" }];

describe("Kubernetes peer API", () => {
  it("answers 401 with a Status without the bearer token, and serves discovery with it", async () => {
    const p = await start({});
    expect(await call(p, "GET", "/api/v1/nodes", undefined, undefined, null)).toEqual({
      code: 401,
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Unauthorized",
        reason: "Unauthorized",
        code: 401,
      },
    });
    expect((await call(p, "GET", "/api", undefined, undefined, "wrong")).code).toBe(401);
    const core = await call(p, "GET", "/api/v1");
    expect(core.body.resources).toContainEqual({
      name: "pods/eviction",
      singularName: "",
      namespaced: true,
      group: "policy",
      version: "v1",
      kind: "Eviction",
      verbs: ["create"],
    });
    const groups = (await call(p, "GET", "/apis")).body.groups as { name: string }[];
    expect(groups.map((g) => g.name).sort()).toEqual(["apps", "coordination.k8s.io", "events.k8s.io", "policy"]);
    expect((await call(p, "GET", "/apis/policy")).body).toMatchObject({
      kind: "APIGroup",
      name: "policy",
      preferredVersion: { groupVersion: "policy/v1" },
    });
    expect(await call(p, "GET", "/apis/batch/v1/jobs")).toMatchObject({
      code: 404,
      body: { kind: "Status", reason: "NotFound" },
    });
  });

  it("writes in-cluster credentials as a pod sees them, and they reach the API", async () => {
    const p = await start({ nodes: [{ name: "node-a" }] }, { serviceAccountNamespace: "sef-system" });
    const dir = join(p.inCluster.pathPrefix, "var/run/secrets/kubernetes.io/serviceaccount");
    expect([p.caFile, p.tokenFile]).toEqual([join(dir, "ca.crt"), join(dir, "token")]);
    expect(readFileSync(join(dir, "namespace"), "utf8")).toBe("sef-system");
    const { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port } = p.inCluster.env;
    const fromFiles = { ...p, url: `https://${host}:${port}`, caPem: readFileSync(join(dir, "ca.crt"), "utf8") };
    expect(
      await call(
        fromFiles,
        "GET",
        "/api/v1/nodes/node-a",
        undefined,
        undefined,
        readFileSync(join(dir, "token"), "utf8"),
      ),
    ).toMatchObject({ code: 200, body: { kind: "Node" } });
  });

  it("patches nodes with merge and JSON patches, checks resourceVersion, refuses unknown patch types", async () => {
    const p = await start({ nodes: [{ name: "node-a", labels: { pool: "spot" } }] });
    const tainted = await call(
      p,
      "PATCH",
      "/api/v1/nodes/node-a",
      { spec: { taints: [{ key: "sef.io/reboot", value: "E1", effect: "NoSchedule" }] } },
      "application/merge-patch+json",
    );
    expect(tainted.code).toBe(200);
    expect(tainted.body.spec).toEqual({ taints: [{ key: "sef.io/reboot", value: "E1", effect: "NoSchedule" }] });
    const rv = (tainted.body.metadata as { resourceVersion: string }).resourceVersion;
    const untainted = await call(
      p,
      "PATCH",
      "/api/v1/nodes/node-a",
      [
        { op: "test", path: "/spec/taints/0/key", value: "sef.io/reboot" },
        { op: "remove", path: "/spec/taints/0" },
      ],
      "application/json-patch+json",
    );
    expect(untainted.body.spec).toEqual({});
    expect(Number((untainted.body.metadata as { resourceVersion: string }).resourceVersion)).toBeGreaterThan(
      Number(rv),
    );
    const stale = await call(
      p,
      "PATCH",
      "/api/v1/nodes/node-a",
      { metadata: { resourceVersion: rv, labels: { x: "1" } } },
      "application/merge-patch+json",
    );
    expect(stale).toMatchObject({
      code: 409,
      body: {
        kind: "Status",
        reason: "Conflict",
        message: `Operation cannot be fulfilled on nodes "node-a": the object has been modified; please apply your changes to the latest version and try again`,
      },
    });
    expect(await call(p, "PATCH", "/api/v1/nodes/node-a", { spec: {} }, "application/json")).toMatchObject({
      code: 415,
      body: { reason: "UnsupportedMediaType" },
    });
    expect(await call(p, "PATCH", "/api/v1/nodes/node-b", { spec: {} }, "application/merge-patch+json")).toMatchObject({
      code: 404,
      body: { reason: "NotFound", message: `nodes "node-b" not found` },
    });
    const current = (await call(p, "GET", "/api/v1/nodes/node-a")).body;
    const replaced = await call(p, "PUT", "/api/v1/nodes/node-a", { ...current, spec: { unschedulable: true } });
    expect(replaced.code).toBe(200);
    expect(p.state.node("node-a")?.spec).toEqual({ unschedulable: true });
    expect((await call(p, "PUT", "/api/v1/nodes/node-a", current)).code).toBe(409);
    expect(p.state.node("node-a")?.metadata.labels).toMatchObject({ pool: "spot" });
  });

  it("lists pods by node across namespaces, pages with limit/continue, refuses unsupported fields", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }, { name: "node-b" }],
      pods: [
        { namespace: "apps", name: "a1", nodeName: "node-a" },
        { namespace: "default", name: "a2", nodeName: "node-a", phase: "Succeeded" },
        { namespace: "default", name: "b1", nodeName: "node-b" },
      ],
    });
    const names = (answer: Answer): string[] =>
      (answer.body.items as { metadata: { namespace: string; name: string } }[]).map(
        (i) => `${i.metadata.namespace}/${i.metadata.name}`,
      );
    const onA = await call(p, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a");
    expect(onA.body).toMatchObject({ kind: "PodList", apiVersion: "v1" });
    expect(names(onA)).toEqual(["apps/a1", "default/a2"]);
    expect((onA.body.items as object[])[0]).not.toHaveProperty("kind");
    expect(
      names(await call(p, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a%2Cstatus.phase!%3DSucceeded")),
    ).toEqual(["apps/a1"]);
    expect(names(await call(p, "GET", "/api/v1/namespaces/default/pods"))).toEqual(["default/a2", "default/b1"]);
    const first = await call(p, "GET", "/api/v1/pods?limit=2");
    const token = (first.body.metadata as { continue?: string }).continue;
    expect(names(first)).toEqual(["apps/a1", "default/a2"]);
    expect(names(await call(p, "GET", `/api/v1/pods?limit=2&continue=${token}`))).toEqual(["default/b1"]);
    expect(await call(p, "GET", "/api/v1/pods?fieldSelector=spec.foo%3D1")).toMatchObject({
      code: 400,
      body: { reason: "BadRequest", message: "field label not supported: spec.foo" },
    });
  });

  it("evicts under a budget: 429 with the DisruptionBudget cause while blocked, then 201 and graceful deletion", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }],
      pods: [
        {
          name: "web-1",
          nodeName: "node-a",
          labels: { app: "web" },
          ownerReferences: owned,
          terminationGracePeriodSeconds: 30,
          stopsAfterSeconds: 1,
        },
        { name: "web-2", nodeName: "node-a", labels: { app: "web" }, ownerReferences: owned },
      ],
      podDisruptionBudgets: [
        { name: "web", matchLabels: { app: "web" }, maxUnavailable: 1, blockForMs: Number.POSITIVE_INFINITY },
      ],
    });
    expect(await call(p, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"))).toEqual({
      code: 429,
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Cannot evict pod as it would violate the pod's disruption budget.",
        reason: "TooManyRequests",
        details: {
          causes: [
            {
              reason: "DisruptionBudget",
              message: "The disruption budget web needs 2 healthy pods and has 2 currently",
            },
          ],
        },
        code: 429,
      },
    });
    expect(p.state.pod("default", "web-1")?.metadata.deletionTimestamp).toBeUndefined();
    p.state.allowDisruptions("default", "web");
    expect(
      (await call(p, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web")).body.status,
    ).toMatchObject({ disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 });
    const evicted = await call(p, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"));
    expect(evicted).toEqual({
      code: 201,
      body: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 },
    });
    const terminating = p.state.pod("default", "web-1");
    expect(terminating?.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(Date.parse(terminating?.metadata.deletionTimestamp ?? "") - Date.now()).toBeGreaterThan(25_000);
    // maxUnavailable 1: the second pod waits until the first is gone (the peer has no controller to replace it).
    expect((await call(p, "POST", "/api/v1/namespaces/default/pods/web-2/eviction", eviction("web-2"))).code).toBe(429);
    // Evicting a terminating pod again is accepted without a budget check and changes nothing.
    expect((await call(p, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"))).code).toBe(201);
    expect(p.state.pod("default", "web-1")?.metadata.deletionTimestamp).toBe(terminating?.metadata.deletionTimestamp);
    await waitFor(() => p.state.pod("default", "web-1") === undefined, 5_000);
    expect(await call(p, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"))).toMatchObject({
      code: 404,
      body: { reason: "NotFound", message: `pods "web-1" not found` },
    });
    expect(
      (
        await call(
          p,
          "POST",
          "/api/v1/namespaces/default/pods/web-2/eviction",
          eviction("web-2", { gracePeriodSeconds: 0 }),
        )
      ).code,
    ).toBe(201);
    expect(p.state.pod("default", "web-2")).toBeUndefined();
    expect(p.state.evictions().map((e) => `${e.pod}:${e.outcome}`)).toEqual([
      "web-1:blocked",
      "web-1:evicted",
      "web-2:blocked",
      "web-1:evicted",
      "web-1:not-found",
      "web-2:evicted",
    ]);
  });

  it("eviction rules: two budgets is a 500, Pending pods skip the budget, dryRun changes nothing, names must agree", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }],
      pods: [
        { name: "db-1", nodeName: "node-a", labels: { app: "db", tier: "data" }, ownerReferences: owned },
        { name: "web-1", nodeName: "node-a", labels: { app: "web" }, ownerReferences: owned, phase: "Pending" },
        { name: "web-2", nodeName: "node-a", labels: { app: "web" }, ownerReferences: owned },
      ],
      podDisruptionBudgets: [
        { name: "db", matchLabels: { app: "db" }, minAvailable: 0 },
        { name: "data", matchLabels: { tier: "data" }, minAvailable: 0 },
        { name: "web", matchLabels: { app: "web" }, minAvailable: 1 },
      ],
    });
    expect(await call(p, "POST", "/api/v1/namespaces/default/pods/db-1/eviction", eviction("db-1"))).toEqual({
      code: 500,
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        code: 500,
      },
    });
    expect((await call(p, "POST", "/api/v1/namespaces/default/pods/web-2/eviction", eviction("web-2"))).code).toBe(429);
    expect(
      (await call(p, "POST", "/api/v1/namespaces/default/pods/web-1/eviction?dryRun=All", eviction("web-1"))).code,
    ).toBe(201);
    expect(p.state.pod("default", "web-1")).toBeDefined();
    expect((await call(p, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-2"))).code).toBe(400);
    expect(
      (
        await call(
          p,
          "POST",
          "/api/v1/namespaces/default/pods/web-1/eviction",
          eviction("web-1", { preconditions: { uid: "other" } }),
        )
      ).code,
    ).toBe(409);
    expect((await call(p, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"))).code).toBe(201);
    expect(p.state.pod("default", "web-1")?.metadata.deletionGracePeriodSeconds).toBe(30);
  });

  it("deletes pods gracefully with DELETE and the grace period of the query", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }],
      pods: [{ name: "p1", nodeName: "node-a", terminationGracePeriodSeconds: 60 }],
    });
    const deleted = await call(p, "DELETE", "/api/v1/namespaces/default/pods/p1?gracePeriodSeconds=1");
    expect(deleted.code).toBe(200);
    expect((deleted.body.metadata as { deletionGracePeriodSeconds: number }).deletionGracePeriodSeconds).toBe(1);
    expect(p.state.pod("default", "p1")?.metadata.deletionTimestamp).toBe(
      (deleted.body.metadata as { deletionTimestamp: string }).deletionTimestamp,
    );
    await waitFor(() => p.state.pod("default", "p1") === undefined, 5_000);
  });

  it("creates events through both groups with the API server's validation", async () => {
    const p = await start({ nodes: [{ name: "node-a" }] });
    const valid = {
      metadata: { name: "e1" },
      eventTime: new Date().toISOString(),
      reportingController: "sef.io/agent",
      reportingInstance: "i",
      action: "Drain",
      reason: "Draining",
      type: "Normal",
      note: "n",
      regarding: { kind: "Node", name: "node-a" },
    };
    expect((await call(p, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", valid)).code).toBe(201);
    expect((await call(p, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", valid)).code).toBe(409);
    const invalid = await call(p, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", {
      ...valid,
      metadata: { name: "e2" },
      type: "Info",
      action: "",
    });
    expect(invalid).toMatchObject({
      code: 422,
      body: { reason: "Invalid", details: { causes: [{ field: "action" }, { field: "type" }] } },
    });
    expect(
      await call(p, "POST", "/api/v1/namespaces/nowhere/events", {
        metadata: { name: "e3", namespace: "nowhere" },
        involvedObject: { kind: "Pod", name: "x", namespace: "nowhere" },
        reason: "R",
      }),
    ).toMatchObject({ code: 404, body: { message: `namespaces "nowhere" not found` } });
    const core = await call(p, "GET", "/api/v1/namespaces/default/events/e1");
    expect(core.body).toMatchObject({
      kind: "Event",
      apiVersion: "v1",
      involvedObject: { kind: "Node", name: "node-a" },
      message: "n",
      reportingComponent: "sef.io/agent",
      source: {},
    });
    expect(
      ((await call(p, "GET", "/api/v1/events?fieldSelector=involvedObject.kind%3DNode")).body.items as unknown[])
        .length,
    ).toBe(1);
    expect(p.state.events().map((e) => e.metadata.name)).toEqual(["e1"]);
  });

  it("watches: current objects as ADDED, then MODIFIED and DELETED; resumes after a resourceVersion; ends on timeoutSeconds", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }, { name: "node-b" }],
      pods: [
        { name: "p1", nodeName: "node-a", terminationGracePeriodSeconds: 1 },
        { name: "p2", nodeName: "node-b" },
      ],
    });
    const startRv = p.state.pod("default", "p1")?.metadata.resourceVersion ?? "";
    const lines = watchLines(p, "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-a&timeoutSeconds=3");
    // The peer logs a watch request as it starts streaming it: from then on it sees every change.
    await waitFor(() => p.state.requests().some((r) => r.path.includes("watch=true")), 5000);
    expect((await call(p, "DELETE", "/api/v1/namespaces/default/pods/p1")).code).toBe(200);
    const events = await lines;
    expect(
      events.map((e) => [e.type, e.object.metadata.name, e.object.metadata.deletionTimestamp !== undefined]),
    ).toEqual([
      ["ADDED", "p1", false],
      ["MODIFIED", "p1", true],
      ["DELETED", "p1", true],
    ]);
    const resumed = await watchLines(
      p,
      `/api/v1/namespaces/default/pods?watch=true&resourceVersion=${startRv}&timeoutSeconds=1`,
    );
    expect(resumed.map((e) => [e.type, e.object.metadata.name])).toEqual([
      ["ADDED", "p2"],
      ["MODIFIED", "p1"],
      ["DELETED", "p1"],
    ]);
    expect(await call(p, "GET", "/api/v1/namespaces?watch=true")).toMatchObject({
      code: 405,
      body: { reason: "MethodNotAllowed" },
    });
  });

  it("closes within its deadline while a client holds a request open", async () => {
    const p = await start({});
    const socket = connect({
      host: "127.0.0.1",
      port: Number(new URL(p.url).port),
      ca: p.caPem,
      servername: "localhost",
    });
    await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
    socket.write(
      `POST /api/v1/namespaces/default/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${p.token}\r\nContent-Length: 1000\r\n\r\n{`,
    );
    socket.on("error", () => undefined);
    const startedMs = performance.now();
    await p.close(300);
    expect(performance.now() - startedMs).toBeLessThan(2_000);
    socket.destroy();
  });
});

interface WatchEvent {
  type: string;
  object: { metadata: { name: string; deletionTimestamp?: string } };
}

/** The events of one watch, read until the server ends the stream. */
function watchLines(p: KubernetesPeer, path: string): Promise<WatchEvent[]> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${p.url}${path}`,
      { ca: p.caPem, timeout: 20_000, headers: { authorization: `Bearer ${p.token}` } },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
        res.on("end", () =>
          resolve(
            text
              .split("\n")
              .filter((line) => line !== "")
              .map((line) => JSON.parse(line) as WatchEvent),
          ),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error("watch did not end")));
    req.on("error", reject);
    req.end();
  });
}

async function waitFor(condition: () => boolean, deadlineMs: number): Promise<void> {
  const startedMs = performance.now();
  while (!condition()) {
    if (performance.now() - startedMs > deadlineMs) throw new Error(`condition not met within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
