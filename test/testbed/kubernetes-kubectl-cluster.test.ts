// Conformance of the Kubernetes peer's cluster-scale parts with an unmodified kubectl 1.33: nodes by label and field
// selector, Leases (get -A, create -f with server-side field validation, client-side apply, delete), drain of a node
// with a pod that declares no controller (refused without --force, evicted with it), what kubectl does against API
// Priority and Fairness's 429 with Retry-After (client-go waits it out up to 10 times, then reports TooManyRequests),
// a 403 on an eviction, a pod stuck terminating, a pod past its grace, and a pod that comes back.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectlPath } from "../helpers/kubectl-layer.js";
import { azureNodeSeed, type KubernetesSeed, type OwnerSeed } from "../../src/testbed/peers/kubernetes/index.js";
import { kubectl, removeKubectlHome } from "./kubectl.js";
import { peerPerTest } from "./peer-kit.js";

const group =
  "/subscriptions/8c1b5f3e-2d4a-4c6b-9e7f-1a2b3c4d5e6f/resourceGroups/MC_sef_aks_norwayeast/providers/Microsoft.Compute";
const nodes: KubernetesSeed["nodes"] = [
  azureNodeSeed(`${group}/virtualMachineScaleSets/aks-pool1-vmss/virtualMachines/0`, {
    labels: { agentpool: "pool1" },
  }),
  azureNodeSeed(`${group}/virtualMachineScaleSets/aks-pool1-vmss/virtualMachines/1`, {
    labels: { agentpool: "pool1" },
    unschedulable: true,
  }),
  azureNodeSeed(`${group}/virtualMachines/aks-flex_1a2b3c4d`, { labels: { agentpool: "flex" } }),
];
const rs = (name: string): OwnerSeed[] => [{ kind: "ReplicaSet", name }];
const evictions = { match: { verbs: ["create"], resources: ["pods/eviction"] } } as const;

beforeAll(() => {
  expect(kubectlPath()).toMatch(/kubectl$/);
});
afterAll(() => removeKubectlHome());
const start = peerPerTest();

describe("kubectl 1.33 against the peer's cluster", () => {
  it("gets nodes by label and by spec.unschedulable, with their providerIDs", async () => {
    const p = await start({ nodes });
    const pool = await kubectl(p.kubeconfigPath, ["get", "nodes", "-l", "agentpool=pool1"]);
    expect(pool.stdout).toMatch(
      /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\naks-pool1-vmss000000\s+Ready\s+<none>\s+\S+\s+v1\.33\.0\naks-pool1-vmss000001\s+Ready,SchedulingDisabled\s+<none>\s+\S+\s+v1\.33\.0\n$/,
    );
    const cordoned = await kubectl(p.kubeconfigPath, [
      "get",
      "nodes",
      "--field-selector",
      "spec.unschedulable=true",
      "-o",
      "name",
    ]);
    expect(cordoned).toMatchObject({ exitCode: 0, stdout: "node/aks-pool1-vmss000001\n" });
    const schedulable = await kubectl(p.kubeconfigPath, [
      "get",
      "nodes",
      "--field-selector",
      "spec.unschedulable=false",
      "-o",
      "name",
    ]);
    expect(schedulable.stdout).toBe("node/aks-flex-1a2b3c4d\nnode/aks-pool1-vmss000000\n");
    const ids = await kubectl(p.kubeconfigPath, [
      "get",
      "nodes",
      "-l",
      "agentpool=flex",
      "-o",
      "jsonpath={.items[*].spec.providerID}",
    ]);
    expect(ids.stdout).toBe(
      "azure:///subscriptions/8c1b5f3e-2d4a-4c6b-9e7f-1a2b3c4d5e6f/resourceGroups/mc_sef_aks_norwayeast/providers/Microsoft.Compute/virtualMachines/aks-flex_1a2b3c4d",
    );
  });

  it("gets, creates (server-side field validation), applies and deletes Leases", async () => {
    const p = await start({
      leases: [
        {
          namespace: "kube-node-lease",
          name: "aks-pool1-vmss000000",
          holderIdentity: "aks-pool1-vmss000000",
          leaseDurationSeconds: 40,
        },
      ],
    });
    const all = await kubectl(p.kubeconfigPath, ["get", "leases", "-A"]);
    expect(all.stdout).toMatch(
      /^NAMESPACE\s+NAME\s+HOLDER\s+AGE\nkube-node-lease\s+aks-pool1-vmss000000\s+aks-pool1-vmss000000\s+\S+\n$/,
    );
    const file = join(p.inCluster.pathPrefix, "lease.yaml");
    const lease = (holder: string, extra = ""): string =>
      `apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: sef-drain-slot\n  namespace: kube-node-lease\nspec:\n  holderIdentity: ${holder}\n  leaseDurationSeconds: 30\n  renewTime: "2025-06-01T10:00:00.123456Z"\n${extra}`;
    writeFileSync(file, lease("aks-pool1-vmss000000", "  owner: me\n"));
    const strict = await kubectl(p.kubeconfigPath, ["create", "-f", file]);
    expect(strict.exitCode).toBe(1);
    expect(strict.stderr).toContain(
      `Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "spec.owner"`,
    );
    writeFileSync(file, lease("aks-pool1-vmss000000"));
    expect(await kubectl(p.kubeconfigPath, ["create", "-f", file])).toMatchObject({
      exitCode: 0,
      stdout: "lease.coordination.k8s.io/sef-drain-slot created\n",
    });
    expect(p.state.requests().find((r) => r.verb === "create")?.path).toBe(
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?fieldManager=kubectl-create&fieldValidation=Strict",
    );
    writeFileSync(file, lease("aks-pool1-vmss000001"));
    expect(await kubectl(p.kubeconfigPath, ["apply", "-f", file])).toMatchObject({
      exitCode: 0,
      stdout: "lease.coordination.k8s.io/sef-drain-slot configured\n",
    });
    expect(p.state.lease("kube-node-lease", "sef-drain-slot")?.spec).toEqual({
      holderIdentity: "aks-pool1-vmss000001",
      leaseDurationSeconds: 30,
      renewTime: "2025-06-01T10:00:00.123456Z",
    });
    const got = await kubectl(p.kubeconfigPath, [
      "get",
      "lease",
      "-n",
      "kube-node-lease",
      "sef-drain-slot",
      "-o",
      "jsonpath={.spec.holderIdentity} {.spec.renewTime}",
    ]);
    expect(got.stdout).toBe("aks-pool1-vmss000001 2025-06-01T10:00:00.123456Z");
    expect(
      await kubectl(p.kubeconfigPath, ["delete", "lease", "-n", "kube-node-lease", "sef-drain-slot"]),
    ).toMatchObject({ exitCode: 0, stdout: `lease.coordination.k8s.io "sef-drain-slot" deleted\n` });
    expect(p.state.leases().map((l) => l.metadata.name)).toEqual(["aks-pool1-vmss000000"]);
  });

  it("refuses to drain a pod that declares no controller without --force, and evicts it with --force", async () => {
    const p = await start({
      nodes: [{ name: "n1" }],
      pods: [
        { name: "bare", nodeName: "n1", terminationGracePeriodSeconds: 0 },
        { name: "web-1", nodeName: "n1", ownerReferences: rs("web-7d"), terminationGracePeriodSeconds: 0 },
      ],
    });
    const refused = await kubectl(p.kubeconfigPath, ["drain", "n1", "--timeout=20s"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain(
      "cannot delete Pods that declare no controller (use --force to override): default/bare",
    );
    expect(p.state.evictions()).toEqual([]);
    const forced = await kubectl(p.kubeconfigPath, ["drain", "n1", "--force", "--timeout=20s"]);
    expect(forced.exitCode).toBe(0);
    expect(forced.stderr).toContain("Warning: deleting Pods that declare no controller: default/bare");
    expect(forced.stdout).toContain("pod/bare evicted");
    expect(
      p.state
        .evictions()
        .map((e) => `${e.pod}:${e.outcome}`)
        .sort(),
    ).toEqual(["bare:evicted", "web-1:evicted"]);
  });

  it("waits out APF's 429 with Retry-After on its own (client-go), up to 10 retries, then reports TooManyRequests", async () => {
    const p = await start({
      nodes: [{ name: "n1" }],
      pods: [{ name: "web-1", nodeName: "n1", ownerReferences: rs("web-7d"), terminationGracePeriodSeconds: 0 }],
    });
    const throttle = p.state.injectFault({
      ...evictions,
      answer: { kind: "throttle", retryAfterSeconds: 1 },
      count: 3,
    });
    const drain = await kubectl(p.kubeconfigPath, ["drain", "n1", "--timeout=30s"]);
    expect(drain.exitCode).toBe(0);
    expect(drain.stderr).not.toContain("will retry after 5s");
    const web = p.state.evictions().filter((e) => e.pod === "web-1");
    expect(web.map((e) => e.outcome)).toEqual(["throttled", "throttled", "throttled", "evicted"]);
    // Each retry came after the server's Retry-After (1 s), not before.
    for (let i = 1; i < web.length; i++)
      expect((web[i]?.monotonicMs ?? 0) - (web[i - 1]?.monotonicMs ?? 0)).toBeGreaterThanOrEqual(950);
    expect(p.state.faults()).toMatchObject([{ id: throttle, hits: 3 }]);
    p.state.injectFault({
      match: { verbs: ["list"], resources: ["nodes"] },
      answer: { kind: "throttle", retryAfterSeconds: 1 },
      count: 11,
    });
    const listed = await kubectl(p.kubeconfigPath, ["get", "nodes"]);
    expect(listed.exitCode).toBe(1);
    expect(listed.stderr).toContain(
      "Error from server (TooManyRequests): the server has received too many requests and has asked us to try again later (get nodes)",
    );
    expect(
      p.state
        .requests()
        .filter((r) => r.verb === "list" && r.resource === "nodes")
        .map((r) => r.code),
    ).toEqual(Array.from({ length: 11 }, () => 429));
  });

  it("fails the drain at once on a 403 from the eviction, as it does against RBAC", async () => {
    const p = await start({
      nodes: [{ name: "n1" }],
      pods: [{ name: "web-1", nodeName: "n1", ownerReferences: rs("web-7d") }],
    });
    p.state.injectFault({ ...evictions, answer: { kind: "forbidden" } });
    const drain = await kubectl(p.kubeconfigPath, ["drain", "n1", "--timeout=20s"]);
    expect(drain.exitCode).toBe(1);
    expect(drain.stderr).toContain(
      `error when evicting pods/"web-1" -n "default": pods "web-1" is forbidden: User "system:serviceaccount:sef-system:sef" cannot create resource "pods/eviction" in API group "" in the namespace "default"`,
    );
    expect(p.state.evictions().map((e) => [e.outcome, e.code])).toEqual([["refused", 403]]);
  });

  it("waits for a pod held by a finalizer until --timeout, skips one past its grace, and a returning pod lands on the cordoned node", async () => {
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
        {
          name: "old",
          nodeName: "n1",
          ownerReferences: rs("old-1"),
          terminationGracePeriodSeconds: 30,
          terminatingForSeconds: 600,
        },
        {
          name: "agent-x",
          nodeName: "n1",
          labels: { app: "agent" },
          ownerReferences: rs("agent-7c"),
          terminationGracePeriodSeconds: 0,
        },
      ],
      returningPods: [{ matchLabels: { app: "agent" }, delayMs: 100, maxReturns: 1 }],
    });
    const drain = await kubectl(p.kubeconfigPath, ["drain", "n1", "--timeout=6s", "--skip-wait-for-delete-timeout=60"]);
    expect(drain.exitCode).toBe(1);
    expect(drain.stderr).toContain(
      `error when waiting for pod "held" in namespace "default" to terminate: context deadline exceeded`,
    );
    expect(drain.stdout).toContain("pod/agent-x evicted");
    expect(
      p.state
        .evictions()
        .map((e) => e.pod)
        .sort(),
    ).toEqual(["agent-x", "held"]);
    const pods = await kubectl(p.kubeconfigPath, [
      "get",
      "pods",
      "-o",
      "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,TOLERATIONS:.spec.tolerations[*].operator",
      "--no-headers",
    ]);
    expect(pods.stdout).toMatch(/^agent-7c-[a-z0-9]{5}\s+n1\s+Exists\nheld\s+n1\s+<none>\nold\s+n1\s+<none>\n$/);
    // Its containers stopped: terminal, so the printer shows the container's reason, not Terminating (old is).
    expect((await kubectl(p.kubeconfigPath, ["get", "pods", "held", "old", "--no-headers"])).stdout).toMatch(
      /^held\s+0\/1\s+Completed\s+0\s+\S+\nold\s+1\/1\s+Terminating\s/,
    );
  });
});
