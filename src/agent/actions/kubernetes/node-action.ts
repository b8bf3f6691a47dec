// The kubernetes action's worker: for each Scheduled event that names this VM, holds the event's approval and takes
// the steps its EventType's policy asks for on this VM's node (taint, cordon, drain), each event's steps on their own
// (an event noticed while another drains is marked at once; every grace is capped by the soonest deadline), then
// releases the approval
// (asking for it after a complete drain; for an event naming several nodes, only the first of them does, once every
// one has drained), and undoes the steps when the event is over. Each step is persisted in the action ledger before
// it is taken, and each mark on the Node names its event, so a restart (even after kill -9, even with an empty data
// directory) resumes where it was or takes off what is no longer wanted (reconcile.ts).
import { retryDelayMs, type RetryPolicy } from "@sef/retry/policy.js";
import type { Logger } from "pino";
import type {
  EventStatus,
  KubernetesOutcome,
  KubernetesRecord,
  RecordIdentity,
  TransitionRecord,
} from "@sef/contract/record.js";
import type { WorkerAction, ActionContext } from "../action.js";
import type { ActionLedger, ActionRow, HoldRequest, HoldVerdict, PlannedAction } from "../action-ledger.js";
import type { Clock } from "@sef/runtime/clock.js";
import { KubeApiError, type KubeApi } from "./client.js";
import { drainNode, type DrainOptions, type DrainProgress, type DrainResult } from "./drain.js";
import { DrainSlots } from "./drain-slots.js";
import { DryRun } from "./dry-run.js";
import type { EvictionMetricOutcome, KubernetesMetrics } from "./metrics.js";
import { ClusterApproval } from "./cluster-approval.js";
import { initialNodeState, type NodeActionState } from "./node-state.js";
import { drainedPatch, isMarkOf, markPatch } from "./marks.js";
import { NodeIo, type KubeNode } from "./node-io.js";
import { drainDeadlineMs, drainStartMs, nodeIsThisVm, taintKeyFor, taintValueFor } from "./plan.js";
import { NodeReconciler } from "./reconcile.js";
import { drainDetail } from "./records.js";
import { deadlineActionFor, policyFor, policyIncludes, type KubernetesSettings, type NodePolicy } from "./settings.js";

const idleWaitMs = 60_000;
/** The wait after a 409 (the node changed between the read and the patch): the step is taken again almost at once. */
const conflictRetryMs = 20;
/** How often a drain waiting for a slot asks again, and how often a draining node looks at renewing its slot. */
const slotRetryMs = 2_000;
/**
 * The wait after a failed step, a failed reconciliation or a client that did not load: sef's one backoff formula
 * (@sef/retry), from 1 s doubling to 10 s with equal jitter. The worker is the only retry owner of its API requests
 * (the client sends each once; a 401 is sent once more with fresh credentials, which is not a retry of a failure).
 */
export const kubernetesRetryPolicy: RetryPolicy = { initialDelayMs: 1_000, maxDelayMs: 10_000, multiplier: 2 };

export { initialNodeState, type NodeActionState, type NodePhase } from "./node-state.js";

export interface NodeActionsOptions {
  settings: KubernetesSettings;
  nodeName: string;
  /** sef's own pod (POD_NAMESPACE/POD_NAME), never evicted. */
  self: { namespace: string; name: string } | undefined;
  /** Loads the Kubernetes client (seconds of module loading): awaited by the worker, so the agent's start never waits for it. */
  loadApi: () => Promise<KubeApi>;
  ledger: ActionLedger;
  /** Appends records to the outbox; called inside the ledger's transaction. */
  append: (records: KubernetesRecord[]) => void;
  vm: () => RecordIdentity;
  /** Releases the node action's hold on the event's approval (see action.ts and cluster.ts `settleStep`). */
  release: ActionContext["release"];
  /** True once this process has read IMDS: steps wait for a current view of the events. */
  hasPolled: () => boolean;
  clock: Clock;
  logger: Logger;
  metrics: KubernetesMetrics;
  agentVersion: string;
}

export const nodeActionKey = (eventKey: string): string => `kubernetes:${eventKey}`;

export class NodeActions implements WorkerAction {
  readonly kind = "kubernetes";
  readonly runsIn = "worker";
  private readonly stopping = new AbortController();
  private wakeUp = new AbortController();
  private loop: Promise<void> | undefined;
  /** The node actions whose steps are under way (each runs on its own). */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** When each node action wants to be looked at again (monotonic ms); cleared by a commit. */
  private readonly dueAtMs = new Map<string, number>();
  /** The NotBefore each node action last acted on: one that IMDS moved is looked at again at once. */
  private readonly notBeforeActedOn = new Map<string, string | null>();
  /** The deadlines of the drains under way (wall ms): every eviction's grace is capped by the soonest. */
  private readonly drainDeadlines = new Map<string, number>();
  private kubeApi: KubeApi | undefined;
  private readonly io: NodeIo;
  private readonly reconciler: NodeReconciler;
  private readonly approval: ClusterApproval;
  private readonly dryRun: DryRun;
  /** The cluster-wide cap on concurrent drains (maxConcurrentDrains), when configured. */
  private readonly slots: DrainSlots | undefined;

  constructor(private readonly options: NodeActionsOptions) {
    const { nodeName, vm, clock, logger, metrics, agentVersion, ledger } = options;
    this.io = new NodeIo({ nodeName, api: () => this.api, vm, clock, logger, metrics, agentVersion });
    this.approval = new ClusterApproval({
      io: this.io,
      api: () => this.api,
      clock,
      logger,
      podPollMs: options.settings.podPollMs,
      deadlineMs: (record, state) => this.deadlineMs(record, state),
      commitStep: (row, next, record) => this.commitStep(row, next, record),
      saveState: (row, state) => this.saveState(row.actionKey, state),
      release: (row, state, verdict, reason) => this.release(row, state, verdict, reason),
    });
    const cap = options.settings.maxConcurrentDrains;
    this.slots =
      cap === undefined
        ? undefined
        : new DrainSlots({
            api: () => this.api,
            nodeName,
            namespace: cap.namespace ?? options.self?.namespace ?? "default",
            limit: cap.limit,
            leaseDurationSeconds: cap.leaseDurationSeconds,
            clock,
            logger,
          });
    this.dryRun = new DryRun({
      io: this.io,
      api: () => this.api,
      settings: options.settings,
      self: options.self,
      clock,
      finish: (row, why, records) =>
        ledger.transaction(() => {
          options.append(records);
          this.options.release(row.eventKey, row.actionKey, "done", why);
          ledger.setStatus(row.actionKey, "succeeded", why, clock.now());
        }),
    });
    this.reconciler = new NodeReconciler({
      io: this.io,
      vmResourceId: () => vm().VmResourceId,
      ownedEventIds: () => ledger.activeOfKind(this.kind).map((row) => row.eventKey),
      commit: (records) => ledger.transaction(() => options.append(records)),
      clock,
      logger,
      metrics,
      retryPolicy: kubernetesRetryPolicy,
    });
  }

  /** A Scheduled event naming this VM whose policy is not `none` gets a node action, which holds the event's approval. */
  holdsFor(record: TransitionRecord): HoldRequest[] {
    const policy = this.policyToAct(record);
    return policy === undefined
      ? []
      : [{ holder: nodeActionKey(record.EventId.toLowerCase()), mayApprove: policy === "drain-then-approve" }];
  }

  /**
   * Called by the action runner for each committed transition (inside its transaction): a Scheduled event naming this
   * VM whose policy is not `none` gets a node action; a Completed or Canceled one notes how it ended.
   */
  plan(record: TransitionRecord): PlannedAction[] {
    const eventKey = record.EventId.toLowerCase();
    const actionKey = nodeActionKey(eventKey);
    if (record.EventStatus === "Completed" || record.EventStatus === "Canceled") {
      const state = this.loadState(actionKey);
      if (state) this.options.ledger.setStep(actionKey, JSON.stringify({ ...state, endedStatus: record.EventStatus }));
      return [];
    }
    const policy = this.policyToAct(record);
    return policy === undefined
      ? []
      : [
          {
            actionKey,
            kind: this.kind,
            eventKey,
            eventStatus: record.EventStatus,
            name: policy,
            recordJson: JSON.stringify(record),
          },
        ];
  }

  start(): void {
    this.loop = this.work().catch((err: unknown) => this.options.logger.error({ err }, "kubernetes action failed"));
  }

  /** Records committed (a transition may have planned a node action or ended an event): look at the node actions now. */
  committed(): void {
    this.dueAtMs.clear();
    this.wakeUp.abort();
  }

  /** A document was read: the node is reconciled with it when the events it lists changed (see reconcile.ts). */
  documentRead(eventIds: readonly string[]): void {
    // Also a NotBefore IMDS moved (no transition): the worker compares each node action's with the store's.
    if (this.reconciler.documentRead(eventIds) || this.notBeforeActedOn.size > 0) this.wakeUp.abort();
  }

  /** Stops at the next step boundary (a drain in progress stops between rounds; it resumes at the next start). */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    this.kubeApi?.close();
  }

  /** The policy the node action takes for a Scheduled event naming this VM, or undefined when it takes none. */
  private policyToAct(record: TransitionRecord): NodePolicy | undefined {
    const policy = policyFor(this.options.settings, record.EventType);
    return record.EventStatus !== "Scheduled" || !record.AffectsThisVm || policy === "none" ? undefined : policy;
  }

  private async work(): Promise<void> {
    const { clock, ledger, logger } = this.options;
    const stop = this.stopping.signal;
    // The client loads (and opens its connection) while the agent waits for its first document, so a notice in that
    // document does not wait for it.
    const loading = this.loadApiUntilLoaded(stop);
    while (!stop.aborted && !this.options.hasPolled()) await clock.sleep(100, stop).catch(() => undefined);
    await loading;
    while (!stop.aborted) {
      this.wakeUp = new AbortController();
      let waitMs = idleWaitMs;
      const nowMs = clock.monotonicMs();
      const rows = ledger.activeOfKind(this.kind);
      this.lookAgainWhereMoved(rows);
      // Each node action's steps run on their own: one that drains never holds another's mark up. (The loop and the
      // steps' first parts are synchronous: nothing stops the worker between the check above and the wait below.)
      for (const row of rows) {
        if (this.inFlight.has(row.actionKey)) continue;
        const dueInMs = (this.dueAtMs.get(row.actionKey) ?? 0) - nowMs;
        if (dueInMs > 0) waitMs = Math.min(waitMs, dueInMs);
        else this.runStep(row);
      }
      // After the node actions' own steps are under way: what no node action owns any more.
      waitMs = Math.min(waitMs, await this.reconciler.reconcileIfDue(idleWaitMs));
      if (this.wakeUp.signal.aborted) logger.trace("kubernetes action: next step now");
      else await clock.sleep(waitMs, AbortSignal.any([stop, this.wakeUp.signal])).catch(() => undefined);
    }
    await Promise.all(this.inFlight.values());
  }

  /** The node actions whose event's NotBefore moved since they last acted are looked at now (not when they planned). */
  private lookAgainWhereMoved(rows: readonly ActionRow[]): void {
    const active = new Set(rows.map((row) => row.actionKey));
    for (const key of this.notBeforeActedOn.keys()) if (!active.has(key)) this.notBeforeActedOn.delete(key);
    for (const row of rows) {
      const actedOn = this.notBeforeActedOn.get(row.actionKey);
      const latest = this.options.ledger.committedEventNotBefore(row.eventKey);
      // (A row that has not acted yet has no wait to forget.)
      if (latest !== undefined && latest !== actedOn) this.dueAtMs.delete(row.actionKey);
    }
  }

  /** Takes the row's next steps on their own; when they end, the worker looks again (at once or when they ask). */
  private runStep(row: ActionRow): void {
    const key = row.actionKey;
    const step = this.advance(row)
      .catch((err: unknown) => this.onStepError(row, err))
      .then((waitMs) => void this.dueAtMs.set(key, this.options.clock.monotonicMs() + waitMs))
      .finally(() => {
        this.inFlight.delete(key);
        this.wakeUp.abort();
      });
    this.inFlight.set(key, step);
  }

  /** Loads the Kubernetes client, trying again every 30 s until it loads or the agent stops. */
  private async loadApiUntilLoaded(stop: AbortSignal): Promise<void> {
    const { clock, logger } = this.options;
    for (let failures = 1; !stop.aborted && this.kubeApi === undefined; failures++) {
      try {
        this.kubeApi = await this.options.loadApi();
        logger.info("Kubernetes client loaded; the kubernetes action is ready");
      } catch (err) {
        logger.error({ err }, "could not load the Kubernetes client; trying again");
        await clock
          .sleep(retryDelayMs(kubernetesRetryPolicy, failures, undefined, Math.random()), stop)
          .catch(() => undefined);
      }
    }
  }

  /** The client: loaded before the worker takes its first step (work awaits it), so no step finds it missing. */
  private get api(): KubeApi {
    return this.kubeApi as KubeApi;
  }

  /** Takes the next steps of one node action; returns how long until it wants to be looked at again. */
  private async advance(row: ActionRow): Promise<number> {
    const record = this.latest(row);
    const state = this.loadState(row.actionKey) ?? initialNodeState();
    const status = this.options.ledger.committedEventStatus(row.eventKey);
    if (status === undefined) return this.undo(row, record, state);
    if (status !== "Scheduled") return idleWaitMs; // Started: the event runs; the node stays as it is until it is over
    const policy = row.name as NodePolicy;
    switch (state.phase) {
      case "planned":
        return this.checkNode(row, record, state, policy);
      case "marking":
        return this.mark(row, record, state, policy);
      case "marked":
        return this.startDrain(row, record, state, policy);
      case "draining":
        return this.drain(row, record, state, policy);
      case "drained":
      case "incomplete":
        return this.approval.settle(row, record, state, policy);
      case "waiting":
        return this.approval.wait(row, record, state, policy);
      default:
        return idleWaitMs;
    }
  }

  /** The event's Scheduled record, with NotBefore as the last document listed it (IMDS may move it). */
  private latest(row: ActionRow): TransitionRecord {
    const record = JSON.parse(row.recordJson) as TransitionRecord;
    const notBefore = this.options.ledger.committedEventNotBefore(row.eventKey) ?? record.NotBefore;
    this.notBeforeActedOn.set(row.actionKey, notBefore);
    return { ...record, NotBefore: notBefore };
  }

  /** Checks that NODE_NAME is this VM before anything is done to it. */
  private async checkNode(
    row: ActionRow,
    record: TransitionRecord,
    state: NodeActionState,
    policy: NodePolicy,
  ): Promise<number> {
    const { nodeName, ledger, clock, logger, metrics } = this.options;
    const vm = this.options.vm();
    const node = await this.io.readNode();
    if (!nodeIsThisVm(node.providerID, vm.VmResourceId)) {
      const why = `node ${nodeName} is not this VM (providerID "${node.providerID}", VM resource id "${vm.VmResourceId}"): nothing done to it`;
      metrics.nodeMismatch.inc();
      logger.warn(
        { eventId: record.EventId, node: nodeName, providerID: node.providerID, vmResourceId: vm.VmResourceId },
        "the node is not this VM; the kubernetes action does nothing",
      );
      ledger.transaction(() => {
        this.options.release(row.eventKey, row.actionKey, "done", why);
        ledger.setStatus(row.actionKey, "skipped", why, clock.now());
      });
      return 0;
    }
    if (this.options.settings.dryRun) return this.dryRun.run(row, record, policy, node);
    // No ledger write between this read and the mark patch (the notice → cordon path): a crash after the patch leaves
    // the row `planned`, and the next start marks again (the patch is idempotent) or reconciliation takes it off.
    return this.mark(row, record, state, policy, node);
  }

  /**
   * The NoSchedule taint, the event's annotation and (per policy) the cordon, in one patch guarded by the node's
   * resourceVersion: whether sef cordoned the node is written with the cordon (see marks.ts); a Noticed Event and a record.
   */
  private async mark(
    row: ActionRow,
    record: TransitionRecord,
    state: NodeActionState,
    policy: NodePolicy,
    nodeRead?: KubeNode,
  ): Promise<number> {
    const { clock, settings } = this.options;
    const startedMs = clock.monotonicMs();
    const cordon = policyIncludes(policy, "cordon");
    const node = nodeRead ?? (await this.io.readNode());
    await this.io.patch(
      markPatch(node, record, policy, cordon, new Date(clock.now()).toISOString(), settings.excludeFromLoadBalancers),
      node.resourceVersion,
    );
    const taint = `${taintKeyFor(record.EventType)}=${taintValueFor(record.EventId)}:NoSchedule`;
    const outcome: KubernetesOutcome = cordon ? "Cordoned" : "Tainted";
    const notBefore = record.NotBefore ?? "unknown";
    this.commitStep(
      row,
      { ...state, phase: "marked", failures: 0 },
      this.io.record(record, "Scheduled", outcome, { policy, taint }, clock.monotonicMs() - startedMs),
      true,
    );
    // Events are for people and best-effort: written after the step's record, so a slow answer never holds it up.
    await this.io.nodeEvent(
      node,
      "ScheduledEventNoticed",
      `${record.EventType} ${record.EventId} scheduled (NotBefore ${notBefore}): ${cordon ? "tainted and cordoned" : "tainted"} by sef (policy ${policy})`,
      "Normal",
    );
    return 0;
  }

  /** Waits for the drain's start (NotBefore minus drainLeadMs), then persists that the drain started. */
  private async startDrain(
    row: ActionRow,
    record: TransitionRecord,
    state: NodeActionState,
    policy: NodePolicy,
  ): Promise<number> {
    const { settings, clock } = this.options;
    if (!policyIncludes(policy, "drain")) return this.approval.settle(row, record, state, policy);
    const nowMs = clock.now();
    const startMs = drainStartMs(record.NotBefore, settings.drainLeadMs, nowMs);
    if (startMs > nowMs) return startMs - nowMs;
    const deadlineMs = drainDeadlineMs(record.NotBefore, settings.deadlineReserveMs, nowMs);
    // Under a cluster-wide cap, the drain waits for a slot until its deadline (then it runs: its deadline has come).
    if (this.slots !== undefined && nowMs < deadlineMs && !(await this.slots.acquire()))
      return this.waitForSlot(row, record, state, policy);
    const deadline = new Date(deadlineMs).toISOString();
    const node = await this.io.readNode();
    this.commitStep(
      row,
      { ...state, phase: "draining", drainStartedAtMs: nowMs, failures: 0 },
      this.io.record(record, "Scheduled", "Draining", { policy, deadline }, 0),
    );
    await this.io.nodeEvent(
      node,
      "ScheduledEventDraining",
      `draining for ${record.EventType} ${record.EventId}: evicting pods until ${deadline}`,
      "Normal",
    );
    return 0;
  }

  /** No drain slot free: a Waiting record (once) saying so; the slot is asked for again shortly. */
  private waitForSlot(row: ActionRow, record: TransitionRecord, state: NodeActionState, policy: NodePolicy): number {
    if (state.waitingForSlot === true) return slotRetryMs;
    const limit = this.options.settings.maxConcurrentDrains?.limit ?? 0;
    const reason = `${limit} nodes of the cluster are draining (maxConcurrentDrains): waiting for a drain slot`;
    this.options.logger.info({ eventId: record.EventId }, reason);
    const waiting = this.io.record(record, "Scheduled", "Waiting", { policy, reason }, 0, undefined, 1);
    this.commitStep(row, { ...state, waitingForSlot: true }, waiting);
    return slotRetryMs;
  }

  /** Renews the drain slot (if any) until `signal` aborts; a failed renewal is logged, the drain goes on. */
  private async keepSlot(signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.options;
    // After a restart mid-drain: this node's slot is taken up again (its holder is this node).
    if (this.slots?.holding === undefined)
      await this.slots?.acquire().catch((err: unknown) => logger.warn({ err }, "could not take up the drain slot"));
    while (this.slots !== undefined && !signal.aborted) {
      await this.slots.renewIfDue().catch((err: unknown) => logger.warn({ err }, "could not renew the drain slot"));
      await clock.sleep(slotRetryMs, signal).catch(() => undefined);
    }
  }

  /** Frees the drain slot once no drain of this node is under way; a failure is logged (the Lease expires). */
  private async releaseSlot(): Promise<void> {
    if (this.slots === undefined || this.drainDeadlines.size > 0) return;
    await this.slots
      .release()
      .catch((err: unknown) => this.options.logger.warn({ err }, "could not free the drain slot"));
  }

  /** Runs (or resumes) the drain until done, the deadline, or the event is no longer Scheduled. */
  private async drain(
    row: ActionRow,
    record: TransitionRecord,
    state: NodeActionState,
    policy: NodePolicy,
  ): Promise<number> {
    const { clock, metrics } = this.options;
    const startedAtMs = state.drainStartedAtMs ?? clock.now();
    const deadlineMs = this.deadlineMs(record, state);
    this.drainDeadlines.set(row.actionKey, deadlineMs);
    const renewal = new AbortController();
    const renewing = this.keepSlot(renewal.signal);
    let result: DrainResult;
    try {
      result = await drainNode(this.drainOptions(row, record, state, deadlineMs));
    } finally {
      this.drainDeadlines.delete(row.actionKey);
      renewal.abort();
      await renewing;
    }
    if (result.outcome === "interrupted") {
      this.saveState(row.actionKey, { ...state, drain: result });
      return 0;
    }
    await this.releaseSlot();
    const elapsedMs = Math.max(0, clock.now() - startedAtMs);
    const drained = result.outcome === "drained";
    metrics.drainDuration.observe({ outcome: drained ? "drained" : "incomplete" }, elapsedMs / 1000);
    const detail = { policy, ...drainDetail(result, new Date(deadlineMs).toISOString()) };
    const node = await this.api.readNode(this.options.nodeName);
    const podsLeft = result.outcome === "incomplete" ? result.podsLeft : [];
    // The mark says the node drained for the event (what the node approving a multi-node event waits for).
    if (drained) await this.io.patch(this.drainedPatchFor(node, record, policy), node.resourceVersion);
    else
      this.options.logger.warn(
        { eventId: record.EventId, podsLeft, why: detail.incompleteBecause },
        "drain incomplete",
      );
    const next: NodeActionState = {
      ...state,
      phase: drained ? "drained" : "incomplete",
      drain: result,
      podsLeft,
      failures: 0,
    };
    const outcome = drained ? "Drained" : "DrainIncomplete";
    this.commitStep(row, next, this.io.record(record, "Scheduled", outcome, detail, elapsedMs));
    await this.io.nodeEvent(
      node,
      `ScheduledEvent${outcome}`,
      drainEventText(record, result, elapsedMs),
      drained ? "Normal" : "Warning",
    );
    return 0;
  }

  /** What one run of the event's drain is given: the settings, its progress, the soonest deadline on the node. */
  private drainOptions(row: ActionRow, record: TransitionRecord, state: NodeActionState, deadlineMs: number) {
    const { settings, clock, nodeName, ledger, metrics, logger } = this.options;
    return {
      api: this.api,
      nodeName,
      self: this.options.self,
      evictEmptyDir: settings.evictEmptyDir,
      force: settings.force,
      taint: { key: taintKeyFor(record.EventType), value: taintValueFor(record.EventId), effect: "NoSchedule" },
      deadlineMs,
      endMs: deadlineMs + settings.deadlineReserveMs,
      atDeadline: deadlineActionFor(settings, record.EventType),
      graceDeadlineMs: () => Math.min(...this.drainDeadlines.values()),
      podSelector: settings.podSelector,
      pdbRetryInitialMs: settings.pdbRetryInitialMs,
      pdbRetryMaxMs: settings.pdbRetryMaxMs,
      podPollMs: settings.podPollMs,
      clock,
      logger,
      resumeFrom: state.drain,
      // A moved NotBefore stops the run: the next one follows the new deadline (the progress is kept).
      stillWanted: () =>
        ledger.committedEventStatus(row.eventKey) === "Scheduled" &&
        (ledger.committedEventNotBefore(row.eventKey) ?? record.NotBefore) === record.NotBefore,
      onProgress: (drain: DrainProgress) => this.saveState(row.actionKey, { ...state, drain }),
      onEviction: (outcome: EvictionMetricOutcome) => metrics.evictions.inc({ outcome }),
      signal: this.stopping.signal,
    } satisfies DrainOptions;
  }

  private drainedPatchFor(node: KubeNode, record: TransitionRecord, policy: NodePolicy) {
    const { settings, clock } = this.options;
    return drainedPatch(node, record, policy, settings.noExecuteTaintAfterDrain, new Date(clock.now()).toISOString());
  }

  private deadlineMs(record: TransitionRecord, state: NodeActionState): number {
    return drainDeadlineMs(
      record.NotBefore,
      this.options.settings.deadlineReserveMs,
      state.drainStartedAtMs ?? this.options.clock.now(),
    );
  }

  /** Releases the node action's hold with a verdict; the node action then waits for the end of the event. */
  private release(row: ActionRow, state: NodeActionState, verdict: HoldVerdict, reason: string): number {
    this.options.ledger.transaction(() => {
      this.saveState(row.actionKey, { ...state, phase: "settled", failures: 0 });
      this.options.release(row.eventKey, row.actionKey, verdict, reason);
    });
    return idleWaitMs;
  }

  /** The event is over: takes the event's marks off (marks.ts `undoMarks`: sef's cordon only), and finishes the action. */
  private async undo(row: ActionRow, record: TransitionRecord, state: NodeActionState): Promise<number> {
    const { ledger, clock } = this.options;
    const ended: EventStatus = state.endedStatus ?? "Completed";
    if (state.phase === "planned") {
      const why = `the event was ${ended} before the node was touched`;
      ledger.transaction(() => {
        this.options.release(row.eventKey, row.actionKey, "done", why);
        ledger.setStatus(row.actionKey, "skipped", why, clock.now());
      });
      return 0;
    }
    this.saveState(row.actionKey, { ...state, phase: "undoing" });
    const node = await this.io.readNode();
    const { decision, records } = await this.io.undo(
      node,
      (mark) => isMarkOf(mark, record.EventId),
      () => ({ event: record, ended, detail: { policy: row.name } }),
    );
    const what =
      decision.patch === undefined
        ? "nothing of sef's was left on the node"
        : decision.uncordon
          ? "uncordoned and untainted"
          : "untainted";
    if (decision.patch === undefined)
      this.options.logger.info(
        { eventId: record.EventId },
        "the event is over and none of sef's marks for it is on the node (taken off already)",
      );
    ledger.transaction(() => {
      this.options.append(records);
      this.saveState(row.actionKey, { ...state, phase: "done" });
      ledger.setStatus(row.actionKey, "succeeded", what, clock.now());
    });
    for (const r of records) this.options.metrics.steps.inc({ outcome: r.Outcome });
    return 0;
  }

  private onStepError(row: ActionRow, err: unknown): number {
    const { logger, metrics, ledger } = this.options;
    const status = err instanceof KubeApiError ? err.status : 0;
    metrics.apiErrors.inc();
    logger.error({ err, action: row.actionKey, status }, "a kubernetes step failed; trying again");
    try {
      const state = this.loadState(row.actionKey) ?? initialNodeState();
      const failures = state.failures + 1;
      const record = JSON.parse(row.recordJson) as TransitionRecord;
      const failed = this.io.record(
        record,
        "Scheduled",
        "Failed",
        { policy: row.name, error: (err as Error).message },
        0,
        status,
        failures,
      );
      ledger.transaction(() => {
        if (failures === 1) this.options.append([failed]);
        this.saveState(row.actionKey, { ...state, failures });
      });
      if (failures === 1) metrics.steps.inc({ outcome: "Failed" });
      // A 409: the node changed meanwhile (another event's step patched it): read it again and patch at once.
      if (status === 409) return conflictRetryMs;
      return retryDelayMs(kubernetesRetryPolicy, failures, undefined, Math.random());
    } catch (storeErr) {
      logger.error({ err: storeErr }, "could not record a failed kubernetes step");
    }
    return kubernetesRetryPolicy.maxDelayMs;
  }

  /** The step's record and the action's next state in one transaction; `started` also marks the row running (its first step). */
  private commitStep(row: ActionRow, next: NodeActionState, record: KubernetesRecord, started = false): void {
    const { ledger, clock } = this.options;
    ledger.transaction(() => {
      if (started) ledger.setStatus(row.actionKey, "running", "", clock.now(), true);
      this.options.append([record]);
      this.saveState(row.actionKey, next);
    });
    this.options.metrics.steps.inc({ outcome: record.Outcome });
  }

  private loadState(actionKey: string): NodeActionState | undefined {
    const json = this.options.ledger.getStep(actionKey);
    return json === undefined ? undefined : (JSON.parse(json) as NodeActionState);
  }

  private saveState(actionKey: string, state: NodeActionState): void {
    this.options.ledger.setStep(actionKey, JSON.stringify(state));
  }
}

/** The Node Event's text at the end of a drain (Drained, or DrainIncomplete with the pods left and those deleted). */
function drainEventText(
  record: TransitionRecord,
  result: Exclude<DrainResult, { outcome: "interrupted" }>,
  elapsedMs: number,
): string {
  const what = `${record.EventType} ${record.EventId}`;
  if (result.outcome === "drained")
    return `drained for ${what} in ${Math.round(elapsedMs / 1000)} s: ${result.evicted.length} pods evicted, ${result.pdbBlocked.length} held by a PodDisruptionBudget`;
  const deleted = result.deleted
    ? `; deleted at the deadline with ${result.deleted.graceSeconds} s grace: ${result.deleted.podsDeleted.join(", ")}`
    : "";
  return `drain for ${what} incomplete (${result.reason}): ${result.podsLeft.length} pods left: ${result.podsLeft.join(", ")}${deleted}`;
}
