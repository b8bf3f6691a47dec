// The chart's ValidatingAdmissionPolicies (infra/helm/sef/templates/admission-policy.yaml), rendered by the real helm
// and their CEL evaluated by @bufbuild/cel (support/admission-policy.ts): the agent's own patches (marks.ts, applied as
// JSON merge patches by the testbed's patch code) pass on its own Node; another Node, a foreign taint, label or
// annotation, and anything else on the Node are refused; pods are deleted and Events written only for its own node.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  drainedPatch,
  legacyAnnotationKeys,
  markAnnotationPrefix,
  markPatch,
  undoMarks,
} from "../../src/agent/actions/kubernetes/marks.js";
import { taintKeyPrefix, type EventOnNode } from "../../src/agent/actions/kubernetes/plan.js";
import { nodeEventBody, nodeMergePatch, nodeView, type NodeJson } from "../../src/agent/actions/kubernetes/views.js";
import { applyMergePatch } from "../../src/testbed/peers/kubernetes/patch.js";
import { admit, type PolicyManifest, type Verdict } from "./support/admission-policy.js";
import { templateChart } from "./support/helm.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-helm-admission-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const sefUser = "system:serviceaccount:sef-system:sef-sef";
const nodeClaim = "authentication.kubernetes.io/node-name";
const lbLabel = "node.kubernetes.io/exclude-from-external-load-balancers";
const own = "aks-nodepool1-12345678-vmss000000";
const other = "aks-nodepool1-12345678-vmss000001";

interface Rendered {
  kind: string;
  metadata: { name: string };
  spec: Record<string, unknown>;
}

function renderPolicies(overrides: object = {}): Rendered[] {
  const { status, stderr, manifests } = templateChart(overrides, scratch);
  expect(stderr).toBe("");
  expect(status).toBe(0);
  return (manifests as Rendered[]).filter((m) => m.kind.startsWith("ValidatingAdmissionPolicy"));
}

const rendered = renderPolicies();
function policy(name: string): PolicyManifest {
  const found = rendered.filter((m) => m.kind === "ValidatingAdmissionPolicy" && m.metadata.name === name);
  expect(found).toHaveLength(1);
  return found[0] as unknown as PolicyManifest;
}
const ownNode = policy("sef-sef-own-node");
const ownPods = policy("sef-sef-own-pods");
const ownEvents = policy("sef-sef-own-node-events");

/** A node as AKS serves it: labels, annotations and taints of others (one NoExecute with its timeAdded). */
function aksNode(name: string, extra: { annotations?: Record<string, string> } = {}): NodeJson & object {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: "4711",
      creationTimestamp: "2026-12-01T08:00:00Z",
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        agentpool: "nodepool1",
        "kubernetes.azure.com/scalesetpriority": "spot",
      },
      annotations: {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        ...extra.annotations,
      },
    },
    spec: {
      podCIDR: "10.244.0.0/24",
      podCIDRs: ["10.244.0.0/24"],
      providerID: `azure:///subscriptions/s/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/aks-nodepool1-12345678-vmss/virtualMachines/0`,
      taints: [
        { key: "kubernetes.azure.com/scalesetpriority", value: "spot", effect: "NoSchedule" },
        { key: "example.com/maintenance", value: "db", effect: "NoExecute", timeAdded: "2026-12-07T10:00:00Z" },
      ],
    },
  } as NodeJson & object;
}

const reboot: EventOnNode = {
  EventId: "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
  EventType: "Reboot",
  NotBefore: "Mon, 07 Dec 2026 14:15:00 GMT",
};

/** A PATCH of the node by `user` (sef's service account with its node-name claim by default), as admission sees it. */
function patchNode(
  old: object,
  patch: object,
  as: { claim?: string | null; user?: string } = {},
): { verdict: Verdict; node: NodeJson & object } {
  const node = applyMergePatch(old, patch) as NodeJson & object;
  const claim = as.claim === undefined ? own : as.claim;
  const verdict = admit(ownNode, {
    operation: "UPDATE",
    resource: "nodes",
    username: as.user ?? sefUser,
    ...(claim === null ? {} : { extra: { [nodeClaim]: [claim], "authentication.kubernetes.io/pod-name": ["sef-x"] } }),
    object: node,
    oldObject: old,
  });
  return { verdict, node };
}

const allowed: Verdict = { applies: true, refusals: [] };
const messages = {
  ownNode: "sef may change only its own Node (the node-name claim of its service account token)",
  taints: "sef may add, change and remove only its own taints (sef.azure.com/scheduled-event-*)",
  taintEffect: "sef's taints are NoSchedule or NoExecute",
  labels: `sef may change only the label ${lbLabel}`,
  lbValue: `sef sets the label ${lbLabel} to "true"`,
  annotationsChanged: "sef may add and change only its own annotations (event.sef.azure.com/*)",
  annotationsRemoved:
    "sef may remove only its own annotations (event.sef.azure.com/*, and the previous release's sef.azure.com/event-id, -event-type, -not-before, -cordoned)",
  unchanged: (field: string) => `sef may not change ${field}`,
};
const refused = (...reasons: string[]): Verdict => ({ applies: true, refusals: reasons });

describe("the chart's admission policies", () => {
  it("three policies (own Node, own node's pods, own Node's Events), failurePolicy Fail, each bound with Deny, for sef's service account only", () => {
    expect(rendered.map((m) => `${m.kind} ${m.metadata.name}`).sort()).toEqual([
      "ValidatingAdmissionPolicy sef-sef-own-node",
      "ValidatingAdmissionPolicy sef-sef-own-node-events",
      "ValidatingAdmissionPolicy sef-sef-own-pods",
      "ValidatingAdmissionPolicyBinding sef-sef-own-node",
      "ValidatingAdmissionPolicyBinding sef-sef-own-node-events",
      "ValidatingAdmissionPolicyBinding sef-sef-own-pods",
    ]);
    for (const binding of rendered.filter((m) => m.kind === "ValidatingAdmissionPolicyBinding")) {
      expect(binding.spec).toEqual({ policyName: binding.metadata.name, validationActions: ["Deny"] });
    }
    for (const p of [ownNode, ownPods, ownEvents]) {
      expect(p.spec.failurePolicy).toBe("Fail");
      expect(p.spec.matchConditions).toEqual([
        { name: "sef-service-account", expression: `request.userInfo.username == '${sefUser}'` },
      ]);
    }
    expect(ownNode.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["nodes"] },
    ]);
  });

  it("names the agent's own keys: its taint prefix, its annotation prefix and the previous release's annotations", () => {
    const expressions = ownNode.spec.validations.map((v) => v.expression).join("\n");
    expect(expressions).toContain(`t.key.startsWith('${taintKeyPrefix}')`);
    expect(expressions).toContain(`k.startsWith('${markAnnotationPrefix}')`);
    const legacy = Object.values(legacyAnnotationKeys)
      .map((k) => `'${k}'`)
      .join(", ");
    expect(expressions).toContain(`k in [${legacy}]`);
  });

  it("the policies follow the service account's name, and are left out with admissionPolicy.enabled false", () => {
    const named = renderPolicies({ serviceAccount: { create: false, name: "sef-agent" } });
    const p = named.find((m) => m.metadata.name === "sef-sef-own-node") as unknown as PolicyManifest;
    expect(p.spec.matchConditions?.[0]?.expression).toBe(
      "request.userInfo.username == 'system:serviceaccount:sef-system:sef-agent'",
    );
    expect(renderPolicies({ admissionPolicy: { enabled: false } })).toEqual([]);
  });
});

describe("own Node: what the agent writes passes", () => {
  it("the mark (taint, annotation, cordon), the drained mark with NoExecute, and their undo, patch after patch", () => {
    const start = aksNode(own);
    const now = "2026-12-07T14:00:00.000Z";
    const marked = patchNode(
      start,
      nodeMergePatch(markPatch(nodeView(start), reboot, "drain-then-approve", true, now), "4711"),
    );
    expect(marked.verdict).toEqual(allowed);
    expect(marked.node.spec?.unschedulable).toBe(true);
    expect(marked.node.spec?.taints?.map((t) => t.key)).toContain("sef.azure.com/scheduled-event-reboot");
    // The agent sends the other taints back as it read them (timeAdded with milliseconds): the same to the API server.
    expect(marked.node.spec?.taints?.[1]?.timeAdded).toBe("2026-12-07T10:00:00.000Z");

    const drainedAt = "2026-12-07T14:05:00.000Z";
    const drained = patchNode(
      marked.node,
      nodeMergePatch(drainedPatch(nodeView(marked.node), reboot, "drain-then-approve", true, drainedAt), "4712"),
    );
    expect(drained.verdict).toEqual(allowed);
    expect(drained.node.spec?.taints?.filter((t) => t.key.startsWith("sef.azure.com/")).map((t) => t.effect)).toEqual([
      "NoSchedule",
      "NoExecute",
    ]);

    const decision = undoMarks(nodeView(drained.node), () => true);
    expect(decision.uncordon).toBe(true);
    const undone = patchNode(drained.node, nodeMergePatch(decision.patch!, "4713"));
    expect(undone.verdict).toEqual(allowed);
    expect(undone.node.spec?.taints?.map((t) => t.key)).toEqual([
      "kubernetes.azure.com/scalesetpriority",
      "example.com/maintenance",
    ]);
    expect(undone.node.metadata?.annotations).toEqual(start.metadata?.annotations);
  });

  it("the previous release's annotations taken off with their event", () => {
    const legacy = aksNode(own, {
      annotations: {
        "sef.azure.com/event-id": reboot.EventId,
        "sef.azure.com/event-type": "Reboot",
        "sef.azure.com/not-before": reboot.NotBefore!,
        "sef.azure.com/cordoned": "true",
      },
    });
    const decision = undoMarks(nodeView(legacy), () => true);
    expect(decision.undone).toHaveLength(1);
    const { verdict, node } = patchNode(legacy, nodeMergePatch(decision.patch!, "4711"));
    expect(verdict).toEqual(allowed);
    expect(Object.keys(node.metadata?.annotations ?? {}).filter((k) => k.startsWith("sef.azure.com/"))).toEqual([]);
  });

  it('the exclude-from-external-load-balancers label put on as "true" and taken off', () => {
    const on = patchNode(aksNode(own), { metadata: { labels: { [lbLabel]: "true" } } });
    expect(on.verdict).toEqual(allowed);
    expect(patchNode(on.node, { metadata: { labels: { [lbLabel]: null } } }).verdict).toEqual(allowed);
  });
});

describe("own Node: everything else is refused", () => {
  const start = aksNode(own);
  const markOf = (node: object) =>
    nodeMergePatch(
      markPatch(nodeView(node as NodeJson), reboot, "drain-then-approve", true, "2026-12-07T14:00:00Z"),
      "1",
    );

  it("sef's own mark on another Node, or with no node-name claim (a token not bound to a pod on a node)", () => {
    const otherNode = aksNode(other);
    expect(patchNode(otherNode, markOf(otherNode)).verdict).toEqual(refused(messages.ownNode));
    expect(patchNode(start, markOf(start), { claim: other }).verdict).toEqual(refused(messages.ownNode));
    expect(patchNode(start, markOf(start), { claim: null }).verdict).toEqual(refused(messages.ownNode));
  });

  it("a taint that is not sef's added, someone else's taint removed or its effect changed, sef's key with another effect", () => {
    const [spot, maintenance] = start.spec!.taints!;
    const evil = { key: "example.com/evict-everything", effect: "NoExecute", timeAdded: "2026-12-07T14:00:00Z" };
    expect(patchNode(start, { spec: { taints: [spot, maintenance, evil] } }).verdict).toEqual(refused(messages.taints));
    expect(patchNode(start, { spec: { taints: [maintenance] } }).verdict).toEqual(refused(messages.taints));
    expect(patchNode(start, { spec: { taints: [spot, { ...maintenance, effect: "NoSchedule" }] } }).verdict).toEqual(
      refused(messages.taints),
    );
    const sefPrefer = {
      key: "sef.azure.com/scheduled-event-reboot",
      value: reboot.EventId,
      effect: "PreferNoSchedule",
    };
    expect(patchNode(start, { spec: { taints: [spot, maintenance, sefPrefer] } }).verdict).toEqual(
      refused(messages.taintEffect),
    );
  });

  it("a label other than the load-balancer one added, changed or removed; that label with another value", () => {
    for (const labels of [
      { "kubernetes.azure.com/mode": "system" },
      { agentpool: "system" },
      { "kubernetes.azure.com/scalesetpriority": null },
    ]) {
      expect(patchNode(start, { metadata: { labels } }).verdict, JSON.stringify(labels)).toEqual(
        refused(messages.labels),
      );
    }
    expect(patchNode(start, { metadata: { labels: { [lbLabel]: "yes" } } }).verdict).toEqual(refused(messages.lbValue));
  });

  it("an annotation outside event.sef.azure.com/ added, changed or removed; a previous release's key added", () => {
    expect(patchNode(start, { metadata: { annotations: { "example.com/owner": "me" } } }).verdict).toEqual(
      refused(messages.annotationsChanged),
    );
    expect(patchNode(start, { metadata: { annotations: { "node.alpha.kubernetes.io/ttl": "30" } } }).verdict).toEqual(
      refused(messages.annotationsChanged),
    );
    expect(patchNode(start, { metadata: { annotations: { "node.alpha.kubernetes.io/ttl": null } } }).verdict).toEqual(
      refused(messages.annotationsRemoved),
    );
    expect(patchNode(start, { metadata: { annotations: { "sef.azure.com/cordoned": "true" } } }).verdict).toEqual(
      refused(messages.annotationsChanged),
    );
  });

  it("a finalizer, an owner reference, the provider ID or the pod CIDRs", () => {
    const ownerReferences = [{ apiVersion: "v1", kind: "Namespace", name: "x", uid: "u" }];
    for (const [field, patch] of [
      ["metadata.finalizers", { metadata: { finalizers: ["example.com/never-delete"] } }],
      ["metadata.ownerReferences", { metadata: { ownerReferences } }],
      ["spec.providerID", { spec: { providerID: "azure:///elsewhere" } }],
      ["spec.podCIDR", { spec: { podCIDR: null } }],
      ["spec.podCIDRs", { spec: { podCIDRs: ["10.244.9.0/24"] } }],
    ] as const) {
      expect(patchNode(start, patch).verdict, field).toEqual(refused(messages.unchanged(field)));
    }
  });

  it("every validation refuses something: none is always true", () => {
    const seen = new Set(
      [
        patchNode(start, { metadata: { labels: { [lbLabel]: "no" } } }),
        patchNode(start, { spec: { taints: [] } }),
        patchNode(start, { spec: { configSource: { configMap: { name: "x" } } } }),
        patchNode(start, { spec: { externalID: "x" } }),
      ].flatMap((r) => (r.verdict.applies ? r.verdict.refusals : [])),
    );
    const fromOtherTests = [
      messages.ownNode,
      messages.taintEffect,
      messages.labels,
      messages.annotationsChanged,
      messages.annotationsRemoved,
      ...["metadata.finalizers", "metadata.ownerReferences", "spec.podCIDR", "spec.podCIDRs", "spec.providerID"].map(
        messages.unchanged,
      ),
    ];
    expect(new Set([...seen, ...fromOtherTests])).toEqual(new Set(ownNode.spec.validations.map((v) => v.message)));
  });

  it("does not apply to other users (the node's kubelet, another service account)", () => {
    const change = { spec: { taints: [] }, metadata: { labels: { agentpool: "x" } } };
    expect(patchNode(start, change, { user: `system:node:${own}` }).verdict).toEqual({ applies: false });
    expect(patchNode(start, change, { user: "system:serviceaccount:sef-system:default" }).verdict).toEqual({
      applies: false,
    });
  });
});

describe("own node's pods and own Node's Events", () => {
  const pod = (nodeName: string) => ({
    metadata: { name: "web-1", namespace: "shop", uid: "pod-uid" },
    spec: { nodeName, containers: [{ name: "web", image: "nginx" }] },
  });
  const deletePod = (nodeName: string, claim: string | null = own): Verdict =>
    admit(ownPods, {
      operation: "DELETE",
      resource: "pods",
      username: sefUser,
      ...(claim === null ? {} : { extra: { [nodeClaim]: [claim] } }),
      object: null,
      oldObject: pod(nodeName),
    });
  const podMessage = "sef may delete only pods on its own node (the node-name claim of its service account token)";

  it("a pod on its own node may be deleted; a pod on another node, or by a token without the claim, may not", () => {
    expect(deletePod(own)).toEqual(allowed);
    expect(deletePod(other)).toEqual(refused(podMessage));
    expect(deletePod(own, null)).toEqual(refused(podMessage));
  });

  it("the agent's Node Event about its own Node passes; about another Node or about a pod it is refused", () => {
    const createEvent = (body: object): Verdict =>
      admit(ownEvents, {
        operation: "CREATE",
        resource: "events",
        username: sefUser,
        extra: { [nodeClaim]: [own] },
        object: body,
        oldObject: null,
      });
    const at = new Date("2026-12-07T14:00:00Z");
    const message = "sef may write Events only about its own Node";
    expect(createEvent(nodeEventBody({ name: own, uid: "u" }, "ScheduledEventTainted", "m", "Normal", at))).toEqual(
      allowed,
    );
    expect(createEvent(nodeEventBody({ name: other, uid: "u" }, "ScheduledEventTainted", "m", "Normal", at))).toEqual(
      refused(message),
    );
    const aboutPod = nodeEventBody({ name: own, uid: "u" }, "Evicted", "m", "Warning", at) as {
      involvedObject: object;
    };
    expect(createEvent({ ...aboutPod, involvedObject: { kind: "Pod", name: own, namespace: "shop" } })).toEqual(
      refused(message),
    );
  });
});
