// Approval policy (pure): which Scheduled events this VM may start early, and whether this VM is the one that approves.
// Config section `approval`; the I/O of approving lives in approver.ts.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { documented } from "../../util/setting-doc.js";
import type { EventFields, EventStatus } from "@sef/contract/record.js";

export const approvalModes = ["off", "dry-run", "on"] as const;
export type ApprovalMode = (typeof approvalModes)[number];

/** One rule: an event matches when every condition given holds. A rule with no condition is refused (it would approve everything). */
export const approvalRuleSchema = z
  .strictObject({
    eventSource: documented(z.optional(z.array(z.string().check(z.minLength(1))).check(z.minLength(1))), {
      description: 'EventSource values (case-insensitive), e.g. `["User"]`.',
    }),
    eventType: documented(z.optional(z.array(z.string().check(z.minLength(1))).check(z.minLength(1))), {
      description: 'EventType values (case-insensitive), e.g. `["Freeze"]`.',
    }),
    minDurationSeconds: documented(z.optional(z.number().check(z.int())), {
      description: "`DurationInSeconds` ≥ this (inclusive; IMDS uses -1 for unknown).",
    }),
    maxDurationSecondsExclusive: documented(z.optional(z.number().check(z.int())), {
      description: "`DurationInSeconds` < this (exclusive).",
      unit: "seconds",
    }),
    affectsThisVm: documented(z.optional(z.boolean()), {
      description: "This VM's name is (true) or is not (false) in `Resources`.",
    }),
  })
  .check(
    z.refine((rule) => Object.values(rule).some((v) => v !== undefined), {
      message: "an approval rule needs at least one condition (an empty rule would approve every event)",
    }),
  );
export type ApprovalRule = z.infer<typeof approvalRuleSchema>;

export const approvalPolicySchema = z.strictObject({
  mode: documented(z._default(z.enum(approvalModes), "off"), {
    description: "`off`, `dry-run` (records `DryRun` Approval records, sends nothing), `on`.",
  }),
  rules: documented(z._default(z.array(approvalRuleSchema), []), {
    description:
      "Approve when any rule matches; a rule matches when all of its conditions hold (a rule without conditions is refused).",
  }),
  approver: documented(z._default(z.enum(["first-resource", "this-vm"]), "first-resource"), {
    description:
      "`first-resource` (only the VM named first in `Resources` approves: one approver per fleet) or `this-vm` (every affected VM approves).",
  }),
  requirePrepareHookSuccess: documented(z._default(z.boolean(), false), {
    description: "Approve only after every `Scheduled` hook for the event succeeded (drain, then approve).",
  }),
});
export type ApprovalPolicy = z.infer<typeof approvalPolicySchema>;

/** The documented sample: approve user-triggered events at once, and Freeze events with 0 <= DurationInSeconds < 9 ("no impact"). */
export const sampleApprovalPolicy: ApprovalPolicy = {
  mode: "on",
  rules: [{ eventSource: ["User"] }, { eventType: ["Freeze"], minDurationSeconds: 0, maxDurationSecondsExclusive: 9 }],
  approver: "first-resource",
  requirePrepareHookSuccess: false,
};

export interface ApprovalDecision {
  approve: boolean;
  reason: string;
}

export type ApprovalCandidate = EventFields & { EventStatus: EventStatus };

const sameName = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();
const inList = (value: string, list: readonly string[]): boolean => list.some((v) => sameName(v, value));

/** Whether `vmName` (compute.name) is among the event's Resources, case-insensitive. */
export function affectsVm(resources: readonly string[], vmName: string): boolean {
  return vmName !== "" && inList(vmName, resources);
}

/** Whether every condition the rule gives holds for the event. */
export function ruleMatches(rule: ApprovalRule, event: EventFields, vmName: string): boolean {
  if (rule.eventSource && !inList(event.EventSource, rule.eventSource)) return false;
  if (rule.eventType && !inList(event.EventType, rule.eventType)) return false;
  if (rule.minDurationSeconds !== undefined && !(event.DurationInSeconds >= rule.minDurationSeconds)) return false;
  if (rule.maxDurationSecondsExclusive !== undefined && !(event.DurationInSeconds < rule.maxDurationSecondsExclusive))
    return false;
  if (rule.affectsThisVm !== undefined && affectsVm(event.Resources, vmName) !== rule.affectsThisVm) return false;
  return true;
}

/**
 * Decides whether this VM should approve (start early) the event now. Approve only when: the mode is not off,
 * the event is Scheduled, it was not approved already, this VM is the elected approver, a rule matches, and
 * (if required) the prepare hooks succeeded. In dry-run mode the decision is the same; the approver only logs it.
 */
export function decideApproval(
  event: ApprovalCandidate,
  vmName: string,
  policy: ApprovalPolicy,
  alreadyApproved: boolean,
  prepareHookSucceeded?: boolean,
): ApprovalDecision {
  const no = (reason: string): ApprovalDecision => ({ approve: false, reason });
  if (policy.mode === "off") return no("approval is off");
  if (event.EventStatus !== "Scheduled") return no(`event is ${event.EventStatus}, only Scheduled events are approved`);
  if (alreadyApproved) return no("already approved");
  if (vmName === "") return no("this VM's name is unknown, cannot tell whether it is the approver");
  if (policy.approver === "first-resource") {
    const first = event.Resources[0];
    if (first === undefined || !sameName(first, vmName)) {
      return no(`not the elected approver (first in Resources is "${first ?? ""}")`);
    }
  } else if (!affectsVm(event.Resources, vmName)) {
    return no("event does not affect this VM");
  }
  const index = policy.rules.findIndex((rule) => ruleMatches(rule, event, vmName));
  if (index === -1) return no("no approval rule matches");
  if (policy.requirePrepareHookSuccess && prepareHookSucceeded !== true) {
    return no(prepareHookSucceeded === false ? "a prepare hook failed" : "waiting for prepare hooks to succeed");
  }
  const who = policy.approver === "first-resource" ? "first in Resources" : "affected VM";
  return {
    approve: true,
    reason: `rule ${index + 1} matches (${describeRule(policy.rules[index]!)}); this VM is ${who}`,
  };
}

/** Short text form of a rule for logs and record details, e.g. `EventType in [Freeze], 0 <= DurationInSeconds < 9`. */
export function describeRule(rule: ApprovalRule): string {
  const parts: string[] = [];
  if (rule.eventSource) parts.push(`EventSource in [${rule.eventSource.join(", ")}]`);
  if (rule.eventType) parts.push(`EventType in [${rule.eventType.join(", ")}]`);
  const min = rule.minDurationSeconds;
  const max = rule.maxDurationSecondsExclusive;
  if (min !== undefined && max !== undefined) parts.push(`${min} <= DurationInSeconds < ${max}`);
  else if (min !== undefined) parts.push(`DurationInSeconds >= ${min}`);
  else if (max !== undefined) parts.push(`DurationInSeconds < ${max}`);
  if (rule.affectsThisVm !== undefined) parts.push(`AffectsThisVm = ${rule.affectsThisVm}`);
  return parts.join(", ");
}
