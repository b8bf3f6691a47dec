// The kubernetes action's worker (node-action.ts) in-process, on the fake clock, against the testbed's Kubernetes API
// peer on loopback and the real action ledger on an in-memory store: which events it holds and plans, the mark (taint,
// cordon, Noticed), the drain's start (lead time, a drain slot under maxConcurrentDrains), its outcomes (drained,
// incomplete), the undo (sef's marks only), failed steps (recorded once, 409 at once, backoff), a moved NotBefore, a
// client that does not load, and stop. End to end with the built agent: test/integration/kubernetes-*.test.ts.
import { DatabaseSync } from "node:sqlite";
import { Registry } from "prom-client";
import { describe, expect, it, type TestContext } from "vitest";
import type { KubernetesRecord, TransitionRecord } from "../../src/contract/record.js";
import { ActionLedger, type HoldVerdict } from "../../src/agent/actions/action-ledger.js";
import { createKubeApi, type KubeApi } from "../../src/agent/actions/kubernetes/client.js";
import { drainedReason, incompleteReason } from "../../src/agent/actions/kubernetes/cluster.js";
import { encodeMark, markAnnotationKey } from "../../src/agent/actions/kubernetes/marks.js";
import { KubernetesMetrics } from "../../src/agent/actions/kubernetes/metrics.js";
import { NodeActions, nodeActionKey, type NodeActionState } from "../../src/agent/actions/kubernetes/node-action.js";
import { kubernetesSettingsSchema } from "../../src/agent/actions/kubernetes/settings.js";
import { migrate } from "../../src/agent/store/migrations.js";
import {
  azureNodeSeed,
  startKubernetesPeer,
  type KubernetesPeer,
  type KubernetesSeed,
} from "../../src/testbed/peers/kubernetes/index.js";
import { pino } from "pino";
import { FakeClock } from "../helpers/fake-clock.js";
import { metricValue } from "../helpers/metrics.js";
import { waitFor as waitLong, type WaitOptions } from "../helpers/wait.js";
import { transition, vm } from "./fixtures.js";

const nodeName = "aks-pool1-00000000-vmss000000";
const eventId = "5DD55A71-95BE-4B7E-B8A2-9C4A2F7C8A11";
const eventKey = eventId.toLowerCase();
const actionKey = nodeActionKey(eventKey);
const startMs = Date.parse("2026-12-07T10:00:00.000Z");
const iso = (ms: number): string => new Date(ms).toISOString();
const rebootTaint = `sef.azure.com/scheduled-event-reboot=${eventId}:NoSchedule`;

/** Waits on the peer and the worker: each a few loopback requests, so 5 s is ample (and a mutant fails fast). */
const waitFor = <T>(what: string, probe: () => T | undefined | false, options: WaitOptions = {}): Promise<T> =>
  waitLong(what, probe, { timeoutMs: 5_000, ...options });

/** A FakeClock that keeps every wait asked of it (the worker's next look, a drain's poll): what the worker decided. */
class WatchedClock extends FakeClock {
  readonly sleeps: number[] = [];
  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    // A worker that never waits (each wait cut short) would starve the event loop and every timer of the test.
    if (this.sleeps.length >= 20_000) throw new Error("the worker asked for 20,000 waits: it never waits");
    this.sleeps.push(ms);
    return super.sleep(ms, signal);
  }
}

/** Stops the worker within the deadline every shutdown has (the loop ends at its next step boundary). */
async function stopWithin(actions: NodeActions, deadlineMs = 5_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the worker did not stop within ${deadlineMs} ms`)), deadlineMs);
  });
  try {
    await Promise.race([actions.stop(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The real client, counting the calls under way: the worker is parked when none is and it sleeps on the clock. */
function countingApi(api: KubeApi): KubeApi & { inFlight: () => number; closed: () => boolean } {
  let inFlight = 0;
  let closed = false;
  const counted = Object.fromEntries(
    (Object.keys(api) as Array<keyof KubeApi>)
      .filter((name) => name !== "close")
      .map((name) => [
        name,
        async (...args: unknown[]) => {
          inFlight += 1;
          try {
            return await (api[name] as (...a: unknown[]) => Promise<unknown>)(...args);
          } finally {
            inFlight -= 1;
          }
        },
      ]),
  ) as unknown as KubeApi;
  return Object.assign(counted, {
    close: () => {
      closed = true;
      api.close();
    },
    inFlight: () => inFlight,
    closed: () => closed,
  });
}

interface Release {
  eventKey: string;
  holder: string;
  verdict: HoldVerdict;
  reason: string;
}

interface Options {
  settings?: Record<string, unknown>;
  seed?: KubernetesSeed;
  node?: Partial<Parameters<typeof azureNodeSeed>[1]>;
  providerOf?: string;
  /** Loads of the client that fail before one succeeds. */
  failedLoads?: number;
  polled?: boolean;
  self?: { namespace: string; name: string };
}

async function setUp(test: TestContext, options: Options = {}) {
  const clock = new WatchedClock(startMs);
  // The peer stamps objects (a pod's deletionTimestamp) on the same fake clock.
  const peer: KubernetesPeer = await startKubernetesPeer({
    clock: { wallNowMs: () => clock.now(), monotonicNowMs: () => clock.monotonicMs() },
    seed: {
      ...options.seed,
      nodes: [
        azureNodeSeed(options.providerOf ?? vm.VmResourceId, { name: nodeName, ...options.node }),
        ...(options.seed?.nodes ?? []),
      ],
    },
  });
  const kube = countingApi(await createKubeApi({ kubeconfig: peer.kubeconfigPath, requestTimeoutMs: 10_000 }));
  const db = new DatabaseSync(":memory:");
  migrate(db);
  const ledger = new ActionLedger(db);
  // At trace: the worker's "next step now" is a trace line. A worker that never waits (it would starve the event loop,
  // and with it every timer of the test) is stopped by its own log: no test here writes a thousandth of that.
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: "trace" },
    {
      write: (line: string) => {
        if (lines.length >= 20_000) throw new Error("the worker logged 20,000 lines: it never waits");
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  );
  const registry = new Registry();
  const metrics = new KubernetesMetrics(registry);
  const records: KubernetesRecord[] = [];
  const releases: Release[] = [];
  const polled = { value: options.polled ?? true };
  let loads = 0;
  /** Throws from `append` (the store failing inside a step's transaction) for records of these outcomes. */
  const failAppendOf = new Set<string>();
  const settings = kubernetesSettingsSchema.parse({ nodeName, ...options.settings });
  const make = () =>
    new NodeActions({
      settings,
      nodeName,
      self: options.self,
      loadApi: async () => {
        loads += 1;
        if (loads <= (options.failedLoads ?? 0)) throw new Error(`client load ${loads} failed`);
        return kube;
      },
      ledger,
      append: (appended) => {
        for (const r of appended) if (failAppendOf.has(r.Outcome)) throw new Error(`outbox refused ${r.Outcome}`);
        records.push(...appended);
      },
      vm: () => vm,
      release: (key, holder, verdict, reason) => {
        releases.push({ eventKey: key, holder, verdict, reason });
        ledger.release(key, holder, verdict, reason, clock.now());
      },
      hasPolled: () => polled.value,
      clock,
      logger,
      metrics,
      agentVersion: "1.0.0-test",
    });
  const actions = make();
  const running: NodeActions[] = [actions];
  test.onTestFinished(async () => {
    await Promise.all(running.map((a) => stopWithin(a)));
    kube.close();
    await peer.close();
    if (db.isOpen) db.close();
  });
  const upsertEvent = db.prepare(
    "INSERT INTO events(event_key, status, fields, last_seen_ms) VALUES (?, ?, ?, 0) ON CONFLICT(event_key) DO UPDATE SET status = excluded.status, fields = excluded.fields",
  );
  const deleteEvent = db.prepare("DELETE FROM events WHERE event_key = ?");
  const s = {
    db,
    peer,
    kube,
    ledger,
    clock,
    lines,
    records,
    releases,
    polled,
    failAppendOf,
    actions,
    settings,
    loads: () => loads,
    /** A second worker on the same ledger and peer (a restart). */
    restart: () => {
      const again = make();
      running.push(again);
      return again;
    },
    /** The collector commits the event's transition and the runner plans it (holds, rows), as the agent does. */
    commit: (record: TransitionRecord, to: NodeActions = actions) => {
      const key = record.EventId.toLowerCase();
      ledger.transaction(() => {
        if (record.EventStatus === "Completed" || record.EventStatus === "Canceled") deleteEvent.run(key);
        else upsertEvent.run(key, record.EventStatus, JSON.stringify({ NotBefore: record.NotBefore ?? "" }));
        for (const hold of to.holdsFor(record)) ledger.hold(key, hold, clock.now());
        ledger.plan(to.plan(record), clock.now());
      });
      to.committed();
    },
    /** IMDS moved the event's NotBefore (no transition): the store's fields change and a document was read. */
    moveNotBefore: (notBefore: string, to: NodeActions = actions) => {
      upsertEvent.run(eventKey, "Scheduled", JSON.stringify({ NotBefore: notBefore }));
      to.documentRead([eventId]);
    },
    state: (key = actionKey): NodeActionState => JSON.parse(ledger.getStep(key) ?? "null") as NodeActionState,
    row: (key = actionKey) => ledger.get(key),
    /** The worker is parked: no API call under way, and it sleeps on the clock (every probe a macrotask later). */
    parked: async () => {
      await new Promise((resolve) => setImmediate(resolve));
      await waitFor("the worker to park", () => kube.inFlight() === 0 && clock.pendingSleeps > 0);
    },
    node: () => peer.state.node(nodeName)!,
    taints: () =>
      ((s.node().spec as { taints?: Array<{ key: string; value?: string; effect: string }> }).taints ?? []).map(
        (t) => `${t.key}=${t.value ?? ""}:${t.effect}`,
      ),
    cordoned: () => (s.node().spec as { unschedulable?: boolean }).unschedulable === true,
    annotation: (key: string) => s.node().metadata.annotations?.[key],
    nodeEvents: () =>
      peer.state
        .events()
        .map((e) => e as unknown as { reason: string; message: string; type: string })
        .map(({ reason, message, type }) => ({ reason, message, type })),
    metric: async (name: string, labels: Record<string, string> = {}) =>
      metricValue(await registry.metrics(), name, labels),
    logged: (msg: string) => lines.filter((l) => l.msg === msg),
    outcomes: () => records.map((r) => r.Outcome),
  };
  return s;
}

type SetUp = Awaited<ReturnType<typeof setUp>>;

/** The API requests the peer answered, as `verb resource`. */
const resourceRequests = (peer: KubernetesPeer): string[] =>
  peer.state
    .requests()
    .filter((r) => r.resource !== undefined)
    .map((r) => `${r.verb} ${r.resource}`);

/** Who holds drain slot 0 in namespace `default` ("" when free). */
const holderOf = (peer: KubernetesPeer): string | undefined => {
  const lease = peer.state.lease("default", "sef-drain-0");
  return lease === undefined ? undefined : ((lease.spec as { holderIdentity?: string }).holderIdentity ?? "");
};

const reboot = (over: Partial<TransitionRecord> = {}): TransitionRecord =>
  transition({
    EventId: eventId,
    EventType: "Reboot",
    Resources: [vm.VmName],
    NotBefore: iso(startMs + 15 * 60_000),
    ...over,
  });
const detailOf = (record: KubernetesRecord | undefined): Record<string, unknown> =>
  JSON.parse(record?.Detail ?? "{}") as Record<string, unknown>;

/** Starts the worker on an event committed before it, and waits until it has parked after its first steps. */
async function startWith(s: SetUp, record: TransitionRecord): Promise<void> {
  s.commit(record);
  s.actions.start();
  await s.parked();
}

describe("the kubernetes action's worker (node-action.ts) against the Kubernetes API peer", () => {
  it("holds and plans a Scheduled event naming this VM per its policy; none, another VM, other statuses: nothing", async (test) => {
    const s = await setUp(test, { settings: { policy: { Redeploy: "drain", Freeze: "none", other: "taint" } } });
    const record = reboot();
    expect(s.actions.holdsFor(record)).toEqual([{ holder: actionKey, mayApprove: true }]);
    expect(s.actions.plan(record)).toEqual([
      {
        actionKey,
        kind: "kubernetes",
        eventKey,
        eventStatus: "Scheduled",
        name: "drain-then-approve",
        recordJson: JSON.stringify(record),
      },
    ]);
    const redeploy = reboot({ EventType: "Redeploy" });
    expect(s.actions.holdsFor(redeploy)).toEqual([{ holder: actionKey, mayApprove: false }]);
    expect(s.actions.plan(redeploy)).toMatchObject([{ name: "drain" }]);
    expect(s.actions.plan(reboot({ EventType: "Spotless" }))).toMatchObject([{ name: "taint" }]);
    for (const none of [
      reboot({ EventType: "Freeze" }),
      reboot({ AffectsThisVm: false }),
      reboot({ EventStatus: "Started" }),
    ]) {
      expect(s.actions.holdsFor(none)).toEqual([]);
      expect(s.actions.plan(none)).toEqual([]);
    }
    // Completed or Canceled: nothing planned; the node action (when there is one) notes how the event ended.
    for (const ended of ["Completed", "Canceled"] as const) {
      expect(s.actions.holdsFor(reboot({ EventStatus: ended }))).toEqual([]);
      expect(s.actions.plan(reboot({ EventStatus: ended }))).toEqual([]);
    }
    expect(s.ledger.getStep(actionKey)).toBeUndefined();
    s.ledger.setStep(actionKey, JSON.stringify({ phase: "marked", failures: 0 }));
    expect(s.actions.plan(reboot({ EventStatus: "Canceled" }))).toEqual([]);
    expect(s.state()).toEqual({ phase: "marked", failures: 0, endedStatus: "Canceled" });
    expect(s.actions.plan(reboot({ EventStatus: "Completed" }))).toEqual([]);
    expect(s.state()).toEqual({ phase: "marked", failures: 0, endedStatus: "Completed" });
    expect(s.actions.kind).toBe("kubernetes");
    expect(s.actions.runsIn).toBe("worker");
  });

  it("a notice: taint and cordon in one patch, a Cordoned record, a Noticed Event; the drain at NotBefore minus the lead; drained, approved; undone at the end", async (test) => {
    const s = await setUp(test, {
      seed: {
        pods: [
          {
            name: "web-0",
            namespace: "apps",
            nodeName,
            labels: { app: "web" },
            ownerReferences: [{ kind: "ReplicaSet", name: "web" }],
            stopsAfterSeconds: 0,
          },
        ],
        // Its controller brings it back at once, tolerating this event's taint: left where it is.
        returningPods: [
          {
            namespace: "apps",
            matchLabels: { app: "web" },
            delayMs: 0,
            maxReturns: 1,
            tolerations: [
              { key: "sef.azure.com/scheduled-event-reboot", operator: "Equal", value: eventId, effect: "NoSchedule" },
            ],
          },
        ],
      },
    });
    // The drain starts 10 min before NotBefore: 30 s after the notice.
    const notBefore = iso(startMs + 10 * 60_000 + 30_000);
    await startWith(s, reboot({ NotBefore: notBefore }));
    expect(s.logged("Kubernetes client loaded; the kubernetes action is ready")).toHaveLength(1);
    // The node read once, marked in one patch, a Node Event.
    expect(resourceRequests(s.peer)).toEqual(["get nodes", "patch nodes", "create events"]);
    expect(s.taints()).toEqual([rebootTaint]);
    expect(s.cordoned()).toBe(true);
    expect(s.annotation(markAnnotationKey(eventId))).toContain(`"policy":"drain-then-approve"`);
    expect(s.outcomes()).toEqual(["Cordoned"]);
    expect(s.records[0]).toMatchObject({ EventId: eventId, EventStatus: "Scheduled", HttpStatus: 0, ElapsedMs: 0 });
    expect(detailOf(s.records[0])).toEqual({ node: nodeName, policy: "drain-then-approve", taint: rebootTaint });
    expect(s.row()).toMatchObject({ status: "running", attempts: 1, reason: "" });
    expect(s.state()).toMatchObject({ phase: "marked", failures: 0 });
    expect(s.nodeEvents()).toEqual([
      {
        reason: "ScheduledEventNoticed",
        type: "Normal",
        message: `Reboot ${eventId} scheduled (NotBefore ${notBefore}): tainted and cordoned by sef (policy drain-then-approve)`,
      },
    ]);
    expect(await s.metric("sef_kubernetes_steps_total", { outcome: "Cordoned" })).toBe(1);
    expect(s.clock.sleeps.at(-1)).toBe(30_000);
    expect(s.peer.state.evictions()).toEqual([]);

    // 29 s later: still waiting; at 30 s the drain starts.
    const sleepsBefore = s.clock.sleeps.length;
    await s.clock.advance(29_999);
    await s.parked();
    expect(s.outcomes()).toEqual(["Cordoned"]);
    expect(s.clock.sleeps).toHaveLength(sleepsBefore);
    await s.clock.advance(1);
    await waitFor("the drain's first eviction", () => s.peer.state.evictions().length === 1);
    await s.parked();
    const deadline = iso(Date.parse(notBefore) - 5_000);
    expect(s.outcomes()).toEqual(["Cordoned", "Draining"]);
    expect(detailOf(s.records[1])).toEqual({ node: nodeName, policy: "drain-then-approve", deadline });
    expect(s.state()).toMatchObject({ phase: "draining", drainStartedAtMs: startMs + 30_000, failures: 0 });
    expect(s.nodeEvents()[1]).toEqual({
      reason: "ScheduledEventDraining",
      type: "Normal",
      message: `draining for Reboot ${eventId}: evicting pods until ${deadline}`,
    });
    // The pod goes and comes back tolerating the taint; the next look (podPollMs later) leaves it.
    const back = await waitFor("the pod to come back", () => s.peer.state.returnedPods()[0]?.pod);
    await waitFor("the pod to go", () => s.peer.state.pods({ nodeName }).length === 1 || undefined);
    await s.clock.advance(2_000);
    await waitFor("the Drained record", () => s.outcomes().includes("Drained") || undefined);
    await s.parked();
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "Drained"]);
    expect(detailOf(s.records[2])).toMatchObject({
      node: nodeName,
      policy: "drain-then-approve",
      podsEvicted: 1,
      podsArrivedTolerating: [back],
    });
    expect(s.records[2]!.ElapsedMs).toBe(1_000);
    expect(s.annotation(markAnnotationKey(eventId))).toContain(`"drainedAt":"${iso(startMs + 31_000)}"`);
    expect(s.nodeEvents()[2]).toEqual({
      reason: "ScheduledEventDrained",
      type: "Normal",
      message: `drained for Reboot ${eventId} in 1 s: 1 pods evicted, 0 held by a PodDisruptionBudget`,
    });
    expect(await s.metric("sef_kubernetes_evictions_total", { outcome: "evicted" })).toBe(1);
    expect(await s.metric("sef_kubernetes_drain_duration_seconds_count", { outcome: "drained" })).toBe(1);
    expect(await s.metric("sef_kubernetes_drain_duration_seconds_sum", { outcome: "drained" })).toBe(1);
    expect(s.releases).toEqual([{ eventKey, holder: actionKey, verdict: "approve", reason: drainedReason }]);
    expect(s.state()).toMatchObject({ phase: "settled", failures: 0, podsLeft: [] });
    expect(s.row()).toMatchObject({ status: "running", attempts: 1 });
    expect(s.clock.sleeps.at(-1)).toBe(60_000);

    // Started: the node stays as it is; Completed: the marks come off, the row succeeds.
    s.commit(reboot({ NotBefore: notBefore, EventStatus: "Started" }));
    await s.parked();
    expect(s.cordoned()).toBe(true);
    s.commit(reboot({ NotBefore: notBefore, EventStatus: "Completed" }));
    await waitFor("the row to finish", () => s.row()?.status === "succeeded" || undefined);
    await s.parked();
    expect(s.cordoned()).toBe(false);
    expect(s.taints()).toEqual([]);
    expect(s.annotation(markAnnotationKey(eventId))).toBeUndefined();
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "Drained", "Uncordoned"]);
    expect(s.records[3]).toMatchObject({ EventStatus: "Completed" });
    expect(detailOf(s.records[3])).toEqual({ node: nodeName, policy: "drain-then-approve" });
    expect(s.row()).toMatchObject({ status: "succeeded", reason: "uncordoned and untainted" });
    expect(s.logged("the event is over and none of sef's marks for it is on the node (taken off already)")).toEqual([]);
    expect(s.state()).toMatchObject({ phase: "done", endedStatus: "Completed" });
    expect(await s.metric("sef_kubernetes_steps_total", { outcome: "Uncordoned" })).toBe(1);
    expect(await s.metric("sef_kubernetes_steps_total", { outcome: "Drained" })).toBe(1);
    expect(await s.metric("sef_kubernetes_steps_total", { outcome: "Draining" })).toBe(1);
    // With no node action left, a document wakes the worker only when its events change (the reconciliation).
    s.actions.documentRead([]);
    await s.parked();
    const sleeps = s.clock.sleeps.length;
    s.actions.documentRead([]);
    await s.parked();
    expect(s.clock.sleeps).toHaveLength(sleeps);
  });

  it("taint only: a Tainted record, no cordon and no drain, the hold released done; Canceled: untainted, Released", async (test) => {
    const s = await setUp(test, { settings: { policy: { Freeze: "taint" }, excludeFromLoadBalancers: false } });
    const freeze = reboot({ EventType: "Freeze" });
    await startWith(s, freeze);
    const taint = `sef.azure.com/scheduled-event-freeze=${eventId}:NoSchedule`;
    expect(s.taints()).toEqual([taint]);
    expect(s.cordoned()).toBe(false);
    expect(s.node().metadata.labels?.["node.kubernetes.io/exclude-from-external-load-balancers"]).toBeUndefined();
    expect(s.outcomes()).toEqual(["Tainted"]);
    expect(detailOf(s.records[0])).toEqual({ node: nodeName, policy: "taint", taint });
    expect(s.nodeEvents().map((e) => e.message)).toEqual([
      `Freeze ${eventId} scheduled (NotBefore ${freeze.NotBefore}): tainted by sef (policy taint)`,
    ]);
    expect(s.releases).toEqual([{ eventKey, holder: actionKey, verdict: "done", reason: "" }]);
    expect(s.state().phase).toBe("settled");
    expect(s.logged("not approving after the drain")).toEqual([]);
    s.commit({ ...freeze, EventStatus: "Canceled" });
    await waitFor("the row to finish", () => s.row()?.status === "succeeded" || undefined);
    await s.parked();
    expect(s.taints()).toEqual([]);
    expect(s.outcomes()).toEqual(["Tainted", "Released"]);
    expect(s.records[1]).toMatchObject({ EventStatus: "Canceled" });
    expect(s.row()).toMatchObject({ reason: "untainted" });
    expect(s.peer.state.evictions()).toEqual([]);
  });

  it("an operator's cordon is kept at the undo (only sef's cordon is taken off); a NotBefore-less event is marked 'unknown'", async (test) => {
    const s = await setUp(test, { node: { unschedulable: true }, settings: { policy: { Reboot: "cordon" } } });
    await startWith(s, reboot({ NotBefore: null }));
    expect(s.outcomes()).toEqual(["Cordoned"]);
    expect(s.nodeEvents()[0]!.message).toBe(
      `Reboot ${eventId} scheduled (NotBefore unknown): tainted and cordoned by sef (policy cordon)`,
    );
    expect(s.releases).toEqual([{ eventKey, holder: actionKey, verdict: "done", reason: "" }]);
    s.commit(reboot({ NotBefore: null, EventStatus: "Completed" }));
    await waitFor("the row to finish", () => s.row()?.status === "succeeded" || undefined);
    await s.parked();
    expect(s.taints()).toEqual([]);
    expect(s.cordoned()).toBe(true);
    expect(s.outcomes()).toEqual(["Cordoned", "Released"]);
    expect(detailOf(s.records[1])).toHaveProperty("keptCordoned");
    expect(s.row()).toMatchObject({ reason: "untainted" });
  });

  it("an event over before the node was touched is skipped; one whose marks someone took off finishes with nothing to undo", async (test) => {
    const s = await setUp(test, { polled: false });
    s.commit(reboot());
    s.actions.start();
    await s.parked();
    expect(s.clock.sleeps.at(-1)).toBe(100); // waits for the first poll
    s.commit(reboot({ EventStatus: "Canceled" }));
    s.polled.value = true;
    await s.clock.advance(100);
    await waitFor("the row to be skipped", () => s.row()?.status === "skipped" || undefined);
    await s.parked();
    // No step was persisted before the Canceled transition, so the end is not known: reported as Completed.
    const why = "the event was Completed before the node was touched";
    expect(s.row()).toMatchObject({ reason: why });
    expect(s.releases).toEqual([{ eventKey, holder: actionKey, verdict: "done", reason: why }]);
    expect(s.records).toEqual([]);
    expect(s.peer.state.nodeWrites()).toEqual([]);

    // A second event, marked, then its marks taken off by someone; Completed without a Completed transition's note.
    const other = "6EE66B82-A6CF-4C8F-B9B3-AD5B3F8D9B22";
    const otherKey = nodeActionKey(other.toLowerCase());
    s.commit(reboot({ EventId: other, NotBefore: iso(startMs + 60 * 60_000) }));
    await waitFor("the second event's mark", () => s.outcomes().includes("Cordoned") || undefined);
    await s.parked();
    s.peer.state.updateNode(nodeName, (n) => {
      n.metadata.annotations = {};
      (n.spec as { taints?: unknown[] }).taints = [];
      (n.spec as { unschedulable?: boolean }).unschedulable = false;
    });
    s.ledger.transaction(() => s.ledger.setStep(otherKey, JSON.stringify({ ...s.state(otherKey), endedStatus: null })));
    s.commit(reboot({ EventId: other, EventStatus: "Completed", NotBefore: iso(startMs + 60 * 60_000) }));
    await waitFor("the row to finish", () => s.row(otherKey)?.status === "succeeded" || undefined);
    await s.parked();
    expect(s.row(otherKey)).toMatchObject({ reason: "nothing of sef's was left on the node" });
    expect(s.state(otherKey).phase).toBe("done");
    expect(s.outcomes()).toEqual(["Cordoned"]);
    expect(s.logged("the event is over and none of sef's marks for it is on the node (taken off already)")).toEqual([
      expect.objectContaining({ level: 30, eventId: other }),
    ]);
  });

  it("a node that is not this VM: nothing done to it, the row skipped and the hold released", async (test) => {
    const s = await setUp(test, { providerOf: `${vm.VmResourceId}0` });
    await startWith(s, reboot());
    const providerID = `azure://${vm.VmResourceId}0`;
    const why = `node ${nodeName} is not this VM (providerID "${providerID}", VM resource id "${vm.VmResourceId}"): nothing done to it`;
    expect(s.row()).toMatchObject({ status: "skipped", reason: why });
    expect(s.releases).toEqual([{ eventKey, holder: actionKey, verdict: "done", reason: why }]);
    expect(s.peer.state.nodeWrites()).toEqual([]);
    expect(s.records).toEqual([]);
    expect(await s.metric("sef_kubernetes_node_mismatch_total")).toBe(1);
    expect(s.logged("the node is not this VM; the kubernetes action does nothing")).toEqual([
      expect.objectContaining({
        level: 40,
        eventId,
        node: nodeName,
        providerID,
        vmResourceId: vm.VmResourceId,
      }),
    ]);
  });

  it("a dry run changes nothing: records say what would be done, the row succeeds", async (test) => {
    const s = await setUp(test, { settings: { dryRun: true } });
    await startWith(s, reboot());
    expect(s.peer.state.nodeWrites()).toEqual([]);
    expect(s.records.length).toBeGreaterThan(0);
    expect(s.row()?.status).toBe("succeeded");
    expect(s.releases.map((r) => r.verdict)).toEqual(["done"]);
  });

  it("an incomplete drain: a DrainIncomplete record naming the pods left, a Warning Event, a warning, no drained mark, declined", async (test) => {
    const s = await setUp(test, {
      seed: { pods: [{ name: "bare", namespace: "apps", nodeName }] },
      settings: { drainLeadMs: 60 * 60_000 },
    });
    const notBefore = iso(startMs + 15 * 60_000);
    await startWith(s, reboot({ NotBefore: notBefore }));
    await waitFor("the drain's end", () => s.outcomes().includes("DrainIncomplete") || undefined);
    await s.parked();
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "DrainIncomplete"]);
    const deadline = iso(Date.parse(notBefore) - 5_000);
    expect(detailOf(s.records[2])).toMatchObject({
      policy: "drain-then-approve",
      podsLeft: ["apps/bare"],
      podsWithoutController: ["apps/bare"],
      deadline,
    });
    const why = detailOf(s.records[2]).incompleteBecause as string;
    expect(s.state()).toMatchObject({ phase: "settled", podsLeft: ["apps/bare"], failures: 0 });
    expect(s.annotation(markAnnotationKey(eventId))).not.toContain("drainedAt");
    expect(s.nodeEvents()[2]).toEqual({
      reason: "ScheduledEventDrainIncomplete",
      type: "Warning",
      message: `drain for Reboot ${eventId} incomplete (${why}): 1 pods left: apps/bare`,
    });
    expect(s.logged("drain incomplete")).toEqual([
      expect.objectContaining({ level: 40, eventId, podsLeft: ["apps/bare"], why }),
    ]);
    expect(await s.metric("sef_kubernetes_drain_duration_seconds_count", { outcome: "incomplete" })).toBe(1);
    expect(s.releases).toEqual([{ eventKey, holder: actionKey, verdict: "decline", reason: incompleteReason }]);
  });

  it("at a Preempt's deadline the pods a budget holds are deleted with the time left as grace, named in the Event", async (test) => {
    const s = await setUp(test, {
      seed: {
        pods: [
          ...["db-0", "db-1"].map((name) => ({
            name,
            namespace: "apps",
            nodeName,
            labels: { app: "db" },
            ownerReferences: [{ kind: "StatefulSet", name: "db" }],
            stopsAfterSeconds: 0,
          })),
        ],
        podDisruptionBudgets: [{ name: "db", namespace: "apps", matchLabels: { app: "db" }, blockForMs: "forever" }],
      },
      settings: { noExecuteTaintAfterDrain: true },
    });
    const notBefore = iso(startMs + 30_000);
    await startWith(s, reboot({ EventType: "Preempt", NotBefore: notBefore }));
    expect(s.outcomes()).toEqual(["Cordoned", "Draining"]);
    // Refusals retried until the deadline (NotBefore - 5 s), then the pod deleted with the 5 s left. Time stops at the
    // deadline itself, so the worker's steps there (real requests) read the clock before it moves on.
    const deadlineMs = Date.parse(notBefore) - 5_000;
    for (let i = 0; i < 40 && !s.outcomes().includes("DrainIncomplete"); i++) {
      const toDeadlineMs = deadlineMs - s.clock.now();
      await s.clock.advance(toDeadlineMs > 0 ? Math.min(1_000, toDeadlineMs) : 1_000);
      await s.parked();
    }
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "DrainIncomplete"]);
    const detail = detailOf(s.records[2]);
    expect(detail).toMatchObject({
      podsDeletedAtDeadline: ["apps/db-0", "apps/db-1"],
      podsBlockedByPdb: ["apps/db-0", "apps/db-1"],
    });
    const grace = detail.deadlineGraceSeconds as number;
    expect(grace).toBe(5); // NotBefore is 5 s (deadlineReserveMs) after the deadline
    expect(s.nodeEvents()[2]!.message).toBe(
      `drain for Preempt ${eventId} incomplete (${detail.incompleteBecause as string}): 2 pods left: apps/db-0, apps/db-1; deleted at the deadline with ${grace} s grace: apps/db-0, apps/db-1`,
    );
    expect(s.taints()).toEqual([`sef.azure.com/scheduled-event-preempt=${eventId}:NoSchedule`]);
  });

  it("maxConcurrentDrains: waits for a slot (one Waiting record), drains once another node frees it, frees it after", async (test) => {
    const holder = "aks-pool1-00000000-vmss000009";
    const s = await setUp(test, {
      self: { namespace: "sef-system", name: "sef-abc" },
      settings: { maxConcurrentDrains: { limit: 1 }, drainLeadMs: 60 * 60_000 },
      seed: {
        namespaces: ["sef-system"],
        leases: [
          {
            name: "sef-drain-0",
            namespace: "sef-system",
            holderIdentity: holder,
            leaseDurationSeconds: 60,
            renewTime: "2026-12-07T10:00:00.000000Z",
          },
        ],
      },
    });
    await startWith(s, reboot());
    const reason = "1 nodes of the cluster are draining (maxConcurrentDrains): waiting for a drain slot";
    expect(s.outcomes()).toEqual(["Cordoned", "Waiting"]);
    expect(detailOf(s.records[1])).toEqual({ node: nodeName, policy: "drain-then-approve", reason });
    expect(s.records[1]).toMatchObject({ EventStatus: "Scheduled" });
    expect(s.state()).toMatchObject({ phase: "marked", waitingForSlot: true });
    expect(s.logged(reason)).toEqual([expect.objectContaining({ level: 30, eventId })]);
    expect(s.clock.sleeps.at(-1)).toBe(2_000);
    await s.clock.advance(2_000);
    await s.parked();
    expect(s.outcomes()).toEqual(["Cordoned", "Waiting"]);
    expect(s.clock.sleeps.at(-1)).toBe(2_000);
    // The other node stopped renewing its slot: free once its lease duration has passed.
    s.clock.jump(58_000);
    await s.clock.advance(2_000);
    await waitFor("the drain's end", () => s.outcomes().includes("Drained") || undefined, {
      detail: () =>
        JSON.stringify([
          s.outcomes(),
          s.peer.state.requests().map((r) => `${r.verb} ${r.resource} ${r.code}`),
          s.clock.sleeps,
          s.clock.pendingSleeps,
          s.state(),
        ]),
      timeoutMs: 3000,
    });
    await s.parked();
    expect(s.outcomes()).toEqual(["Cordoned", "Waiting", "Draining", "Drained"]);
    const holders = s.peer.state.leaseWrites().map((w) => (w as unknown as { holderIdentity: string }).holderIdentity);
    expect(holders).toEqual([nodeName, ""]);
    expect(s.peer.state.leases("default")).toEqual([]);
  });

  it("a failed step: one Failed record, then the policy's backoff; a 409 is taken again at once; the event Canceled before the node was touched: skipped", async (test) => {
    const s = await setUp(test, {
      seed: {
        faults: [
          { match: { verbs: ["patch"], resources: ["nodes"] }, answer: { kind: "internal-error" }, count: 2 },
          {
            match: { verbs: ["patch"], resources: ["nodes"] },
            answer: { kind: "status", code: 409, reason: "Conflict", message: "the object has been modified" },
            count: 1,
          },
        ],
      },
    });
    await startWith(s, reboot());
    expect(s.outcomes()).toEqual(["Failed"]);
    expect(s.records[0]).toMatchObject({ EventStatus: "Scheduled", HttpStatus: 500 });
    expect(detailOf(s.records[0])).toEqual({
      node: nodeName,
      policy: "drain-then-approve",
      error: expect.stringContaining("etcdserver: leader changed") as string,
    });
    expect(s.state()).toMatchObject({ phase: "planned", failures: 1 });
    expect(s.row()?.status).toBe("pending");
    expect(s.logged("a kubernetes step failed; trying again")).toEqual([
      expect.objectContaining({ level: 50, action: actionKey, status: 500 }),
    ]);
    expect(await s.metric("sef_kubernetes_api_errors_total")).toBe(1);
    expect(await s.metric("sef_kubernetes_steps_total", { outcome: "Failed" })).toBe(1);
    // The first retry after 0.5–1 s (1 s with equal jitter), the second after 1–2 s: no second Failed record.
    const first = s.clock.sleeps.at(-1)!;
    expect(first).toBeGreaterThanOrEqual(500);
    expect(first).toBeLessThanOrEqual(1_000);
    await s.clock.advance(first);
    await s.parked();
    expect(s.outcomes()).toEqual(["Failed"]);
    expect(s.state()).toMatchObject({ phase: "planned", failures: 2 });
    const second = s.clock.sleeps.at(-1)!;
    expect(second).toBeGreaterThanOrEqual(1_000);
    expect(second).toBeLessThanOrEqual(2_000);
    expect(await s.metric("sef_kubernetes_api_errors_total")).toBe(2);
    expect(await s.metric("sef_kubernetes_steps_total", { outcome: "Failed" })).toBe(1);
    // The third try meets a 409: looked at again 20 ms later, and marked.
    await s.clock.advance(second);
    await s.parked();
    expect(s.state()).toMatchObject({ phase: "planned", failures: 3 });
    expect(s.clock.sleeps.at(-1)).toBe(20);
    expect(s.logged("a kubernetes step failed; trying again").at(-1)).toMatchObject({ status: 409 });
    await s.clock.advance(20);
    await waitFor("the mark", () => s.outcomes().includes("Cordoned") || undefined);
    await s.parked();
    expect(s.outcomes()).toEqual(["Failed", "Cordoned"]);
    expect(s.state()).toMatchObject({ phase: "marked", failures: 0 });

    // Another event whose first step fails, Canceled before a second try: skipped, saying so.
    const other = "6EE66B82-A6CF-4C8F-B9B3-AD5B3F8D9B22";
    const otherKey = nodeActionKey(other.toLowerCase());
    s.peer.state.injectFault({
      match: { verbs: ["get"], resources: ["nodes"] },
      answer: { kind: "forbidden" },
      count: 1,
    });
    s.commit(reboot({ EventId: other }));
    await waitFor("the failed step", () => s.state(otherKey)?.failures === 1 || undefined);
    await s.parked();
    expect(s.records.at(-1)).toMatchObject({ EventId: other, Outcome: "Failed", HttpStatus: 403 });
    s.commit(reboot({ EventId: other, EventStatus: "Canceled" }));
    await waitFor("the row to be skipped", () => s.row(otherKey)?.status === "skipped" || undefined);
    await s.parked();
    expect(s.row(otherKey)?.reason).toBe("the event was Canceled before the node was touched");
  });

  it("the store failing inside a step: the step fails (status 0) and is taken again; failing to record it too: logged, 10 s", async (test) => {
    const s = await setUp(test);
    s.failAppendOf.add("Cordoned");
    s.failAppendOf.add("Failed");
    await startWith(s, reboot());
    expect(s.records).toEqual([]);
    expect(s.logged("could not record a failed kubernetes step")).toEqual([
      expect.objectContaining({
        level: 50,
        err: expect.objectContaining({ message: "outbox refused Failed" }) as unknown,
      }),
    ]);
    expect(s.clock.sleeps.at(-1)).toBe(10_000);
    expect(s.ledger.getStep(actionKey)).toBeUndefined();
    s.failAppendOf.delete("Failed");
    await s.clock.advance(10_000);
    await s.parked();
    expect(s.outcomes()).toEqual(["Failed"]);
    expect(s.records[0]).toMatchObject({ HttpStatus: 0 });
    expect(detailOf(s.records[0]).error).toBe("outbox refused Cordoned");
    expect(s.logged("a kubernetes step failed; trying again").at(-1)).toMatchObject({ level: 50, status: 0 });
    expect(s.state()).toMatchObject({ phase: "planned", failures: 1 });
    s.failAppendOf.clear();
    await s.clock.advance(1_000);
    await waitFor("the mark", () => s.outcomes().includes("Cordoned") || undefined);
    expect(s.outcomes()).toEqual(["Failed", "Cordoned"]);
  });

  it("a client that does not load is loaded again after the policy's wait; no step is taken before it loads", async (test) => {
    const s = await setUp(test, { failedLoads: 2 });
    s.commit(reboot());
    s.actions.start();
    await waitFor("the failed load", () => s.logged("could not load the Kubernetes client; trying again").length === 1);
    expect(s.logged("could not load the Kubernetes client; trying again")).toEqual([
      expect.objectContaining({
        level: 50,
        err: expect.objectContaining({ message: "client load 1 failed" }) as unknown,
      }),
    ]);
    expect(s.clock.sleeps).toHaveLength(1);
    const wait = s.clock.sleeps[0]!;
    expect(wait).toBeGreaterThanOrEqual(500);
    expect(wait).toBeLessThanOrEqual(1_000);
    expect(s.records).toEqual([]);
    expect(s.peer.state.requests().filter((r) => r.resource !== undefined)).toEqual([]);
    await s.clock.advance(wait);
    await waitFor("the second failed load", () => s.clock.sleeps.length === 2);
    const second = s.clock.sleeps[1]!;
    expect(second).toBeGreaterThanOrEqual(1_000);
    expect(second).toBeLessThanOrEqual(2_000);
    await s.clock.advance(second);
    await waitFor("the mark", () => s.outcomes().includes("Cordoned") || undefined);
    await s.parked();
    expect(s.logged("Kubernetes client loaded; the kubernetes action is ready")).toHaveLength(1);
    expect(s.loads()).toBe(3);
    expect(s.outcomes()).toEqual(["Cordoned"]);
  });

  it("a NotBefore IMDS moved is looked at again at once; the same NotBefore is not", async (test) => {
    const s = await setUp(test, { settings: { policy: { Reboot: "drain" } } });
    await startWith(s, reboot({ NotBefore: iso(startMs + 60 * 60_000) }));
    expect(s.outcomes()).toEqual(["Cordoned"]);
    expect(s.clock.sleeps.at(-1)).toBe(60_000); // the drain is 50 min away: looked at again in a minute at most
    s.moveNotBefore(iso(startMs + 10 * 60_000 + 5_000));
    await s.parked();
    expect(s.clock.sleeps.at(-1)).toBe(5_000);
    // The step ended while the node was read for the document: the worker looked again without waiting.
    expect(s.logged("kubernetes action: next step now")).toEqual([expect.objectContaining({ level: 10 })]);
    await s.clock.advance(5_000);
    await waitFor("the drain", () => s.outcomes().includes("Drained") || undefined);
    await s.parked();
    expect(s.releases).toEqual([{ eventKey, holder: actionKey, verdict: "done", reason: "" }]);
    expect(s.clock.sleeps.at(-1)).toBe(60_000);
    // Ten seconds later the same NotBefore again: nothing to look at (the settled action is due in 50 s).
    await s.clock.advance(10_000);
    await s.parked();
    s.moveNotBefore(iso(startMs + 10 * 60_000 + 5_000));
    await s.parked();
    expect(s.clock.sleeps.at(-1)).toBe(50_000);
    // Moved again: looked at now (due again in a minute).
    s.moveNotBefore(iso(startMs + 20 * 60_000));
    await s.parked();
    expect(s.clock.sleeps.at(-1)).toBe(60_000);
  });

  it("a drain stopped by the agent resumes after a restart, and one whose NotBefore moved follows the new deadline", async (test) => {
    const s = await setUp(test, {
      settings: { drainLeadMs: 60 * 60_000, maxConcurrentDrains: { limit: 2 } },
      seed: {
        pods: [
          {
            name: "web-0",
            namespace: "apps",
            nodeName,
            ownerReferences: [{ kind: "ReplicaSet", name: "web" }],
            stopsAfterSeconds: "never",
          },
        ],
      },
    });
    const notBefore = iso(startMs + 30 * 60_000);
    await startWith(s, reboot({ NotBefore: notBefore }));
    expect(s.outcomes()).toEqual(["Cordoned", "Draining"]);
    expect(s.peer.state.evictions()).toHaveLength(1);
    expect(holderOf(s.peer)).toBe(nodeName);
    expect(s.state().drain).toMatchObject({ evicted: ["apps/web-0"] }); // saved after the round that evicted it
    await stopWithin(s.actions);
    expect(s.kube.closed()).toBe(true);
    expect(s.state()).toMatchObject({ phase: "draining", drain: { outcome: "interrupted", evicted: ["apps/web-0"] } });
    // Restarted: the drain goes on from its progress (the pod is not evicted again) and takes its slot up again.
    const again = s.restart();
    const writes = s.peer.state.leaseWrites().length;
    again.start();
    await s.parked();
    expect(s.peer.state.evictions()).toHaveLength(1);
    expect(s.peer.state.leaseWrites().length).toBeGreaterThan(writes);
    expect(holderOf(s.peer)).toBe(nodeName);
    // NotBefore moves to 2 min from now: the drain stops and runs again to the new deadline, leaving the pod.
    const sooner = iso(startMs + 2 * 60_000);
    s.moveNotBefore(sooner, again);
    for (let i = 0; i < 200 && !s.outcomes().includes("DrainIncomplete"); i++) {
      await s.clock.advance(1_000);
      await s.parked();
    }
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "DrainIncomplete"]);
    expect(detailOf(s.records[2])).toMatchObject({
      deadline: iso(Date.parse(sooner) - 5_000),
      podsLeft: ["apps/web-0"],
      podsEvicted: 1,
    });
    expect(s.clock.now()).toBeLessThan(Date.parse(sooner));
    // Its slot is freed once the drain is over.
    expect(holderOf(s.peer)).toBe("");
  });

  it("reconciles the node with each document: a mark no event owns comes off, its own stays; the same list again reads nothing", async (test) => {
    const gone = "C0000000-0000-4000-8000-000000000003";
    const s = await setUp(test, {
      node: {
        annotations: {
          [markAnnotationKey(gone)]: encodeMark({
            eventId: gone,
            eventType: "Redeploy",
            notBefore: iso(startMs - 60_000),
            policy: "taint",
            cordoned: false,
            markedAt: iso(startMs - 600_000),
          }),
        },
        taints: [{ key: "sef.azure.com/scheduled-event-redeploy", value: gone, effect: "NoSchedule" }],
      },
    });
    await startWith(s, reboot({ NotBefore: iso(startMs + 60 * 60_000) }));
    expect(s.outcomes()).toEqual(["Cordoned"]);
    const sleeps = s.clock.sleeps.length;
    // A document listing neither event: the other event's mark comes off now; this one's stays (its action owns it).
    s.actions.documentRead([]);
    await waitFor("the reconciliation", () => s.outcomes().includes("Released") || undefined);
    await s.parked();
    expect(s.records[1]).toMatchObject({ EventId: gone, EventStatus: "Completed", Outcome: "Released" });
    expect(s.taints()).toEqual([rebootTaint]);
    expect(s.annotation(markAnnotationKey(eventId))).toBeDefined();
    expect(s.clock.sleeps.length).toBeGreaterThan(sleeps);
    // The same document again: the node is not read again (the worker looks only at its action's NotBefore).
    const reads = s.peer.state.requests().length;
    s.actions.documentRead([]);
    await s.parked();
    expect(s.peer.state.requests()).toHaveLength(reads);
    expect(s.outcomes()).toEqual(["Cordoned", "Released"]);
  });

  it("a worker with nothing to do is not woken by documents; one whose store fails logs that it stopped", async (test) => {
    const s = await setUp(test);
    s.actions.start();
    await s.parked();
    // The first document: the node is reconciled with it at once.
    s.actions.documentRead([]);
    await waitFor("the node's reconciliation", () => s.peer.state.requests().some((r) => r.resource === "nodes"));
    await s.parked();
    const sleeps = s.clock.sleeps.length;
    s.actions.documentRead([]);
    s.actions.documentRead([]);
    await s.parked();
    expect(s.clock.sleeps).toHaveLength(sleeps);
    s.db.close();
    s.actions.committed();
    await waitFor("the worker's end", () => s.logged("kubernetes action failed").length === 1);
    expect(s.logged("kubernetes action failed")).toEqual([
      expect.objectContaining({ level: 50, err: expect.objectContaining({ type: "Error" }) as unknown }),
    ]);
    await stopWithin(s.actions);
  });

  it("under maxConcurrentDrains, a drain whose deadline has come runs without a slot", async (test) => {
    const s = await setUp(test, {
      settings: { maxConcurrentDrains: { limit: 1 } },
      seed: {
        leases: [
          {
            name: "sef-drain-0",
            namespace: "default",
            holderIdentity: "aks-pool1-00000000-vmss000009",
            leaseDurationSeconds: 600,
            renewTime: "2026-12-07T10:00:00.000000Z",
          },
        ],
      },
    });
    // The deadline (NotBefore - 5 s) comes 16 s after the notice, at the 8th look for a slot.
    await startWith(s, reboot({ NotBefore: iso(startMs + 21_000) }));
    expect(s.outcomes()).toEqual(["Cordoned", "Waiting"]);
    for (let i = 0; i < 8; i++) {
      await s.clock.advance(2_000);
      await s.parked();
    }
    await waitFor("the drain", () => s.outcomes().includes("Drained") || undefined);
    expect(s.outcomes()).toEqual(["Cordoned", "Waiting", "Draining", "Drained"]);
    expect(s.state().drainStartedAtMs).toBe(startMs + 16_000);
    expect(holderOf(s.peer)).toBe("aks-pool1-00000000-vmss000009");
    expect(s.peer.state.leaseWrites()).toEqual([]);
  });

  it("a drain slot that cannot be renewed or freed is logged and the drain goes on; one not taken up after a restart too", async (test) => {
    const s = await setUp(test, {
      settings: { maxConcurrentDrains: { limit: 1, leaseDurationSeconds: 3 }, drainLeadMs: 60 * 60_000 },
      seed: {
        pods: [
          {
            name: "web-0",
            namespace: "apps",
            nodeName,
            ownerReferences: [{ kind: "ReplicaSet", name: "web" }],
            stopsAfterSeconds: "never",
          },
        ],
      },
    });
    await startWith(s, reboot({ NotBefore: iso(startMs + 60_000) }));
    expect(holderOf(s.peer)).toBe(nodeName);
    s.peer.state.injectFault({ match: { resources: ["leases"] }, answer: { kind: "internal-error" } });
    await s.clock.advance(2_000);
    await s.parked();
    expect(s.logged("could not renew the drain slot")).toEqual([
      expect.objectContaining({ level: 40, err: expect.objectContaining({ type: "KubeApiError" }) as unknown }),
    ]);
    // A restart: the slot cannot be taken up (logged); the drain goes on.
    await stopWithin(s.actions);
    const again = s.restart();
    again.start();
    await s.parked();
    expect(s.logged("could not take up the drain slot")).toEqual([
      expect.objectContaining({ level: 40, err: expect.objectContaining({ type: "KubeApiError" }) as unknown }),
    ]);
    s.peer.state.clearFaults();
    await stopWithin(again);
    const third = s.restart();
    third.start();
    await s.parked();
    s.peer.state.injectFault({ match: { resources: ["leases"] }, answer: { kind: "internal-error" } });
    for (let i = 0; i < 60 && !s.outcomes().includes("DrainIncomplete"); i++) {
      await s.clock.advance(1_000);
      await s.parked();
    }
    await waitFor("the drain's end", () => s.outcomes().includes("DrainIncomplete") || undefined);
    await s.parked();
    expect(s.logged("could not free the drain slot")).toEqual([
      expect.objectContaining({ level: 40, err: expect.objectContaining({ type: "KubeApiError" }) as unknown }),
    ]);
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "DrainIncomplete"]);
  });

  it("an event over mid-drain: the drain stops and sef's marks come off", async (test) => {
    const s = await setUp(test, {
      settings: { drainLeadMs: 60 * 60_000 },
      seed: {
        pods: [
          {
            name: "web-0",
            namespace: "apps",
            nodeName,
            ownerReferences: [{ kind: "ReplicaSet", name: "web" }],
            stopsAfterSeconds: "never",
          },
        ],
      },
    });
    await startWith(s, reboot());
    expect(s.outcomes()).toEqual(["Cordoned", "Draining"]);
    s.commit(reboot({ EventStatus: "Completed" }));
    await s.clock.advance(1_000);
    await waitFor("the undo", () => s.row()?.status === "succeeded" || undefined);
    await s.parked();
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "Uncordoned"]);
    expect(s.cordoned()).toBe(false);
  });

  it("an undo that fails is persisted as undoing and taken again", async (test) => {
    const s = await setUp(test, { settings: { policy: { Reboot: "cordon" } } });
    await startWith(s, reboot());
    s.peer.state.injectFault({
      match: { verbs: ["patch"], resources: ["nodes"] },
      answer: { kind: "internal-error" },
      count: 1,
    });
    s.commit(reboot({ EventStatus: "Completed" }));
    await waitFor("the failed undo", () => s.state().failures === 1 || undefined);
    await s.parked();
    expect(s.state()).toMatchObject({ phase: "undoing", failures: 1, endedStatus: "Completed" });
    expect(s.cordoned()).toBe(true);
    await s.clock.advance(1_000);
    await waitFor("the undo", () => s.row()?.status === "succeeded" || undefined);
    expect(s.cordoned()).toBe(false);
    expect(s.outcomes()).toEqual(["Cordoned", "Failed", "Uncordoned"]);
  });

  it("a worker whose client never loads stops when asked", async (test) => {
    const s = await setUp(test, { failedLoads: 1_000 });
    s.actions.start();
    await waitFor("the failed load", () => s.clock.pendingSleeps === 1);
    await stopWithin(s.actions);
    expect(s.loads()).toBe(1);
    expect(s.kube.closed()).toBe(false);
  });

  it("Started: the node stays as it is, no drain begins; a step an older agent persisted as marking is taken", async (test) => {
    const s = await setUp(test, { settings: { drainLeadMs: 60_000 } });
    await startWith(s, reboot({ NotBefore: iso(startMs + 120_000) }));
    expect(s.outcomes()).toEqual(["Cordoned"]);
    s.commit(reboot({ NotBefore: iso(startMs + 120_000), EventStatus: "Started" }));
    await s.parked();
    await s.clock.advance(120_000);
    await s.parked();
    expect(s.outcomes()).toEqual(["Cordoned"]);
    expect(s.state().phase).toBe("marked");

    const other = "6EE66B82-A6CF-4C8F-B9B3-AD5B3F8D9B22";
    const otherKey = nodeActionKey(other.toLowerCase());
    s.ledger.plan(s.actions.plan(reboot({ EventId: other, NotBefore: iso(startMs + 3_600_000) })), s.clock.now());
    s.ledger.setStep(otherKey, JSON.stringify({ ...s.state(), phase: "marking" }));
    s.commit(reboot({ EventId: other, NotBefore: iso(startMs + 3_600_000) }));
    await waitFor("the mark", () => s.state(otherKey).phase === "marked" || undefined);
    expect(s.records.at(-1)).toMatchObject({ EventId: other, Outcome: "Cordoned" });
  });

  it("an event naming three nodes: this node (the first) drains, waits for the others' drained marks, then approves", async (test) => {
    const vmOf = (name: string) =>
      `/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${name}`;
    const s = await setUp(test, {
      settings: { drainLeadMs: 60 * 60_000 },
      seed: {
        nodes: [
          azureNodeSeed(vmOf("WestNO_1"), { name: "node-b" }),
          azureNodeSeed(vmOf("WestNO_2"), { name: "node-c" }),
        ],
      },
    });
    const notBefore = iso(startMs + 15 * 60_000);
    const record = reboot({ NotBefore: notBefore, Resources: ["WestNO_0", "WestNO_1", "WestNO_2"] });
    const markDrained = (node: string): void => {
      s.peer.state.updateNode(node, (n) => {
        n.metadata.annotations = {
          ...n.metadata.annotations,
          [markAnnotationKey(eventId)]: encodeMark({
            eventId,
            eventType: "Reboot",
            notBefore,
            policy: "drain-then-approve",
            cordoned: true,
            markedAt: iso(startMs),
            drainedAt: iso(startMs + 500),
          }),
        };
      });
    };
    await startWith(s, record);
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "Drained", "Waiting"]);
    expect(detailOf(s.records[3])).toMatchObject({ approver: nodeName, waitingFor: ["node-b", "node-c"] });
    expect(s.state()).toMatchObject({
      phase: "waiting",
      waitingFor: ["node-b", "node-c"],
      named: { nodes: [{ node: nodeName }, { node: "node-b" }, { node: "node-c" }] },
    });
    expect(s.releases).toEqual([]);
    expect(s.clock.sleeps.at(-1)).toBe(1_000); // podPollMs
    markDrained("node-b");
    await s.clock.advance(1_000);
    await s.parked();
    expect(s.releases).toEqual([]);
    expect(s.state()).toMatchObject({ phase: "waiting", waitingFor: ["node-c"] });
    markDrained("node-c");
    await s.clock.advance(1_000);
    await waitFor("the approval", () => s.releases.length === 1 || undefined);
    expect(s.releases[0]).toMatchObject({ verdict: "approve" });
    expect(s.state().phase).toBe("settled");
  });

  it("a NotBefore-less drain has its deadline 30 s after it started, across a restart", async (test) => {
    const s = await setUp(test, {
      seed: {
        pods: [
          {
            name: "web-0",
            namespace: "apps",
            nodeName,
            ownerReferences: [{ kind: "ReplicaSet", name: "web" }],
            stopsAfterSeconds: "never",
          },
        ],
      },
    });
    await startWith(s, reboot({ NotBefore: null }));
    expect(s.outcomes()).toEqual(["Cordoned", "Draining"]);
    expect(detailOf(s.records[1]).deadline).toBe(iso(startMs + 30_000));
    for (let i = 0; i < 10; i++) {
      await s.clock.advance(1_000);
      await s.parked();
    }
    await stopWithin(s.actions);
    const again = s.restart();
    again.start();
    await s.parked();
    for (let i = 0; i < 40 && !s.outcomes().includes("DrainIncomplete"); i++) {
      await s.clock.advance(1_000);
      await s.parked();
    }
    expect(s.outcomes()).toEqual(["Cordoned", "Draining", "DrainIncomplete"]);
    expect(detailOf(s.records[2]).deadline).toBe(iso(startMs + 30_000));
    expect(s.records[2]!.ElapsedMs).toBe(30_000);
  });

  it("two events draining at once: every grace is capped by the sooner deadline, and the slot is kept until both are over", async (test) => {
    const s = await setUp(test, {
      settings: { drainLeadMs: 60 * 60_000, maxConcurrentDrains: { limit: 1 } },
      seed: {
        pods: [
          {
            name: "slow-0",
            namespace: "apps",
            nodeName,
            ownerReferences: [{ kind: "ReplicaSet", name: "slow" }],
            terminationGracePeriodSeconds: 600,
            stopsAfterSeconds: "never",
          },
        ],
      },
    });
    await startWith(s, reboot({ NotBefore: iso(startMs + 30 * 60_000) }));
    expect(s.peer.state.evictions().map((e) => [e.pod, e.gracePeriodSeconds])).toEqual([["slow-0", 600]]);
    // Half a second later a Redeploy: marked and drained at once, its deadline 55 s away.
    await s.clock.advance(500);
    await s.parked();
    const redeploy = "7FF77C93-B7D0-4D90-8AC4-BE6C4A9EAC33";
    s.commit(reboot({ EventId: redeploy, EventType: "Redeploy", NotBefore: iso(startMs + 60_500) }));
    await waitFor("the second drain", () => s.records.filter((r) => r.EventId === redeploy).length === 2 || undefined);
    await s.parked();
    // A pod arrives; the Reboot's drain (the first to look again) evicts it with the Redeploy's time left as its grace.
    s.peer.state.addPod({
      name: "new-0",
      namespace: "apps",
      nodeName,
      ownerReferences: [{ kind: "ReplicaSet", name: "new" }],
      terminationGracePeriodSeconds: 600,
      stopsAfterSeconds: 0,
    });
    await s.clock.advance(500);
    await s.parked();
    expect(
      s.peer.state
        .evictions()
        .filter((e) => e.pod === "new-0")
        .map((e) => e.gracePeriodSeconds),
    ).toEqual([54]);
    for (let i = 0; i < 70 && !s.outcomes().includes("DrainIncomplete"); i++) {
      await s.clock.advance(1_000);
      await s.parked();
    }
    expect(s.records.filter((r) => r.Outcome === "DrainIncomplete").map((r) => r.EventId)).toEqual([redeploy]);
    // The Reboot still drains (the pod the Redeploy's grace cut short is stuck only 10 s later): the slot stays.
    expect(holderOf(s.peer)).toBe(nodeName);
    for (let i = 0; i < 20 && s.outcomes().filter((o) => o === "DrainIncomplete").length < 2; i++) {
      await s.clock.advance(1_000);
      await s.parked();
    }
    expect(s.records.filter((r) => r.Outcome === "DrainIncomplete").map((r) => r.EventId)).toEqual([redeploy, eventId]);
    expect(holderOf(s.peer)).toBe("");
  });
});
