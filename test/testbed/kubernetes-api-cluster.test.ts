// The Kubernetes peer over HTTPS with a plain client, for a cluster of nodes: three Azure nodes (VMSS Uniform and
// Flexible) listed by label and field selectors and as a Table, node annotations guarded by resourceVersion, the
// node-write log and its first-mark times, and coordination.k8s.io/v1 Leases: create, get, list, watch, update, patch
// and delete with the API server's status codes, Status bodies, MicroTimes and optimistic concurrency.
import { describe, expect, it } from "vitest";
import { azureNodeSeed, type KubernetesSeed } from "../../src/testbed/peers/kubernetes/index.js";
import { waitFor } from "../helpers/wait.js";
import { requestPeer, type PeerAnswer } from "./peer-client.js";
import { peerPerTest } from "./peer-kit.js";

const start = peerPerTest();

const group =
  "/subscriptions/8c1b5f3e-2d4a-4c6b-9e7f-1a2b3c4d5e6f/resourceGroups/MC_sef_aks_norwayeast/providers/Microsoft.Compute";
/** Two VMSS Uniform instances of one pool and a VMSS Flex VM of another, as AKS registers them. */
const threeNodes: KubernetesSeed["nodes"] = [
  azureNodeSeed(`${group}/virtualMachineScaleSets/aks-pool1-vmss/virtualMachines/0`, {
    labels: { agentpool: "pool1" },
  }),
  azureNodeSeed(`${group}/virtualMachineScaleSets/aks-pool1-vmss/virtualMachines/1`, {
    labels: { agentpool: "pool1" },
    unschedulable: true,
  }),
  azureNodeSeed(`${group}/virtualMachines/aks-flex_1a2b3c4d`, { labels: { agentpool: "flex" } }),
];
const names = (answer: PeerAnswer): string[] =>
  (answer.body.items as { metadata: { name: string } }[]).map((i) => i.metadata.name);
const tableAccept =
  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";

describe("nodes of a cluster", () => {
  it("lists the nodes by label and field selectors (an uncordoned node is spec.unschedulable=false), and as a Table", async () => {
    const p = await start({ nodes: threeNodes });
    expect(names(await requestPeer(p, "GET", "/api/v1/nodes"))).toEqual([
      "aks-flex-1a2b3c4d",
      "aks-pool1-vmss000000",
      "aks-pool1-vmss000001",
    ]);
    expect(names(await requestPeer(p, "GET", "/api/v1/nodes?labelSelector=agentpool%3Dpool1"))).toEqual([
      "aks-pool1-vmss000000",
      "aks-pool1-vmss000001",
    ]);
    expect(names(await requestPeer(p, "GET", "/api/v1/nodes?labelSelector=agentpool+in+(flex)"))).toEqual([
      "aks-flex-1a2b3c4d",
    ]);
    expect(names(await requestPeer(p, "GET", "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue"))).toEqual([
      "aks-pool1-vmss000001",
    ]);
    expect(names(await requestPeer(p, "GET", "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse"))).toEqual([
      "aks-flex-1a2b3c4d",
      "aks-pool1-vmss000000",
    ]);
    expect(
      names(await requestPeer(p, "GET", "/api/v1/nodes?fieldSelector=metadata.name%3Daks-pool1-vmss000000")),
    ).toEqual(["aks-pool1-vmss000000"]);
    expect(await requestPeer(p, "GET", "/api/v1/nodes?fieldSelector=spec.providerID%3Dx")).toMatchObject({
      code: 400,
      body: { reason: "BadRequest", message: "field label not supported: spec.providerID" },
    });
    const listed = await requestPeer(p, "GET", "/api/v1/nodes?labelSelector=agentpool%3Dflex");
    expect((listed.body.items as { spec: { providerID: string } }[])[0]?.spec.providerID).toBe(
      "azure:///subscriptions/8c1b5f3e-2d4a-4c6b-9e7f-1a2b3c4d5e6f/resourceGroups/mc_sef_aks_norwayeast/providers/Microsoft.Compute/virtualMachines/aks-flex_1a2b3c4d",
    );
    const table = await requestPeer(p, "GET", "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue", {
      accept: tableAccept,
    });
    expect(table.body).toMatchObject({
      kind: "Table",
      rows: [
        {
          cells: [
            "aks-pool1-vmss000001",
            "Ready,SchedulingDisabled",
            "<none>",
            expect.any(String),
            "v1.33.0",
            "<none>",
            "<none>",
            expect.any(String),
            expect.any(String),
            expect.any(String),
          ],
        },
      ],
    });
  });

  it("guards annotation patches with resourceVersion (409 when stale) and logs each write with what it changed", async () => {
    const p = await start({ nodes: threeNodes });
    const nodePath = "/api/v1/nodes/aks-pool1-vmss000000";
    const read = await requestPeer(p, "GET", nodePath);
    const rv = (read.body.metadata as { resourceVersion: string }).resourceVersion;
    const marked = await requestPeer(p, "PATCH", nodePath, {
      contentType: "application/merge-patch+json",
      body: {
        metadata: { resourceVersion: rv, annotations: { "sef.azure.com/drained": "E1" } },
        spec: { unschedulable: true },
      },
    });
    expect(marked.code).toBe(200);
    const stale = await requestPeer(p, "PATCH", nodePath, {
      contentType: "application/strategic-merge-patch+json",
      body: { metadata: { resourceVersion: rv, annotations: { "sef.azure.com/drained": "E2" } } },
    });
    expect(stale).toMatchObject({
      code: 409,
      body: {
        kind: "Status",
        status: "Failure",
        reason: "Conflict",
        details: { name: "aks-pool1-vmss000000", kind: "nodes" },
        code: 409,
      },
    });
    const jsonPatch = [
      { op: "test", path: "/metadata/resourceVersion", value: rv },
      { op: "add", path: "/metadata/annotations/x", value: "1" },
    ];
    expect(
      (await requestPeer(p, "PATCH", nodePath, { contentType: "application/json-patch+json", body: jsonPatch })).code,
    ).toBe(422);
    expect(p.state.node("aks-pool1-vmss000000")?.metadata.annotations?.["sef.azure.com/drained"]).toBe("E1");
    expect(p.state.nodeWrites()).toMatchObject([
      {
        node: "aks-pool1-vmss000000",
        method: "PATCH",
        contentType: "application/merge-patch+json",
        cordoned: true,
        annotationsSet: ["sef.azure.com/drained"],
        taintsAdded: [],
      },
    ]);
    const write = p.state.nodeWrites()[0];
    expect(p.state.stats().nodes).toEqual({
      "aks-pool1-vmss000000": {
        writes: 1,
        firstCordon: { atMs: write?.atMs, monotonicMs: write?.monotonicMs },
        firstTaint: {},
        firstAnnotation: { "sef.azure.com/drained": { atMs: write?.atMs, monotonicMs: write?.monotonicMs } },
      },
    });
    const requestLog = p.state.requests().filter((r) => r.verb === "patch");
    expect(requestLog.map((r) => [r.resource, r.name, r.code])).toEqual([
      ["nodes", "aks-pool1-vmss000000", 200],
      ["nodes", "aks-pool1-vmss000000", 409],
      ["nodes", "aks-pool1-vmss000000", 422],
    ]);
  });
});

describe("coordination.k8s.io/v1 Leases", () => {
  const slot = {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "sef-slot" },
    spec: {
      holderIdentity: "aks-pool1-vmss000000",
      leaseDurationSeconds: 30,
      acquireTime: "2025-06-01T10:00:00.000000Z",
      renewTime: "2025-06-01T10:00:00.000000Z",
    },
  };

  it("are discovered, created (201), refused when they exist, in a missing namespace or invalid, and listed", async () => {
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
    expect((await requestPeer(p, "GET", "/apis/coordination.k8s.io/v1")).body.resources).toEqual([
      {
        name: "leases",
        singularName: "lease",
        namespaced: true,
        kind: "Lease",
        verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
      },
    ]);
    const created = await requestPeer(p, "POST", leases, { body: slot });
    expect(created.code).toBe(201);
    expect(created.body).toMatchObject({
      kind: "Lease",
      metadata: {
        name: "sef-slot",
        namespace: "kube-node-lease",
        uid: expect.any(String),
        resourceVersion: expect.any(String),
      },
      spec: slot.spec,
    });
    expect(await requestPeer(p, "POST", leases, { body: slot })).toMatchObject({
      code: 409,
      body: {
        reason: "AlreadyExists",
        message: `leases.coordination.k8s.io "sef-slot" already exists`,
        details: { name: "sef-slot", group: "coordination.k8s.io", kind: "leases" },
      },
    });
    expect(
      await requestPeer(p, "POST", "/apis/coordination.k8s.io/v1/namespaces/nowhere/leases", { body: slot }),
    ).toMatchObject({ code: 404, body: { reason: "NotFound", message: `namespaces "nowhere" not found` } });
    const invalid = await requestPeer(p, "POST", leases, {
      body: { metadata: { name: "bad" }, spec: { leaseDurationSeconds: 0 } },
    });
    expect(invalid).toMatchObject({
      code: 422,
      body: {
        reason: "Invalid",
        message: `Lease.coordination.k8s.io "bad" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`,
        details: { causes: [{ reason: "FieldValueInvalid", field: "spec.leaseDurationSeconds" }] },
      },
    });
    const generated = await requestPeer(p, "POST", leases, { body: { metadata: { generateName: "sef-" } } });
    expect((generated.body.metadata as { name: string }).name).toMatch(/^sef-[a-z0-9]{5}$/);
    const all = await requestPeer(p, "GET", "/apis/coordination.k8s.io/v1/leases");
    expect(all.body).toMatchObject({
      kind: "LeaseList",
      apiVersion: "coordination.k8s.io/v1",
      metadata: { resourceVersion: expect.any(String) },
    });
    expect(names(all)).toEqual(
      ["aks-pool1-vmss000000", (generated.body.metadata as { name: string }).name, "sef-slot"].sort(),
    );
    expect(names(await requestPeer(p, "GET", `${leases}?fieldSelector=metadata.name%3Dsef-slot`))).toEqual([
      "sef-slot",
    ]);
    const table = await requestPeer(p, "GET", leases, { accept: tableAccept });
    expect((table.body.columnDefinitions as { name: string }[]).map((c) => c.name)).toEqual(["Name", "Holder", "Age"]);
  });

  it("decode strictly under fieldValidation=Strict (400), warn otherwise, and keep MicroTimes to the microsecond", async () => {
    const p = await start({});
    const withExtra = { ...slot, spec: { ...slot.spec, owner: "me", renewTime: "2025-06-01T12:00:00.654321+02:00" } };
    expect(await requestPeer(p, "POST", `${leases}?fieldValidation=Strict`, { body: withExtra })).toMatchObject({
      code: 400,
      body: {
        reason: "BadRequest",
        message: `Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "spec.owner"`,
      },
    });
    const warned = await requestPeer(p, "POST", leases, { body: withExtra });
    expect(warned.code).toBe(201);
    expect(warned.headers.warning).toBe(`299 - "unknown field \\"spec.owner\\""`);
    expect((warned.body.spec as { renewTime: string }).renewTime).toBe("2025-06-01T10:00:00.654321Z");
    const noMicros = await requestPeer(p, "POST", leases, {
      body: { metadata: { name: "x" }, spec: { renewTime: "2025-06-01T10:00:00Z" } },
    });
    expect(noMicros).toMatchObject({
      code: 400,
      body: {
        message: `Lease in version "v1" cannot be handled as a Lease: parsing time "2025-06-01T10:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"`,
      },
    });
  });

  it("update with the current resourceVersion only (422 without one, 409 when stale); PUT creates a missing Lease", async () => {
    const p = await start({});
    const created = (await requestPeer(p, "POST", leases, { body: slot })).body as {
      metadata: { resourceVersion: string; uid: string };
    };
    const path = `${leases}/sef-slot`;
    const renewed = {
      ...slot,
      metadata: { name: "sef-slot", resourceVersion: created.metadata.resourceVersion },
      spec: { ...slot.spec, renewTime: "2025-06-01T10:00:10.000000Z" },
    };
    const updated = await requestPeer(p, "PUT", path, { body: renewed });
    expect(updated).toMatchObject({
      code: 200,
      body: { metadata: { uid: created.metadata.uid }, spec: { renewTime: "2025-06-01T10:00:10.000000Z" } },
    });
    expect(Number((updated.body.metadata as { resourceVersion: string }).resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );
    expect(await requestPeer(p, "PUT", path, { body: renewed })).toMatchObject({
      code: 409,
      body: {
        reason: "Conflict",
        message: `Operation cannot be fulfilled on leases.coordination.k8s.io "sef-slot": the object has been modified; please apply your changes to the latest version and try again`,
      },
    });
    expect(await requestPeer(p, "PUT", path, { body: slot })).toMatchObject({
      code: 422,
      body: {
        reason: "Invalid",
        message: `leases.coordination.k8s.io "sef-slot" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
      },
    });
    const other = await requestPeer(p, "PUT", `${leases}/other`, { body: { ...slot, metadata: { name: "other" } } });
    expect(other).toMatchObject({ code: 201, body: { metadata: { name: "other" } } });
    expect(
      await requestPeer(p, "PUT", `${leases}/third`, { body: { ...slot, metadata: { name: "other" } } }),
    ).toMatchObject({ code: 400, body: { reason: "BadRequest" } });
  });

  it("patch (a stale resourceVersion in the patch is a 409), delete with preconditions, and watch", async () => {
    const p = await start({});
    const created = (await requestPeer(p, "POST", leases, { body: slot })).body as {
      metadata: { resourceVersion: string; uid: string };
    };
    const path = `${leases}/sef-slot`;
    const watching = requestPeer(p, "GET", `${leases}?watch=true&timeoutSeconds=2`, { deadlineMs: 10_000 });
    await waitFor("the watch to be served", () => p.state.requests().some((r) => r.verb === "watch"));
    const patched = await requestPeer(p, "PATCH", path, {
      contentType: "application/merge-patch+json",
      body: {
        metadata: { resourceVersion: created.metadata.resourceVersion },
        spec: { holderIdentity: "aks-pool1-vmss000001", leaseTransitions: 1 },
      },
    });
    expect(patched).toMatchObject({
      code: 200,
      body: { spec: { holderIdentity: "aks-pool1-vmss000001", leaseTransitions: 1, renewTime: slot.spec.renewTime } },
    });
    expect(
      (
        await requestPeer(p, "PATCH", path, {
          contentType: "application/merge-patch+json",
          body: { metadata: { resourceVersion: created.metadata.resourceVersion }, spec: { holderIdentity: "x" } },
        })
      ).code,
    ).toBe(409);
    expect(
      (
        await requestPeer(p, "PATCH", path, {
          contentType: "application/merge-patch+json",
          body: { spec: { leaseDurationSeconds: -5 } },
        })
      ).code,
    ).toBe(422);
    const wrongUid = await requestPeer(p, "DELETE", path, { body: { preconditions: { uid: "not-it" } } });
    expect(wrongUid).toMatchObject({
      code: 409,
      body: {
        reason: "Conflict",
        message: `Operation cannot be fulfilled on leases.coordination.k8s.io "sef-slot": StorageError: invalid object, Code: 4, Key: /registry/leases/kube-node-lease/sef-slot, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: not-it, UID in object meta: ${created.metadata.uid}`,
      },
    });
    expect(
      (
        await requestPeer(p, "DELETE", path, {
          body: { preconditions: { resourceVersion: created.metadata.resourceVersion } },
        })
      ).code,
    ).toBe(409);
    const deleted = await requestPeer(p, "DELETE", path, { body: { preconditions: { uid: created.metadata.uid } } });
    expect(deleted).toEqual(
      expect.objectContaining({
        code: 200,
        body: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Success",
          details: { name: "sef-slot", group: "coordination.k8s.io", kind: "leases", uid: created.metadata.uid },
        },
      }),
    );
    expect(await requestPeer(p, "GET", path)).toMatchObject({
      code: 404,
      body: { reason: "NotFound", message: `leases.coordination.k8s.io "sef-slot" not found` },
    });
    const events = (await watching).text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => (JSON.parse(l) as { type: string }).type);
    expect(events).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    // The Lease-write log: each write that changed the Lease, with its holder after it (refused ones are not there).
    expect(p.state.leaseWrites().map((w) => [w.method, w.namespace, w.name, w.holderIdentity])).toEqual([
      ["POST", "kube-node-lease", "sef-slot", "aks-pool1-vmss000000"],
      ["PATCH", "kube-node-lease", "sef-slot", "aks-pool1-vmss000001"],
      ["DELETE", "kube-node-lease", "sef-slot", "aks-pool1-vmss000001"],
    ]);
  });
});
