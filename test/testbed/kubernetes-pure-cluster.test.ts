// The Kubernetes peer's pure parts for cluster-scale tests, with plain values and the fake clock: request info, fault
// rules and their answers, Lease decoding and validation, the node-write log and counters, Azure provider ids and node
// names, the OpenAPI v3 documents kubectl reads, returning pods, finalizer rules and boolean field selectors.
import { describe, expect, it } from "vitest";
import { FakeClock } from "../helpers/fake-clock.js";
import { aksNodeName, azureNodeSeed, azureProviderID } from "../../src/testbed/peers/kubernetes/azure-nodes.js";
import { apfHeaders, faultResponse, throttledBody } from "../../src/testbed/peers/kubernetes/fault-answers.js";
import {
  faultMatches,
  FaultRules,
  validateFaultRule,
  type FaultRule,
} from "../../src/testbed/peers/kubernetes/faults.js";
import {
  decodeLease,
  leaseCauses,
  normalizeMicroTime,
  unknownLeaseFields,
  warningHeaders,
} from "../../src/testbed/peers/kubernetes/lease-validation.js";
import type { KubeObject } from "../../src/testbed/peers/kubernetes/objects.js";
import { openApiAnswer, openApiDocument, openApiIndex } from "../../src/testbed/peers/kubernetes/openapi.js";
import { nodeWriteChanges, PeerLog } from "../../src/testbed/peers/kubernetes/peer-log.js";
import { stoppedStatus } from "../../src/testbed/peers/kubernetes/pod-lifecycle.js";
import { podStatusReason } from "../../src/testbed/peers/kubernetes/tables.js";
import { requestInfoOf, type RequestInfo } from "../../src/testbed/peers/kubernetes/request-info.js";
import { isDeparture, replacementSeed } from "../../src/testbed/peers/kubernetes/returning-pods.js";
import { matchesFields, parseFieldSelector } from "../../src/testbed/peers/kubernetes/selectors.js";
import type { StoreChange } from "../../src/testbed/peers/kubernetes/store.js";
import { shouldDeleteDuringUpdate } from "../../src/testbed/peers/kubernetes/updates.js";
import { statusOf } from "./peer-kit.js";

const info = (method: string, path: string, query = ""): RequestInfo =>
  requestInfoOf(method, path, new URLSearchParams(query));

const meta = (name: string, extra: Partial<KubeObject["metadata"]> = {}): KubeObject["metadata"] => ({
  name,
  uid: `uid-${name}`,
  resourceVersion: "1",
  creationTimestamp: "2025-01-01T00:00:00Z",
  ...extra,
});
const node = (spec: object, annotations?: Record<string, string>): KubeObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: meta("n1", annotations ? { annotations } : {}),
  spec,
});

describe("request info", () => {
  it("derives the verb, resource, namespace and name as the API server's RequestInfoFactory does", () => {
    expect(info("GET", "/api/v1/nodes")).toMatchObject({
      isResourceRequest: true,
      verb: "list",
      resource: "nodes",
      apiGroup: "",
    });
    expect(info("GET", "/api/v1/nodes", "watch=true")).toMatchObject({ verb: "watch", resource: "nodes" });
    expect(info("GET", "/api/v1/nodes/n1")).toMatchObject({ verb: "get", name: "n1" });
    expect(info("PATCH", "/api/v1/nodes/n1")).toMatchObject({ verb: "patch" });
    expect(info("POST", "/api/v1/namespaces/apps/pods/web-1/eviction")).toEqual({
      isResourceRequest: true,
      verb: "create",
      apiGroup: "",
      resource: "pods/eviction",
      namespace: "apps",
      name: "web-1",
      path: "/api/v1/namespaces/apps/pods/web-1/eviction",
    });
    expect(info("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/slot")).toMatchObject({
      verb: "update",
      apiGroup: "coordination.k8s.io",
      resource: "leases",
      namespace: "kube-node-lease",
      name: "slot",
    });
    expect(info("DELETE", "/apis/coordination.k8s.io/v1/namespaces/x/leases")).toMatchObject({
      verb: "deletecollection",
    });
    expect(info("GET", "/api/v1/namespaces/apps")).toMatchObject({ verb: "get", resource: "namespaces", name: "apps" });
    expect(info("GET", "/apis/policy/v1")).toEqual({ isResourceRequest: false, verb: "get", path: "/apis/policy/v1" });
    expect(info("GET", "/openapi/v3")).toMatchObject({ isResourceRequest: false });
  });
});

describe("fault rules", () => {
  const eviction = info("POST", "/api/v1/namespaces/apps/pods/web-1/eviction");
  const nodeList = info("GET", "/api/v1/nodes");

  it("match on verbs, resources, namespaces and names; never on non-resource requests", () => {
    expect(faultMatches(undefined, eviction)).toBe(true);
    expect(faultMatches({ verbs: ["create"], resources: ["pods/eviction"] }, eviction)).toBe(true);
    expect(faultMatches({ resources: ["pods"] }, eviction)).toBe(false);
    expect(faultMatches({ namespaces: ["apps"], names: ["web-1"] }, eviction)).toBe(true);
    expect(faultMatches({ names: ["web-2"] }, eviction)).toBe(false);
    expect(faultMatches({ namespaces: ["apps"] }, nodeList)).toBe(false);
    expect(faultMatches(undefined, info("GET", "/api/v1"))).toBe(false);
  });

  it("answer `count` requests after `skip`, or for `forMs` on the monotonic clock, first installed first", () => {
    const clock = new FakeClock();
    const rules = new FaultRules(() => clock.monotonicMs());
    const counted = rules.add({
      match: { resources: ["pods/eviction"] },
      answer: { kind: "throttle" },
      skip: 1,
      count: 2,
    });
    const timed = rules.add({
      match: { resources: ["nodes", "pods/eviction"] },
      answer: { kind: "internal-error" },
      forMs: 1_000,
    });
    expect(rules.take(eviction)?.id).toBe(timed); // skipped by the first rule, answered by the second
    expect(rules.take(eviction)?.id).toBe(counted);
    expect(rules.take(eviction)?.id).toBe(counted);
    expect(rules.take(eviction)?.id).toBe(timed);
    clock.jump(999);
    expect(rules.take(nodeList)?.id).toBe(timed);
    clock.jump(1);
    expect(rules.take(nodeList)).toBeUndefined();
    expect(rules.list().map((r) => [r.id, r.seen, r.hits, r.active])).toEqual([
      [counted, 3, 2, false],
      [timed, 3, 3, false],
    ]);
    expect(rules.remove(counted)).toBe(true);
    expect(rules.remove(counted)).toBe(false);
  });

  it("refuse rules the peer could not apply, naming the field", () => {
    expect(() => validateFaultRule({ answer: { kind: "nope" } } as unknown as FaultRule)).toThrow(
      /answer.kind must be one of/,
    );
    expect(() => validateFaultRule({ answer: { kind: "throttle", retryAfterSeconds: 0 } })).toThrow(
      /retryAfterSeconds/,
    );
    expect(() => validateFaultRule({ answer: { kind: "status", code: 200, reason: "OK", message: "" } })).toThrow(
      /answer.code/,
    );
    expect(() => validateFaultRule({ answer: { kind: "forbidden" }, count: -1 })).toThrow(/count must be/);
  });

  it("throttle as API Priority and Fairness does: 429, plain text (not a Status), Retry-After", () => {
    expect(faultResponse({ kind: "throttle", retryAfterSeconds: 3 }, eviction)).toEqual({
      code: 429,
      body: throttledBody,
      headers: { "Retry-After": "3", "X-Content-Type-Options": "nosniff" },
    });
    expect(throttledBody).toBe("Too many requests, please try again later.\n");
    expect(Object.keys(apfHeaders)).toEqual(["X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"]);
  });

  it("forbid as RBAC does, and fail as an internal error does", () => {
    expect(faultResponse({ kind: "forbidden" }, eviction).body).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `pods "web-1" is forbidden: User "system:serviceaccount:sef-system:sef" cannot create resource "pods/eviction" in API group "" in the namespace "apps"`,
      reason: "Forbidden",
      details: { name: "web-1", kind: "pods" },
      code: 403,
    });
    const lease = faultResponse({ kind: "forbidden", user: "u" }, info("GET", "/apis/coordination.k8s.io/v1/leases"));
    expect(lease.body).toMatchObject({
      message: `leases.coordination.k8s.io is forbidden: User "u" cannot list resource "leases" in API group "coordination.k8s.io" at the cluster scope`,
      details: { group: "coordination.k8s.io", kind: "leases" },
    });
    expect(faultResponse({ kind: "internal-error" }, eviction)).toMatchObject({
      code: 500,
      body: {
        reason: "InternalError",
        message: "Internal error occurred: etcdserver: leader changed",
        details: { causes: [{ message: "etcdserver: leader changed" }] },
      },
    });
    expect(
      faultResponse(
        { kind: "status", code: 503, reason: "ServiceUnavailable", message: "later", retryAfterSeconds: 2 },
        eviction,
      ).body,
    ).toMatchObject({ code: 503, details: { retryAfterSeconds: 2 } });
  });
});

describe("Lease decoding and validation", () => {
  const body = {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "slot", namespace: "x" },
    spec: { holderIdentity: "n1", leaseDurationSeconds: 15, renewTime: "2025-06-01T12:00:00.123456+02:00" },
  };

  it("stores MicroTimes in UTC with six digits and refuses any other precision, as Go's time.Parse does", () => {
    expect(normalizeMicroTime("2025-06-01T12:00:00.123456+02:00")).toBe("2025-06-01T10:00:00.123456Z");
    expect(statusOf(() => normalizeMicroTime("2025-06-01T10:00:00Z"))).toMatchObject({
      code: 400,
      reason: "BadRequest",
      message: `Lease in version "v1" cannot be handled as a Lease: parsing time "2025-06-01T10:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"`,
    });
    expect(statusOf(() => normalizeMicroTime("2025-06-01T10:00:00.123Z")).code).toBe(400);
    expect(statusOf(() => normalizeMicroTime("yesterday")).code).toBe(400);
  });

  it("names unknown fields; Strict refuses them (400), Warn warns, Ignore drops them", () => {
    const extra = {
      ...body,
      status: {},
      metadata: { ...body.metadata, color: "red" },
      spec: { ...body.spec, owner: "me" },
    };
    expect(unknownLeaseFields(extra)).toEqual(["status", "metadata.color", "spec.owner"]);
    expect(statusOf(() => decodeLease(extra, "Strict")).message).toBe(
      `Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "status", unknown field "metadata.color", unknown field "spec.owner"`,
    );
    const warned = decodeLease(extra, null);
    expect(warned.warnings).toEqual([
      `unknown field "status"`,
      `unknown field "metadata.color"`,
      `unknown field "spec.owner"`,
    ]);
    expect(warned.lease.spec).toEqual({
      holderIdentity: "n1",
      leaseDurationSeconds: 15,
      renewTime: "2025-06-01T10:00:00.123456Z",
    });
    expect(warningHeaders(warned.warnings)).toEqual({
      Warning: [
        `299 - "unknown field \\"status\\""`,
        `299 - "unknown field \\"metadata.color\\""`,
        `299 - "unknown field \\"spec.owner\\""`,
      ],
    });
    expect(decodeLease(extra, "Ignore").warnings).toEqual([]);
  });

  it("refuses wrong types and another group's body (400), and validates as ValidateLease does (422 causes)", () => {
    expect(statusOf(() => decodeLease({ spec: { leaseDurationSeconds: "15" } }, null)).message).toBe(
      `Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32`,
    );
    expect(statusOf(() => decodeLease({ apiVersion: "v1", kind: "Lease" }, null)).code).toBe(400);
    const lease = (name: string, spec: object): KubeObject => ({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: meta(name),
      spec,
    });
    expect(leaseCauses(lease("slot", { leaseDurationSeconds: 1, leaseTransitions: 0 }))).toEqual([]);
    expect(
      leaseCauses(lease("Slot_1", { leaseDurationSeconds: 0, leaseTransitions: -1 })).map(
        (c) => `${c.field}: ${c.message}`,
      ),
    ).toEqual([
      `metadata.name: Invalid value: "Slot_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
      "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
    ]);
    expect(leaseCauses(lease("", {}))).toEqual([
      {
        field: "metadata.name",
        reason: "FieldValueRequired",
        message: "Required value: name or generateName is required",
      },
    ]);
  });
});

describe("the node-write log and counters", () => {
  it("says what a write changed of cordon, taints and annotations", () => {
    const before = node({ taints: [{ key: "aks", effect: "NoSchedule" }] }, { keep: "1", drop: "x" });
    const after = node(
      {
        unschedulable: true,
        taints: [
          { key: "sef.azure.com/event", value: "E1", effect: "NoSchedule" },
          { key: "aks", effect: "NoSchedule" },
        ],
      },
      { keep: "1", "sef.azure.com/cordoned": "E1" },
    );
    expect(nodeWriteChanges(before, after)).toEqual({
      cordoned: true,
      taintsAdded: ["sef.azure.com/event=E1:NoSchedule"],
      taintsRemoved: [],
      annotationsSet: ["sef.azure.com/cordoned"],
      annotationsRemoved: ["drop"],
    });
    expect(nodeWriteChanges(after, before)).toMatchObject({
      cordoned: false,
      taintsRemoved: ["sef.azure.com/event=E1:NoSchedule"],
    });
    expect(nodeWriteChanges(before, before)).toEqual({
      taintsAdded: [],
      taintsRemoved: [],
      annotationsSet: [],
      annotationsRemoved: [],
    });
  });

  it("counts evictions per pod and per node, and keeps the first cordon, taint and annotation per node", () => {
    const clock = new FakeClock();
    const log = new PeerLog({ wallNowMs: () => clock.now(), monotonicNowMs: () => clock.monotonicMs() });
    log.eviction({ namespace: "apps", pod: "web-1", nodeName: "n1", outcome: "throttled", code: 429 });
    log.eviction({ namespace: "apps", pod: "web-1", nodeName: "n1", outcome: "evicted", code: 201 });
    log.eviction({ namespace: "apps", pod: "gone", outcome: "not-found", code: 404 });
    const first = clock.monotonicMs();
    log.nodeWrite(
      node({}),
      node({ unschedulable: true, taints: [{ key: "t", effect: "NoSchedule" }] }),
      "PATCH",
      "application/strategic-merge-patch+json",
    );
    clock.jump(500);
    log.nodeWrite(node({ unschedulable: true }), node({}), "PATCH", undefined);
    log.nodeWrite(node({}), node({ unschedulable: true }), "PATCH", undefined);
    log.request({ method: "GET", path: "/api/v1/nodes", code: 200, verb: "list", resource: "nodes" });
    log.request({ method: "POST", path: "/x", code: 429, verb: "create", fault: "fault-1" });
    const stats = log.stats();
    expect(stats.evictions.byPod["apps/web-1"]).toEqual({
      requests: 2,
      evicted: 1,
      blocked: 0,
      throttled: 1,
      refused: 0,
      notFound: 0,
    });
    expect(stats.evictions.byPod["apps/gone"]?.notFound).toBe(1);
    expect(Object.keys(stats.evictions.byNode)).toEqual(["n1"]);
    expect(stats.nodes.n1).toMatchObject({
      writes: 3,
      firstCordon: { monotonicMs: first },
      firstTaint: { t: { monotonicMs: first } },
      firstAnnotation: {},
    });
    expect(stats.requests).toEqual({ total: 2, byCode: { "200": 1, "429": 1 }, faulted: 1 });
    expect(log.nodeWrites.map((w) => w.cordoned)).toEqual([true, false, true]);
  });
});

describe("Azure nodes", () => {
  const group = "/subscriptions/s1/resourceGroups/MC_rg_aks_norwayeast/providers/Microsoft.Compute";

  it("providerID: azure:// and the resource id with the resource group in lower case, as the cloud provider writes it", () => {
    expect(azureProviderID(`${group}/virtualMachineScaleSets/aks-pool-vmss/virtualMachines/3`)).toBe(
      "azure:///subscriptions/s1/resourceGroups/mc_rg_aks_norwayeast/providers/Microsoft.Compute/virtualMachineScaleSets/aks-pool-vmss/virtualMachines/3",
    );
    expect(azureProviderID(`${group}/virtualMachines/pool_1a2b3c4d`)).toBe(
      "azure:///subscriptions/s1/resourceGroups/mc_rg_aks_norwayeast/providers/Microsoft.Compute/virtualMachines/pool_1a2b3c4d",
    );
  });

  it("node names: a Uniform instance is the scale set and its id in base 36 over six digits; other VMs their name as a DNS label", () => {
    expect(aksNodeName(`${group}/virtualMachineScaleSets/aks-pool-vmss/virtualMachines/0`)).toBe("aks-pool-vmss000000");
    expect(aksNodeName(`${group}/virtualMachineScaleSets/aks-pool-vmss/virtualMachines/10`)).toBe(
      "aks-pool-vmss00000a",
    );
    expect(aksNodeName(`${group}/virtualMachines/WestNO_1`)).toBe("westno-1");
    expect(() => aksNodeName(`${group}/disks/d1`)).toThrow(/not the resource id of an Azure VM/);
    expect(azureNodeSeed(`${group}/virtualMachines/vm1`, { unschedulable: true })).toEqual({
      unschedulable: true,
      name: "vm1",
      providerID:
        "azure:///subscriptions/s1/resourceGroups/mc_rg_aks_norwayeast/providers/Microsoft.Compute/virtualMachines/vm1",
    });
  });
});

describe("OpenAPI v3", () => {
  it("indexes every served group-version with a content hash, and each document has its verbs' operations", () => {
    const index = openApiIndex() as { paths: Record<string, { serverRelativeURL: string }> };
    expect(Object.keys(index.paths).sort()).toEqual([
      "api/v1",
      "apis/apps/v1",
      "apis/coordination.k8s.io/v1",
      "apis/events.k8s.io/v1",
      "apis/policy/v1",
    ]);
    expect(index.paths["apis/coordination.k8s.io/v1"]?.serverRelativeURL).toMatch(
      /^\/openapi\/v3\/apis\/coordination\.k8s\.io\/v1\?hash=[0-9A-F]{128}$/,
    );
    const leases = openApiDocument("coordination.k8s.io/v1") as {
      paths: Record<
        string,
        Record<string, { "x-kubernetes-group-version-kind": object; parameters: { name: string; in: string }[] }>
      >;
    };
    const item = leases.paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"] ?? {};
    expect(Object.keys(item).sort()).toEqual(["delete", "get", "patch", "put"]);
    // What kubectl's field-validation check looks for: a PATCH of the kind with a fieldValidation query parameter.
    expect(item.patch?.["x-kubernetes-group-version-kind"]).toEqual({
      group: "coordination.k8s.io",
      version: "v1",
      kind: "Lease",
    });
    expect(item.patch?.parameters).toContainEqual(expect.objectContaining({ name: "fieldValidation", in: "query" }));
    const core = openApiDocument("v1") as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(core.paths["/api/v1/namespaces/{namespace}/pods"] ?? {})).toEqual(["get"]);
    expect(Object.keys(core.paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"] ?? {})).toEqual(["post"]);
    expect(openApiAnswer("/openapi/v3/apis/batch/v1")).toBeUndefined();
  });
});

describe("pods", () => {
  const pod = (extra: Partial<KubeObject["metadata"]> = {}, spec: object = { nodeName: "n1" }): KubeObject => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: meta("web-1", { namespace: "apps", labels: { app: "web" }, ...extra }),
    spec,
  });

  it("a pod departs when its deletion begins, or when it is removed without having terminated", () => {
    const change = (type: StoreChange["type"], object: KubeObject, previous?: KubeObject): StoreChange => ({
      kind: "pods",
      type,
      object,
      ...(previous ? { previous } : {}),
      resourceVersion: 2,
    });
    const terminating = pod({ deletionTimestamp: "2025-01-01T00:00:30Z" });
    expect(isDeparture(change("MODIFIED", terminating, pod()))).toBe(true);
    expect(isDeparture(change("MODIFIED", terminating, terminating))).toBe(false);
    expect(isDeparture(change("DELETED", terminating))).toBe(false);
    expect(isDeparture(change("DELETED", pod()))).toBe(true);
    expect(isDeparture({ ...change("DELETED", pod()), kind: "nodes" })).toBe(false);
  });

  it("a returning pod comes back on the same node with a new name, the labels and owners, tolerating everything", () => {
    const owners = [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-7d", uid: "rs-uid", controller: true }];
    const seed = replacementSeed(
      { matchLabels: { app: "web" } },
      pod({ ownerReferences: owners }, { nodeName: "n1", terminationGracePeriodSeconds: 5 }),
    );
    expect(seed).toMatchObject({
      namespace: "apps",
      nodeName: "n1",
      labels: { app: "web" },
      ownerReferences: owners,
      tolerations: [{ operator: "Exists" }],
      terminationGracePeriodSeconds: 5,
    });
    expect(seed.name).toMatch(/^web-7d-[b-z2-9]{5}$/);
    expect(
      replacementSeed({ matchLabels: {}, namePrefix: "agent-", tolerations: [{ key: "k", operator: "Exists" }] }, pod())
        .name,
    ).toMatch(/^agent-/);
  });

  it("an update that removes the last finalizer of an object deleted with grace 0 deletes it", () => {
    const deleting = pod({
      finalizers: ["f"],
      deletionTimestamp: "2025-01-01T00:00:00Z",
      deletionGracePeriodSeconds: 0,
    });
    expect(
      shouldDeleteDuringUpdate(
        deleting,
        pod({ deletionTimestamp: "2025-01-01T00:00:00Z", deletionGracePeriodSeconds: 0 }),
      ),
    ).toBe(true);
    expect(shouldDeleteDuringUpdate(deleting, pod({ finalizers: ["f"], deletionGracePeriodSeconds: 0 }))).toBe(false);
    expect(shouldDeleteDuringUpdate(pod({ finalizers: ["f"] }), pod())).toBe(false);
    expect(shouldDeleteDuringUpdate(deleting, pod({ deletionGracePeriodSeconds: 30 }))).toBe(false);
  });

  it("the STATUS column: Terminating only while not terminal, else the containers' reason, as the pod printer words it", () => {
    const running = { phase: "Running", containerStatuses: [{ ready: true, restartCount: 0, state: { running: {} } }] };
    expect(podStatusReason(pod({}, {}))).toBe("Unknown");
    expect(podStatusReason({ ...pod(), status: running })).toBe("Running");
    expect(podStatusReason({ ...pod({ deletionTimestamp: "t" }), status: running })).toBe("Terminating");
    const stopped = stoppedStatus(running, "t1");
    expect(podStatusReason({ ...pod({ deletionTimestamp: "t" }), status: stopped })).toBe("Completed");
    expect(
      podStatusReason({
        ...pod(),
        status: {
          phase: "Pending",
          containerStatuses: [{ ready: false, restartCount: 0, state: { waiting: { reason: "ContainerCreating" } } }],
        },
      }),
    ).toBe("ContainerCreating");
    expect(
      podStatusReason({
        ...pod(),
        status: {
          phase: "Failed",
          containerStatuses: [{ ready: false, restartCount: 0, state: { terminated: { exitCode: 137 } } }],
        },
      }),
    ).toBe("ExitCode:137");
  });

  it("a stopped pod reports Succeeded with nothing ready", () => {
    const stopped = stoppedStatus(
      {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True" },
          { type: "PodScheduled", status: "True" },
        ],
        containerStatuses: [{ name: "main", ready: true, state: { running: { startedAt: "t0" } } }],
      },
      "t1",
    );
    expect(stopped).toMatchObject({
      phase: "Succeeded",
      conditions: [
        { type: "Ready", status: "False" },
        { type: "PodScheduled", status: "True" },
      ],
      containerStatuses: [{ ready: false, state: { terminated: { exitCode: 0, startedAt: "t0", finishedAt: "t1" } } }],
    });
  });
});

describe("boolean field selectors", () => {
  it("read a left-out boolean as false, as the API server's fmt.Sprint does", () => {
    const defaults = { "spec.unschedulable": "false" };
    const selector = (s: string) => parseFieldSelector(s, ["spec.unschedulable"]);
    expect(matchesFields(node({}), selector("spec.unschedulable=false"), defaults)).toBe(true);
    expect(matchesFields(node({}), selector("spec.unschedulable=true"), defaults)).toBe(false);
    expect(matchesFields(node({ unschedulable: true }), selector("spec.unschedulable!=false"), defaults)).toBe(true);
    expect(matchesFields(node({}), selector("spec.unschedulable=false"))).toBe(false);
  });
});
