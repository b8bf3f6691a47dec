// The Kubernetes peer's pure parts with plain values: PodDisruptionBudget arithmetic, the three patch formats, field
// and label selectors, and the conversion and validation of Events between core/v1 and events.k8s.io/v1.
import { describe, expect, it } from "vitest";
import { budgetRefusalMessage, budgetStatus, scaledValue } from "../../src/testbed/peers/kubernetes/pdb.js";
import {
  applyJsonPatch,
  applyMergePatch,
  applyPatch,
  applyStrategicMergePatch,
  patchTypeOf,
} from "../../src/testbed/peers/kubernetes/patch.js";
import {
  fieldValue,
  labelSelectorRequirements,
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from "../../src/testbed/peers/kubernetes/selectors.js";
import { fromEventsV1, normalizeEventTimes, toEventsV1 } from "../../src/testbed/peers/kubernetes/event-convert.js";
import { eventCreateCauses } from "../../src/testbed/peers/kubernetes/event-validation.js";
import { statusOf } from "./peer-kit.js";
import {
  kubeMicroTime,
  kubeTime,
  withoutEmptyFields,
  type KubeObject,
} from "../../src/testbed/peers/kubernetes/objects.js";
import { humanDuration } from "../../src/testbed/peers/kubernetes/tables.js";
import { decodeDeleteOptions } from "../../src/testbed/peers/kubernetes/protobuf.js";
import { changeHistoryLength, ClusterStore, type StoreChange } from "../../src/testbed/peers/kubernetes/store.js";
import { watchEvent } from "../../src/testbed/peers/kubernetes/watch.js";

describe("PodDisruptionBudget arithmetic", () => {
  it("scales integers and percentages, rounding percentages up", () => {
    expect(scaledValue(2, 10)).toBe(2);
    expect(scaledValue("50%", 3)).toBe(2);
    expect(scaledValue("10%", 1)).toBe(1);
    expect(scaledValue("0%", 5)).toBe(0);
    expect(scaledValue("3", 5)).toBe(3);
    expect(() => scaledValue("half", 5)).toThrow(/invalid value/);
  });

  it("minAvailable: allows currentHealthy - minAvailable, never below zero", () => {
    expect(budgetStatus({ minAvailable: 2 }, { expectedPods: 3, currentHealthy: 3 })).toEqual({
      expectedPods: 3,
      currentHealthy: 3,
      desiredHealthy: 2,
      disruptionsAllowed: 1,
    });
    expect(budgetStatus({ minAvailable: 2 }, { expectedPods: 3, currentHealthy: 2 }).disruptionsAllowed).toBe(0);
    expect(budgetStatus({ minAvailable: 5 }, { expectedPods: 3, currentHealthy: 3 }).disruptionsAllowed).toBe(0);
    expect(budgetStatus({ minAvailable: "50%" }, { expectedPods: 4, currentHealthy: 4 }).disruptionsAllowed).toBe(2);
  });

  it("maxUnavailable: desired = expected - maxUnavailable, so an unready pod uses up the budget", () => {
    expect(budgetStatus({ maxUnavailable: 1 }, { expectedPods: 3, currentHealthy: 3 }).disruptionsAllowed).toBe(1);
    expect(budgetStatus({ maxUnavailable: 1 }, { expectedPods: 3, currentHealthy: 2 }).disruptionsAllowed).toBe(0);
    expect(budgetStatus({ maxUnavailable: 0 }, { expectedPods: 3, currentHealthy: 3 }).disruptionsAllowed).toBe(0);
    expect(budgetStatus({ maxUnavailable: "100%" }, { expectedPods: 2, currentHealthy: 0 })).toMatchObject({
      desiredHealthy: 0,
      disruptionsAllowed: 0,
    });
    expect(budgetStatus({ maxUnavailable: "34%" }, { expectedPods: 3, currentHealthy: 3 }).disruptionsAllowed).toBe(2);
  });

  it("defaults to minAvailable 1 and a block forces zero", () => {
    expect(budgetStatus({}, { expectedPods: 2, currentHealthy: 2 }).disruptionsAllowed).toBe(1);
    expect(budgetStatus({ minAvailable: 0 }, { expectedPods: 2, currentHealthy: 2 }, true)).toEqual({
      expectedPods: 2,
      currentHealthy: 2,
      desiredHealthy: 2,
      disruptionsAllowed: 0,
    });
  });

  it("words the refusal as the eviction subresource does", () => {
    expect(
      budgetRefusalMessage("web", { expectedPods: 3, currentHealthy: 2, desiredHealthy: 2, disruptionsAllowed: 0 }),
    ).toBe("The disruption budget web needs 2 healthy pods and has 2 currently");
  });
});

const node = {
  metadata: { name: "n", labels: { a: "1", b: "2" }, finalizers: ["x"] },
  spec: { taints: [{ key: "k1", effect: "NoSchedule" }], unschedulable: true },
  status: {
    conditions: [
      { type: "Ready", status: "True" },
      { type: "MemoryPressure", status: "False" },
    ],
  },
};

describe("patches", () => {
  it("picks the patch type from the content type and refuses others with 415", () => {
    expect(patchTypeOf("application/strategic-merge-patch+json")).toBe("strategic");
    expect(patchTypeOf("application/merge-patch+json; charset=utf-8")).toBe("merge");
    expect(patchTypeOf("application/json-patch+json")).toBe("json");
    expect(statusOf(() => patchTypeOf("application/json"))).toMatchObject({
      code: 415,
      reason: "UnsupportedMediaType",
    });
    expect(statusOf(() => patchTypeOf("application/apply-patch+yaml"))).toMatchObject({ code: 415 });
  });

  it("JSON merge patch: merges objects, null deletes, lists are replaced", () => {
    const patched = applyMergePatch(node, {
      metadata: { labels: { a: null, c: "3" } },
      spec: { unschedulable: null, taints: [] },
    });
    expect(patched).toEqual({
      ...node,
      metadata: { ...node.metadata, labels: { b: "2", c: "3" } },
      spec: { taints: [] },
    });
    expect(node.metadata.labels).toEqual({ a: "1", b: "2" });
  });

  it("strategic merge patch: null deletes, taints replaced (no merge key), conditions merged by type, finalizers as a set", () => {
    const patched = applyStrategicMergePatch(
      node,
      {
        spec: { unschedulable: null, taints: [{ key: "k2", effect: "NoExecute" }] },
        status: { conditions: [{ type: "Ready", status: "False" }] },
        metadata: { finalizers: ["y", "x"] },
      },
      "",
    ) as typeof node;
    expect(patched.spec).toEqual({ taints: [{ key: "k2", effect: "NoExecute" }] });
    expect(patched.status.conditions).toEqual([
      { type: "Ready", status: "False" },
      { type: "MemoryPressure", status: "False" },
    ]);
    expect(patched.metadata.finalizers).toEqual(["x", "y"]);
  });

  it("strategic merge patch directives: $patch delete/replace, $deleteFromPrimitiveList, $retainKeys, $setElementOrder ignored", () => {
    const patched = applyStrategicMergePatch(
      node,
      {
        status: {
          conditions: [{ type: "MemoryPressure", $patch: "delete" }],
          "$setElementOrder/conditions": [{ type: "Ready" }],
        },
        metadata: { labels: { $patch: "replace", z: "9" }, "$deleteFromPrimitiveList/finalizers": ["x"] },
        spec: { $retainKeys: ["taints"], taints: [] },
      },
      "",
    ) as typeof node;
    expect(patched.status.conditions).toEqual([{ type: "Ready", status: "True" }]);
    expect(patched.metadata).toEqual({ name: "n", labels: { z: "9" }, finalizers: [] });
    expect(patched.spec).toEqual({ taints: [] });
  });

  it("JSON patch: add/remove/replace/move/copy/test on a copy, and a failed operation fails the whole patch with 422", () => {
    const patched = applyJsonPatch(node, [
      { op: "add", path: "/spec/taints/-", value: { key: "k2", effect: "NoSchedule" } },
      { op: "remove", path: "/spec/taints/0" },
      { op: "replace", path: "/spec/unschedulable", value: false },
      { op: "add", path: "/metadata/labels/sef~1event", value: "e1" },
      { op: "copy", from: "/metadata/labels/a", path: "/metadata/labels/c" },
      { op: "move", from: "/metadata/labels/b", path: "/metadata/labels/d" },
      { op: "test", path: "/metadata/name", value: "n" },
    ]) as typeof node;
    expect(patched.spec).toEqual({ taints: [{ key: "k2", effect: "NoSchedule" }], unschedulable: false });
    expect(patched.metadata.labels).toEqual({ a: "1", "sef/event": "e1", c: "1", d: "2" });
    expect(node.spec.taints).toHaveLength(1);
    expect(statusOf(() => applyJsonPatch(node, [{ op: "remove", path: "/spec/missing" }]))).toMatchObject({
      code: 422,
      reason: "Invalid",
    });
    expect(statusOf(() => applyJsonPatch(node, [{ op: "replace", path: "/nope/deeper", value: 1 }]))).toMatchObject({
      code: 422,
    });
    expect(
      statusOf(() => applyJsonPatch(node, [{ op: "test", path: "/metadata/name", value: "other" }])),
    ).toMatchObject({ code: 422, message: "testing value /metadata/name failed" });
    expect(statusOf(() => applyPatch("merge", node, [1]))).toMatchObject({ code: 422 });
  });
});

describe("selectors", () => {
  const pod = {
    metadata: { name: "p", namespace: "default" },
    spec: { nodeName: "node-a", hostNetwork: false },
    status: { phase: "Running" },
  };

  it("field selectors: =, ==, !=, conjunctions, missing fields read as empty", () => {
    expect(matchesFields(pod, parseFieldSelector("spec.nodeName=node-a", ["spec.nodeName"]))).toBe(true);
    expect(matchesFields(pod, parseFieldSelector("spec.nodeName==node-b", ["spec.nodeName"]))).toBe(false);
    expect(
      matchesFields(
        pod,
        parseFieldSelector("spec.nodeName=node-a,status.phase!=Failed", ["spec.nodeName", "status.phase"]),
      ),
    ).toBe(true);
    expect(matchesFields(pod, parseFieldSelector("status.phase!=Running", ["status.phase"]))).toBe(false);
    expect(matchesFields(pod, parseFieldSelector("status.podIP=", ["status.podIP"]))).toBe(true);
    expect(fieldValue(pod, "spec.hostNetwork")).toBe("false");
    expect(parseFieldSelector("", ["x"])).toEqual([]);
  });

  it("refuses fields the resource does not support with the API server's 400", () => {
    expect(statusOf(() => parseFieldSelector("spec.foo=1", ["spec.nodeName"]))).toMatchObject({
      code: 400,
      reason: "BadRequest",
      message: "field label not supported: spec.foo",
    });
    expect(statusOf(() => parseFieldSelector("spec.nodeName", ["spec.nodeName"]))).toMatchObject({ code: 400 });
  });

  it("label selectors: equality, inequality, in, notin, exists, !exists", () => {
    const labels = { app: "web", tier: "front" };
    const matches = (selector: string): boolean => matchesLabels(labels, parseLabelSelector(selector));
    expect(matches("app=web")).toBe(true);
    expect(matches("app==web,tier=back")).toBe(false);
    expect(matches("app!=db")).toBe(true);
    expect(matches("tier in (front, back)")).toBe(true);
    expect(matches("tier notin (front)")).toBe(false);
    expect(matches("app,!missing")).toBe(true);
    expect(matches("missing")).toBe(false);
    expect(matches("")).toBe(true);
    expect(matchesLabels(undefined, parseLabelSelector("app!=web"))).toBe(true);
  });

  it("metav1.LabelSelector: matchLabels and matchExpressions", () => {
    const requirements = labelSelectorRequirements({
      matchLabels: { app: "web" },
      matchExpressions: [
        { key: "tier", operator: "In", values: ["front"] },
        { key: "canary", operator: "DoesNotExist" },
      ],
    });
    expect(matchesLabels({ app: "web", tier: "front" }, requirements)).toBe(true);
    expect(matchesLabels({ app: "web", tier: "front", canary: "1" }, requirements)).toBe(false);
    expect(labelSelectorRequirements({})).toEqual([]);
  });
});

describe("events", () => {
  const core = {
    apiVersion: "v1",
    kind: "Event",
    metadata: {
      name: "e",
      namespace: "default",
      uid: "u",
      resourceVersion: "1",
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    involvedObject: { kind: "Node", name: "node-a" },
    reason: "Cordoned",
    message: "m",
    type: "Normal",
    source: { component: "sef" },
    firstTimestamp: "2026-01-01T00:00:00Z",
    lastTimestamp: "2026-01-01T00:00:01Z",
    count: 2,
    reportingComponent: "",
  } as unknown as KubeObject;

  it("converts core/v1 to events.k8s.io/v1 and back", () => {
    const v1 = toEventsV1(core) as unknown as Record<string, unknown>;
    expect(v1).toEqual({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: core.metadata,
      reason: "Cordoned",
      type: "Normal",
      regarding: { kind: "Node", name: "node-a" },
      note: "m",
      deprecatedSource: { component: "sef" },
      deprecatedFirstTimestamp: "2026-01-01T00:00:00Z",
      deprecatedLastTimestamp: "2026-01-01T00:00:01Z",
      deprecatedCount: 2,
    });
    const back = fromEventsV1({
      regarding: { kind: "Node", name: "n" },
      note: "x",
      reportingController: "c",
      eventTime: "2026-01-01T00:00:00.000001Z",
    });
    expect(back).toEqual({
      apiVersion: "v1",
      kind: "Event",
      involvedObject: { kind: "Node", name: "n" },
      message: "x",
      reportingComponent: "c",
      eventTime: "2026-01-01T00:00:00.000001Z",
      source: {},
      firstTimestamp: null,
      lastTimestamp: null,
    });
  });

  it("normalises times as the API server stores them and refuses unparseable ones", () => {
    expect(
      normalizeEventTimes({
        firstTimestamp: "2026-01-01T00:00:00.750Z",
        eventTime: "2026-01-01T00:00:00.123Z",
        lastTimestamp: null,
      }),
    ).toEqual({
      firstTimestamp: "2026-01-01T00:00:00Z",
      eventTime: "2026-01-01T00:00:00.123000Z",
      lastTimestamp: null,
    });
    expect(statusOf(() => normalizeEventTimes({ eventTime: "yesterday" }))).toMatchObject({ code: 400 });
    expect(kubeTime(Date.UTC(2026, 0, 1, 0, 0, 0, 999))).toBe("2026-01-01T00:00:00Z");
    expect(kubeMicroTime(Date.UTC(2026, 0, 1, 0, 0, 0, 5))).toBe("2026-01-01T00:00:00.005000Z");
  });

  it("validates creates: legacy namespace agreement, reporting fields with eventTime, strict events.k8s.io/v1 rules", () => {
    expect(eventCreateCauses({ involvedObject: { namespace: "" } }, "default", false)).toEqual([]);
    expect(eventCreateCauses({ involvedObject: { namespace: "other" } }, "default", false).map((c) => c.field)).toEqual(
      ["involvedObject.namespace"],
    );
    expect(
      eventCreateCauses({ involvedObject: {}, eventTime: "2026-01-01T00:00:00.000000Z" }, "default", false).map(
        (c) => c.field,
      ),
    ).toEqual(["reportingComponent", "reportingInstance", "action", "reason"]);
    const valid = {
      involvedObject: { kind: "Node", name: "n" },
      eventTime: "2026-01-01T00:00:00.000000Z",
      reportingComponent: "c",
      reportingInstance: "i",
      action: "Drain",
      reason: "Draining",
      type: "Normal",
    };
    expect(eventCreateCauses(valid, "default", true)).toEqual([]);
    expect(eventCreateCauses(valid, "apps", true).map((c) => c.field)).toEqual(["involvedObject.namespace"]);
    expect(eventCreateCauses({ ...valid, type: "Info", count: 1 }, "default", true).map((c) => c.field)).toEqual([
      "type",
      "deprecatedCount",
    ]);
    expect(
      eventCreateCauses({ ...valid, eventTime: null, reportingComponent: "" }, "default", true).map((c) => c.field),
    ).toEqual(["eventTime"]);
  });
});

describe("protobuf DeleteOptions", () => {
  const lengthDelimited = (field: number, bytes: Buffer): Buffer =>
    Buffer.concat([Buffer.from([(field << 3) | 2, bytes.length]), bytes]);
  const envelope = (raw: Buffer): Buffer => {
    const typeMeta = Buffer.concat([
      lengthDelimited(1, Buffer.from("v1")),
      lengthDelimited(2, Buffer.from("DeleteOptions")),
    ]);
    return Buffer.concat([
      Buffer.from("k8s\0", "latin1"),
      lengthDelimited(1, typeMeta),
      lengthDelimited(2, raw),
      lengthDelimited(4, Buffer.alloc(0)),
    ]);
  };

  it("decodes the fields client-go sends, in their JSON shape", () => {
    const raw = Buffer.concat([
      Buffer.from([0x08, 0x01]),
      lengthDelimited(2, lengthDelimited(1, Buffer.from("uid-1"))),
      lengthDelimited(4, Buffer.from("Background")),
      lengthDelimited(5, Buffer.from("All")),
    ]);
    expect(decodeDeleteOptions(envelope(raw))).toEqual({
      gracePeriodSeconds: 1,
      preconditions: { uid: "uid-1" },
      propagationPolicy: "Background",
      dryRun: ["All"],
    });
    const minusOne = Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    expect(decodeDeleteOptions(envelope(minusOne))).toEqual({ gracePeriodSeconds: -1 });
    expect(decodeDeleteOptions(envelope(Buffer.alloc(0)))).toEqual({});
  });

  it("refuses a body without the envelope or cut short (400)", () => {
    expect(statusOf(() => decodeDeleteOptions(Buffer.from([0x08, 0x01])))).toMatchObject({ code: 400 });
    expect(statusOf(() => decodeDeleteOptions(envelope(Buffer.from([0x12, 0x09, 0x0a]))))).toMatchObject({
      code: 400,
      message: "the protobuf body is truncated",
    });
  });
});

describe("the store's change history (what watches resume from)", () => {
  const clock = { wallNowMs: () => Date.UTC(2026, 0, 1), monotonicNowMs: () => 0 };

  it("replays the changes after a resourceVersion, in order, and says when older ones are forgotten", () => {
    const store = new ClusterStore(clock);
    const first = store.create("nodes", { apiVersion: "v1", kind: "Node", metadata: { name: "n0" } });
    store.replace("nodes", { ...first, spec: { unschedulable: true } });
    store.remove("nodes", undefined, "n0");
    const since = store.changesSince(Number(first.metadata.resourceVersion) - 1) ?? [];
    expect(
      since.map((c) => [c.type, c.object.metadata.name, c.resourceVersion - Number(first.metadata.resourceVersion)]),
    ).toEqual([
      ["ADDED", "n0", 0],
      ["MODIFIED", "n0", 1],
      ["DELETED", "n0", 2],
    ]);
    for (let i = 1; i <= changeHistoryLength; i++)
      store.create("events", { apiVersion: "v1", kind: "Event", metadata: { name: `e${i}`, namespace: "default" } });
    expect(store.changesSince(Number(first.metadata.resourceVersion))).toBeUndefined();
    expect(store.changesSince(Number(store.currentResourceVersion()) - 2)?.map((c) => c.object.metadata.name)).toEqual([
      `e${changeHistoryLength - 1}`,
      `e${changeHistoryLength}`,
    ]);
  });
});

describe("watch events under a selector", () => {
  const pod = (name: string, app: string, namespace = "default"): KubeObject =>
    ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace, uid: name, resourceVersion: "1", creationTimestamp: "", labels: { app } },
    }) as KubeObject;
  const watch = {
    kind: "pods" as const,
    namespace: "default",
    matches: (o: KubeObject) => o.metadata.labels?.app === "web",
    view: (o: KubeObject) => o,
  };
  const change = (type: StoreChange["type"], object: KubeObject, previous?: KubeObject): StoreChange => ({
    kind: "pods",
    type,
    object,
    ...(previous ? { previous } : {}),
    resourceVersion: 2,
  });

  it("turns selector transitions into ADDED and DELETED, and ignores other kinds, namespaces and objects", () => {
    expect(watchEvent(watch, change("ADDED", pod("a", "web")))?.type).toBe("ADDED");
    expect(watchEvent(watch, change("ADDED", pod("a", "db")))).toBeUndefined();
    expect(watchEvent(watch, change("MODIFIED", pod("a", "web"), pod("a", "web")))?.type).toBe("MODIFIED");
    expect(watchEvent(watch, change("MODIFIED", pod("a", "web"), pod("a", "db")))?.type).toBe("ADDED");
    expect(watchEvent(watch, change("MODIFIED", pod("a", "db"), pod("a", "web")))).toMatchObject({
      type: "DELETED",
      object: { metadata: { labels: { app: "db" } } },
    });
    expect(watchEvent(watch, change("MODIFIED", pod("a", "db"), pod("a", "db")))).toBeUndefined();
    expect(watchEvent(watch, change("DELETED", pod("a", "web")))?.type).toBe("DELETED");
    expect(watchEvent(watch, change("ADDED", pod("a", "web", "other")))).toBeUndefined();
    expect(watchEvent(watch, { ...change("ADDED", pod("a", "web")), kind: "nodes" })).toBeUndefined();
  });
});

describe("objects", () => {
  it("read back without empty omitempty fields", () => {
    const object = { metadata: { name: "n", labels: {} }, spec: { taints: [], unschedulable: false, providerID: "p" } };
    expect(withoutEmptyFields(object)).toEqual({ metadata: { name: "n" }, spec: { providerID: "p" } });
  });

  it("shows ages the way kubectl does", () => {
    expect(
      [
        0,
        59_000,
        119_000,
        150_000,
        600_000,
        3 * 3600_000,
        5 * 3600_000 + 60_000,
        30 * 3600_000,
        3 * 86_400_000,
        10 * 86_400_000,
      ].map(humanDuration),
    ).toEqual(["0s", "59s", "119s", "2m30s", "10m", "3h", "5h1m", "30h", "3d", "10d"]);
  });
});
