// Events naming several VMs (pure, plain values): VM names matched to Nodes through the providerID (VMSS Uniform,
// Flex and standalone, case-insensitive, as AKS and IMDS spell them), the node that approves, and the multi-node gate:
// one approver, never while a named node is still draining, VMs outside the cluster not waited for.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  incompleteReason,
  namedNodes,
  settleStep,
  vmNameOfProviderID,
  waitStep,
  waitingText,
} from "../../src/agent/actions/kubernetes/cluster.js";
import { azureNodeSeed } from "../../src/testbed/peers/kubernetes/index.js";
import { propertyParams } from "../helpers/seed.js";

const rg =
  "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/MC_sef_aks_norwayeast/providers/Microsoft.Compute";
const uniform = (instance: number) =>
  azureNodeSeed(`${rg}/virtualMachineScaleSets/aks-nodepool1-12345678-vmss/virtualMachines/${instance}`);
const byName = (name: string) => azureNodeSeed(`${rg}/virtualMachines/${name}`);
const asNode = (seed: { name: string; providerID?: string }) => ({
  name: seed.name,
  providerID: seed.providerID ?? "",
});

describe("VM names and nodes", () => {
  it("a VMSS Uniform instance is <scaleSet>_<instanceId>; a Flex or standalone VM its own name; other providers none", () => {
    expect(vmNameOfProviderID(uniform(3).providerID!)).toBe("aks-nodepool1-12345678-vmss_3");
    expect(vmNameOfProviderID(byName("aks-flex_1a2b3c4d").providerID!)).toBe("aks-flex_1a2b3c4d");
    expect(vmNameOfProviderID("aws:///eu-west-1a/i-0abc")).toBeUndefined();
    expect(vmNameOfProviderID("")).toBeUndefined();
  });

  it("only a VM's own id names it: instance ids of several digits, the scheme in any case; a sub-resource or another cloud's id names none", () => {
    expect(vmNameOfProviderID(uniform(12).providerID!)).toBe("aks-nodepool1-12345678-vmss_12");
    expect(vmNameOfProviderID(uniform(3).providerID!.replace(/^azure:/, "AZURE:"))).toBe(
      "aks-nodepool1-12345678-vmss_3",
    );
    expect(vmNameOfProviderID(`${uniform(3).providerID!}/networkInterfaces/nic-0`)).toBeUndefined();
    expect(vmNameOfProviderID(`${byName("vm-a").providerID!}/extensions/agent`)).toBeUndefined();
    expect(vmNameOfProviderID(byName("vm-a").providerID!.replace(/^azure:/, "gce:"))).toBeUndefined();
  });

  it("two Nodes with the providerID of one VM (a node registered again under a new name): the first listed is the VM's", () => {
    const again = { name: "aks-nodepool1-12345678-vmss000003-new", providerID: uniform(3).providerID! };
    expect(namedNodes(["aks-nodepool1-12345678-vmss_3"], [asNode(uniform(3)), again]).nodes).toEqual([
      { vmName: "aks-nodepool1-12345678-vmss_3", node: "aks-nodepool1-12345678-vmss000003" },
    ]);
    expect(namedNodes(["aks-nodepool1-12345678-vmss_3"], [again, asNode(uniform(3))]).nodes).toEqual([
      { vmName: "aks-nodepool1-12345678-vmss_3", node: again.name },
    ]);
  });

  it("matches Resources to nodes case-insensitively (the cloud provider lower-cases the resource group), in Resources order", () => {
    const nodes = [uniform(0), uniform(1), uniform(2), byName("WestNO_7")].map(asNode);
    const named = namedNodes(
      [
        "AKS-NODEPOOL1-12345678-VMSS_2",
        "outside-vm",
        "aks-nodepool1-12345678-vmss_0",
        "westno_7",
        "aks-nodepool1-12345678-vmss_0",
      ],
      nodes,
    );
    expect(named).toEqual({
      nodes: [
        { vmName: "AKS-NODEPOOL1-12345678-VMSS_2", node: "aks-nodepool1-12345678-vmss000002" },
        { vmName: "aks-nodepool1-12345678-vmss_0", node: "aks-nodepool1-12345678-vmss000000" },
        { vmName: "westno_7", node: "westno-7" },
      ],
      outside: ["outside-vm"],
    });
  });
});

describe("the approval of an event naming several nodes", () => {
  const named = { nodes: ["a", "b", "c"].map((n) => ({ vmName: `vm-${n}`, node: n })), outside: ["vm-x"] };

  it("only the first named node approves, after all drained; the others decline, naming it", () => {
    expect(settleStep({ policy: "drain-then-approve", drained: true, thisNode: "a", named })).toEqual({
      waitFor: ["b", "c"],
    });
    for (const thisNode of ["b", "c"]) {
      const step = settleStep({ policy: "drain-then-approve", drained: true, thisNode, named });
      expect(step).toMatchObject({ release: "decline", reason: expect.stringContaining("a approves it") });
    }
  });

  it("an event naming one node of this cluster (the others outside) is approved after its drain, as for a single node", () => {
    const one = { nodes: [{ vmName: "vm-b", node: "b" }], outside: ["vm-x", "vm-y"] };
    expect(settleStep({ policy: "drain-then-approve", drained: true, thisNode: "b", named: one })).toMatchObject({
      release: "approve",
      reason: expect.stringContaining("vm-x, vm-y"),
    });
    expect(settleStep({ policy: "drain", drained: true, thisNode: "b", named: one })).toEqual({
      release: "done",
      reason: "",
    });
    expect(settleStep({ policy: "drain-then-approve", drained: true, thisNode: "b", named: undefined })).toMatchObject({
      release: "approve",
    });
    // An incomplete drain holds the approval until NotBefore on a single node as in a wave (issue 44).
    expect(incompleteReason).toBe(
      "this node's drain is incomplete (pods left, named in its DrainIncomplete record): the event is not approved before NotBefore",
    );
    expect(settleStep({ policy: "drain-then-approve", drained: false, thisNode: "b", named: undefined })).toEqual({
      release: "decline",
      reason: incompleteReason,
    });
    expect(settleStep({ policy: "drain", drained: false, thisNode: "b", named: one })).toEqual({
      release: "decline",
      reason: incompleteReason,
    });
  });

  it("an incomplete drain on the approving node declines; policies that do not drain leave it to the rules on that node only", () => {
    expect(settleStep({ policy: "drain-then-approve", drained: false, thisNode: "a", named })).toMatchObject({
      release: "decline",
    });
    expect(settleStep({ policy: "cordon", drained: false, thisNode: "a", named })).toEqual({
      release: "done",
      reason: "",
    });
    expect(settleStep({ policy: "cordon", drained: false, thisNode: "b", named })).toMatchObject({
      release: "decline",
    });
  });

  it("a node that is not among the named nodes declines, saying so (it does not name an approver)", () => {
    expect(settleStep({ policy: "drain-then-approve", drained: true, thisNode: "z", named })).toEqual({
      release: "decline",
      reason: "this node (z) is not among the nodes the event names; it leaves the approval to them",
    });
  });

  it("each answer's reason, as the Approval record's Detail carries it", () => {
    const one = { nodes: [{ vmName: "vm-b", node: "b" }], outside: [] };
    const drainedReason = "the node is drained (kubernetes policy drain-then-approve)";
    expect(settleStep({ policy: "drain-then-approve", drained: true, thisNode: "b", named: undefined })).toEqual({
      release: "approve",
      reason: drainedReason,
    });
    expect(settleStep({ policy: "drain-then-approve", drained: true, thisNode: "b", named: one })).toEqual({
      release: "approve",
      reason: drainedReason,
    });
    expect(
      settleStep({ policy: "drain-then-approve", drained: true, thisNode: "b", named: { ...one, outside: ["vm-x"] } }),
    ).toEqual({
      release: "approve",
      reason: `${drainedReason}; outside this cluster, not waited for: vm-x`,
    });
    expect(settleStep({ policy: "drain-then-approve", drained: false, thisNode: "a", named })).toEqual({
      release: "decline",
      reason: incompleteReason,
    });
    expect(settleStep({ policy: "drain-then-approve", drained: true, thisNode: "c", named })).toEqual({
      release: "decline",
      reason: "the event names 3 nodes of this cluster (a, b, c): a approves it once all have drained",
    });
  });

  it("the wait: approve (or the rules) once none is left draining, decline at the deadline, else name who it waits for", () => {
    const all = ["a", "b", "c"];
    expect(waitStep("drain-then-approve", all, ["b", "c"], 1_000, 5_000)).toEqual({ waitingFor: ["b", "c"] });
    expect(waitStep("drain-then-approve", all, [], 1_000, 5_000)).toEqual({
      release: "approve",
      reason: "every node the event names has drained (3 of 3: a, b, c)",
    });
    expect(waitStep("drain", all, [], 1_000, 5_000)).toMatchObject({ release: "done" });
    expect(waitStep("drain-then-approve", all, ["c"], 5_000, 5_000)).toMatchObject({
      release: "decline",
      reason: expect.stringContaining("waiting for 1 of 3 nodes: c"),
    });
    expect(waitingText(all, ["b", "c"])).toBe("waiting for 2 of 3 nodes: b, c");
  });

  it("whatever the nodes, their order and who has drained: exactly one node may approve, and never while a named node is undrained", () => {
    const names = ["n0", "n1", "n2", "n3", "n4"];
    fc.assert(
      fc.property(
        fc.shuffledSubarray(names, { minLength: 1 }),
        fc.subarray(names),
        fc.boolean(),
        (order, drained, pastDeadline) => {
          const all = { nodes: order.map((node) => ({ vmName: `vm-${node}`, node })), outside: [] };
          let approvers = 0;
          for (const thisNode of order) {
            const step = settleStep({
              policy: "drain-then-approve",
              drained: drained.includes(thisNode),
              thisNode,
              named: all,
            });
            if ("release" in step && step.release !== "approve") continue;
            approvers += 1;
            expect(thisNode).toBe(order[0]);
            const waitingFor = "waitFor" in step ? step.waitFor : [];
            const end = waitStep(
              "drain-then-approve",
              order,
              waitingFor.filter((n) => !drained.includes(n)),
              pastDeadline ? 2 : 1,
              2,
            );
            const allDrained = order.every((n) => drained.includes(n));
            if ("release" in end && end.release === "approve") expect(allDrained).toBe(true);
          }
          expect(approvers).toBeLessThanOrEqual(1);
          if (drained.includes(order[0]!)) expect(approvers).toBe(1);
        },
      ),
      propertyParams(3504, 300),
    );
  });
});
