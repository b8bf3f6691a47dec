// Three agents on one machine act on three nodes of one cluster: each asks the IMDS simulator as its own VM
// (X-Sef-Sim-Vm), and the node the peer holds for that VM carries the providerID the cloud provider derives from the
// VM's compute.resourceId (resource group in lower case), for VMSS Uniform instances and for VMs by name.
import { afterEach, describe, expect, it } from "vitest";
import { clusterNodes } from "../helpers/kubernetes-node.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/index.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";

let sim: Simulator | undefined;
let peer: KubernetesPeer | undefined;
afterEach(async () => {
  await peer?.close(2_000);
  await sim?.close();
  peer = undefined;
  sim = undefined;
});

async function computeOf(s: Simulator, vmName: string): Promise<{ name: string; resourceId: string }> {
  const response = await fetch(`${s.url}/metadata/instance/compute?api-version=2021-02-01`, {
    headers: { Metadata: "true", "X-Sef-Sim-Vm": vmName },
    signal: AbortSignal.timeout(10_000),
  });
  return (await response.json()) as { name: string; resourceId: string };
}

describe("a cluster of simulator VMs", () => {
  it("VMSS Uniform: each VM's resource id is its node's providerID, and the node is named as AKS names it", async () => {
    const idle = loadScenario("idle");
    sim = await startSimulator({
      scenario: {
        ...idle,
        vm: {
          ...idle.vm,
          name: "aks-pool1-vmss_0",
          vmScaleSetName: "aks-pool1-vmss",
          resourceGroupName: "MC_sef_aks_norwayeast",
        },
      },
    });
    const cluster = clusterNodes(sim, ["aks-pool1-vmss_0", "aks-pool1-vmss_1", "aks-pool1-vmss_2"], {
      labels: { agentpool: "pool1" },
    });
    peer = await startKubernetesPeer({ seed: { nodes: cluster.map((c) => c.node) } });
    expect(peer.state.nodes().map((n) => n.metadata.name)).toEqual([
      "aks-pool1-vmss000000",
      "aks-pool1-vmss000001",
      "aks-pool1-vmss000002",
    ]);
    for (const { vmName, node } of cluster) {
      const compute = await computeOf(sim, vmName);
      expect(compute.name).toBe(vmName);
      expect(compute.resourceId).toMatch(
        /\/resourceGroups\/MC_sef_aks_norwayeast\/providers\/Microsoft\.Compute\/virtualMachineScaleSets\/aks-pool1-vmss\/virtualMachines\/\d$/,
      );
      const providerID = (peer.state.node(node.name)?.spec as { providerID: string }).providerID;
      expect(providerID).toBe(
        `azure://${compute.resourceId.replace("MC_sef_aks_norwayeast", "mc_sef_aks_norwayeast")}`,
      );
    }
  });

  it("VMs by name (VMSS Flex, standalone): the resource id ends in virtualMachines/<VM name>", async () => {
    const idle = loadScenario("idle");
    sim = await startSimulator({ scenario: { ...idle, vm: { ...idle.vm, vmScaleSetName: "" } } });
    const [first] = clusterNodes(sim, ["WestNO_1"]);
    const compute = await computeOf(sim, "WestNO_1");
    expect(first?.node).toEqual({ name: "westno-1", providerID: `azure://${compute.resourceId}` });
    expect(compute.resourceId).toMatch(/\/virtualMachines\/WestNO_1$/);
  });
});
