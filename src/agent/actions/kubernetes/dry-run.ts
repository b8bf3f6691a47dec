// The kubernetes action's dry run (I/O: reads only): at an event's notice, what its policy would do to the node — the
// taint, the cordon, the pods a drain would evict and those it would leave — in one record and one Node Event, with
// nothing patched, evicted or deleted; the approval is left to the rules.
import type { KubernetesRecord, TransitionRecord } from "@sef/contract/record.js";
import type { ActionRow } from "../action-ledger.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { KubeApi } from "./client.js";
import type { KubeNode, NodeIo } from "./node-io.js";
import { taintKeyFor, taintValueFor } from "./plan.js";
import { podRef, selectEvictions, skippedFor } from "./pods.js";
import type { KubernetesStepDetail } from "./records.js";
import { policyIncludes, type KubernetesSettings, type NodePolicy } from "./settings.js";

export interface DryRunOptions {
  io: NodeIo;
  api: () => KubeApi;
  settings: Pick<KubernetesSettings, "evictEmptyDir" | "force" | "podSelector">;
  self: { namespace: string; name: string } | undefined;
  clock: Clock;
  /** Commits the record, releases the hold (`done`: the rules decide) and finishes the node action. */
  finish: (row: ActionRow, why: string, records: KubernetesRecord[]) => void;
}

export class DryRun {
  constructor(private readonly options: DryRunOptions) {}

  /** Says what the policy would do to `node` for the event, and finishes the node action; nothing is changed. */
  async run(row: ActionRow, record: TransitionRecord, policy: NodePolicy, node: KubeNode): Promise<number> {
    const { io, clock } = this.options;
    const startedMs = clock.monotonicMs();
    const cordon = policyIncludes(policy, "cordon");
    const taint = `${taintKeyFor(record.EventType)}=${taintValueFor(record.EventId)}:NoSchedule`;
    const detail: Omit<KubernetesStepDetail, "node"> = {
      policy,
      taint,
      dryRun: true,
      ...(await this.drainPlan(policy, record)),
    };
    const evict = detail.podsToEvict ?? [];
    const drainText = policyIncludes(policy, "drain") ? `; a drain would evict ${evict.length} pods` : "";
    const text = `dry run: ${record.EventType} ${record.EventId} would have the node ${cordon ? "tainted and cordoned" : "tainted"} (policy ${policy})${drainText}; nothing was changed`;
    const outcome = cordon ? "Cordoned" : "Tainted";
    const why = `dry run: nothing changed (${text})`;
    this.options.finish(row, why, [io.record(record, "Scheduled", outcome, detail, clock.monotonicMs() - startedMs)]);
    await io.nodeEvent(node, "ScheduledEventDryRun", text, "Normal");
    return 0;
  }

  /** The pods a drain would evict now and those it would leave (none read when the policy does not drain). */
  private async drainPlan(policy: NodePolicy, record: TransitionRecord): Promise<Partial<KubernetesStepDetail>> {
    if (!policyIncludes(policy, "drain")) return {};
    const { settings, clock, self, io } = this.options;
    const pods = await this.options.api().listPods(io.nodeName, settings.podSelector);
    const selection = selectEvictions(pods, {
      self,
      evictEmptyDir: settings.evictEmptyDir,
      force: settings.force,
      taint: { key: taintKeyFor(record.EventType), value: taintValueFor(record.EventId), effect: "NoSchedule" },
      roster: undefined,
      evicted: new Set(),
      nowMs: clock.now(),
    });
    const named = (key: string, list: string[]) => (list.length > 0 ? { [key]: list } : {});
    return {
      podsToEvict: [...selection.evict, ...selection.deferred].map(podRef),
      ...named("podsWithoutController", skippedFor(selection, "no-controller")),
      ...named("podsWithEmptyDir", skippedFor(selection, "emptydir")),
      ...named("podsOptedOut", skippedFor(selection, "opted-out")),
    };
  }
}
