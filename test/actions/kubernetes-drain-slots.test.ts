// The cluster-wide cap on concurrent drains (drain-slots.ts) against the testbed's Kubernetes API peer (real HTTPS,
// its Lease rules): with a limit of 1, a second node waits while the first holds the slot, takes it once it is freed
// or once its holder stopped renewing, and a node renews its own; plus the client's pod deletion with a uid
// precondition and the pod list with a label selector (the deadline's DELETE, `podSelector`).
import { describe, expect, it, type TestContext } from "vitest";
import { createKubeApi, type KubeApi } from "../../src/agent/actions/kubernetes/client.js";
import { DrainSlots, slotOpenTo } from "../../src/agent/actions/kubernetes/drain-slots.js";
import { microTime } from "../../src/agent/actions/kubernetes/views.js";
import { startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { FakeClock } from "../helpers/fake-clock.js";

const namespace = "default";

async function setUp(test: TestContext): Promise<{ peer: KubernetesPeer; kube: KubeApi }> {
  const peer = await startKubernetesPeer({
    seed: {
      nodes: [{ name: "n0", providerID: "azure:///vm/0" }],
      pods: [
        {
          namespace: "apps",
          name: "web-0",
          nodeName: "n0",
          labels: { app: "web" },
          ownerReferences: [{ kind: "ReplicaSet", name: "w" }],
        },
        {
          namespace: "apps",
          name: "db-0",
          nodeName: "n0",
          labels: { app: "db" },
          ownerReferences: [{ kind: "StatefulSet", name: "d" }],
        },
      ],
    },
  });
  const kube = await createKubeApi({ kubeconfig: peer.kubeconfigPath, requestTimeoutMs: 10_000 });
  test.onTestFinished(async () => {
    kube.close();
    await peer.close();
  });
  return { peer, kube };
}

const slotsFor = (kube: KubeApi, nodeName: string, clock: FakeClock) =>
  new DrainSlots({
    api: () => kube,
    nodeName,
    namespace,
    limit: 1,
    leaseDurationSeconds: 30,
    clock,
    logger: silentLogger(),
  });

describe.concurrent("drain slots and pod calls against the Kubernetes API peer", () => {
  it("limit 1: the second node waits while the first holds the slot, and takes it once freed", async (test) => {
    const { peer, kube } = await setUp(test);
    const clock = new FakeClock(Date.now());
    const a = slotsFor(kube, "node-a", clock);
    const b = slotsFor(kube, "node-b", clock);
    expect(await a.acquire()).toBe(true);
    expect(a.holding).toBe("sef-drain-0");
    expect(peer.state.lease(namespace, "sef-drain-0")?.spec).toMatchObject({
      holderIdentity: "node-a",
      leaseDurationSeconds: 30,
    });
    expect(await b.acquire()).toBe(false);
    expect(await a.acquire()).toBe(true); // its own: renewed
    await a.release();
    expect(peer.state.lease(namespace, "sef-drain-0")?.spec).not.toHaveProperty("holderIdentity");
    expect(await b.acquire()).toBe(true);
    expect(peer.state.lease(namespace, "sef-drain-0")?.spec).toMatchObject({ holderIdentity: "node-b" });
    await a.release(); // holds nothing: leaves node-b's slot alone
    expect(peer.state.lease(namespace, "sef-drain-0")?.spec).toMatchObject({ holderIdentity: "node-b" });
  });

  it("a holder that stopped renewing frees its slot after leaseDurationSeconds; a holder that renews keeps it", async (test) => {
    const { peer, kube } = await setUp(test);
    const clock = new FakeClock(Date.now());
    const a = slotsFor(kube, "node-a", clock);
    const b = slotsFor(kube, "node-b", clock);
    expect(await a.acquire()).toBe(true);
    const renewedAt = peer.state.lease(namespace, "sef-drain-0")!.spec as { renewTime: string };
    await clock.advance(11_000);
    await a.renewIfDue(); // a third of 30 s has passed: renewed
    expect((peer.state.lease(namespace, "sef-drain-0")!.spec as { renewTime: string }).renewTime).not.toBe(
      renewedAt.renewTime,
    );
    await clock.advance(29_000);
    expect(await b.acquire()).toBe(false); // renewed 29 s ago: still held
    await clock.advance(2_000);
    expect(await b.acquire()).toBe(true); // 31 s without a renewal: free
  });

  it("whether a slot is open: free, its own, or its holder's duration passed", () => {
    const lease = {
      name: "sef-drain-0",
      resourceVersion: "1",
      holderIdentity: "a",
      leaseDurationSeconds: 10,
      renewTimeMs: 1_000,
    };
    expect(slotOpenTo(lease, "a", 50_000)).toBe(true);
    expect(slotOpenTo({ ...lease, holderIdentity: "" }, "b", 0)).toBe(true);
    expect(slotOpenTo(lease, "b", 11_000)).toBe(false);
    expect(slotOpenTo(lease, "b", 11_001)).toBe(true);
    expect(microTime(Date.parse("2024-01-01T00:00:01.234Z"))).toBe("2024-01-01T00:00:01.234000Z");
  });

  it("pods listed by label selector; a DELETE with the pod's uid deletes it with the grace given, another uid is a 409 (false)", async (test) => {
    const { peer, kube } = await setUp(test);
    expect((await kube.listPods("n0", "app=web")).map((p) => p.name)).toEqual(["web-0"]);
    expect((await kube.listPods("n0")).length).toBe(2);
    const [db] = await kube.listPods("n0", "app=db");
    expect(await kube.deletePod({ ...db!, uid: "another-uid" }, 3)).toBe(false);
    expect(peer.state.pod("apps", "db-0")?.metadata.deletionTimestamp).toBeUndefined();
    expect(await kube.deletePod(db!, 3)).toBe(true);
    expect(peer.state.pod("apps", "db-0")?.metadata.deletionGracePeriodSeconds).toBe(3);
    expect(await kube.deletePod({ namespace: "apps", name: "nobody", uid: "" }, 3)).toBe(false);
  });
});
