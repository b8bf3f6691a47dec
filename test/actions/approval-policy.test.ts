import { describe, expect, it } from "vitest";
import {
  affectsVm,
  approvalPolicySchema,
  decideApproval,
  describeRule,
  sampleApprovalPolicy,
  type ApprovalPolicy,
} from "../../src/agent/actions/approval/policy.js";
import { event } from "./fixtures.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { regenerate, repoRoot, settingEntries } from "../../infra/docs/config-reference.js";

const on = (policy: Partial<ApprovalPolicy> = {}): ApprovalPolicy => ({ ...sampleApprovalPolicy, ...policy });

describe("approval policy schema", () => {
  it("defaults to off, no rules, first-resource approver, no hook requirement", () => {
    expect(approvalPolicySchema.parse({})).toEqual({
      mode: "off",
      rules: [],
      approver: "first-resource",
      requirePrepareHookSuccess: false,
    });
  });

  it("accepts the documented sample policy", () => {
    expect(approvalPolicySchema.parse(sampleApprovalPolicy)).toEqual(sampleApprovalPolicy);
  });

  it("refuses an empty rule, unknown keys and unknown modes", () => {
    expect(approvalPolicySchema.safeParse({ mode: "on", rules: [{}] }).success).toBe(false);
    expect(approvalPolicySchema.safeParse({ rules: [{ eventTyp: ["Freeze"] }] }).success).toBe(false);
    expect(approvalPolicySchema.safeParse({ mode: "yes" }).success).toBe(false);
  });
});

describe("the documented sample policy", () => {
  // [description, event overrides, approve?]
  const table: [string, Parameters<typeof event>[0], boolean][] = [
    ["User Reboot is approved at once", { EventSource: "User", EventType: "Reboot", DurationInSeconds: -1 }, true],
    ["User Redeploy is approved at once", { EventSource: "User", EventType: "Redeploy", DurationInSeconds: 600 }, true],
    ["Platform Freeze 0 s is approved", { EventType: "Freeze", DurationInSeconds: 0 }, true],
    ["Platform Freeze 5 s is approved", { EventType: "Freeze", DurationInSeconds: 5 }, true],
    ["Platform Freeze 8 s is approved", { EventType: "Freeze", DurationInSeconds: 8 }, true],
    ["Platform Freeze 9 s is not (upper bound exclusive)", { EventType: "Freeze", DurationInSeconds: 9 }, false],
    ["Platform Freeze with unknown duration (-1) is not", { EventType: "Freeze", DurationInSeconds: -1 }, false],
    ["Platform Reboot is not", { EventType: "Reboot", DurationInSeconds: 0 }, false],
    ["Platform Redeploy is not", { EventType: "Redeploy", DurationInSeconds: 5 }, false],
    ["Platform Preempt is not", { EventType: "Preempt", DurationInSeconds: 0 }, false],
    [
      "old api-version without EventSource, Freeze 5 s, is approved",
      { EventSource: "", EventType: "Freeze", DurationInSeconds: 5 },
      true,
    ],
    ["matching is case-insensitive", { EventSource: "user", EventType: "reboot" }, true],
  ];
  it.each(table)("%s", (_name, overrides, approve) => {
    expect(decideApproval(event(overrides), "WestNO_0", sampleApprovalPolicy, false).approve).toBe(approve);
  });

  it("explains an approval with the rule that matched", () => {
    const decision = decideApproval(event({ DurationInSeconds: 5 }), "WestNO_0", sampleApprovalPolicy, false);
    expect(decision.reason).toContain("rule 2");
    expect(decision.reason).toContain("0 <= DurationInSeconds < 9");
  });
});

describe("decideApproval guards", () => {
  it("never approves when mode is off", () => {
    const d = decideApproval(event(), "WestNO_0", on({ mode: "off" }), false);
    expect(d).toEqual({ approve: false, reason: "approval is off" });
  });

  it("decides the same in dry-run (the approver then only records it)", () => {
    expect(decideApproval(event(), "WestNO_0", on({ mode: "dry-run" }), false).approve).toBe(true);
  });

  it("approves only Scheduled events", () => {
    for (const status of ["Started", "Completed", "Canceled"] as const) {
      const d = decideApproval(event({ EventStatus: status }), "WestNO_0", on(), false);
      expect(d.approve).toBe(false);
      expect(d.reason).toContain(status);
    }
  });

  it("approves each event at most once", () => {
    expect(decideApproval(event(), "WestNO_0", on(), false).approve).toBe(true);
    expect(decideApproval(event(), "WestNO_0", on(), true)).toEqual({ approve: false, reason: "already approved" });
  });

  it("elects one approver: only the first VM in Resources approves (case-insensitive)", () => {
    const e = event({ Resources: ["WestNO_0", "WestNO_1", "WestNO_2"] });
    expect(decideApproval(e, "WestNO_0", on(), false).approve).toBe(true);
    expect(decideApproval(e, "westno_0", on(), false).approve).toBe(true);
    const second = decideApproval(e, "WestNO_1", on(), false);
    expect(second.approve).toBe(false);
    expect(second.reason).toContain("not the elected approver");
    expect(decideApproval(e, "OtherVm", on(), false).approve).toBe(false);
  });

  it("with approver this-vm, any affected VM approves, unaffected ones do not", () => {
    const e = event({ Resources: ["WestNO_0", "WestNO_1"] });
    expect(decideApproval(e, "WestNO_1", on({ approver: "this-vm" }), false).approve).toBe(true);
    expect(decideApproval(e, "WestNO_9", on({ approver: "this-vm" }), false).approve).toBe(false);
  });

  it("never approves when this VM's name is unknown", () => {
    expect(decideApproval(event({ Resources: [""] }), "", on({ approver: "this-vm" }), false).approve).toBe(false);
  });

  it("does not approve an event with empty Resources", () => {
    expect(decideApproval(event({ Resources: [] }), "WestNO_0", on(), false).approve).toBe(false);
  });

  it("waits for prepare hooks when required", () => {
    const policy = on({ requirePrepareHookSuccess: true });
    expect(decideApproval(event(), "WestNO_0", policy, false).reason).toBe("waiting for prepare hooks to succeed");
    expect(decideApproval(event(), "WestNO_0", policy, false, false)).toEqual({
      approve: false,
      reason: "a prepare hook failed",
    });
    expect(decideApproval(event(), "WestNO_0", policy, false, true).approve).toBe(true);
    // Not required: the hook result does not matter.
    expect(decideApproval(event(), "WestNO_0", on(), false, false).approve).toBe(true);
  });

  it("requires every condition of a rule, any rule suffices", () => {
    const policy = on({
      rules: [
        { eventType: ["Reboot"], affectsThisVm: false },
        { eventType: ["Redeploy"], minDurationSeconds: 10 },
      ],
    });
    expect(
      decideApproval(event({ EventType: "Reboot", Resources: ["WestNO_0"] }), "WestNO_0", policy, false).approve,
    ).toBe(false);
    expect(
      decideApproval(event({ EventType: "Redeploy", DurationInSeconds: 9 }), "WestNO_0", policy, false).approve,
    ).toBe(false);
    expect(
      decideApproval(event({ EventType: "Redeploy", DurationInSeconds: 10 }), "WestNO_0", policy, false).approve,
    ).toBe(true);
    expect(decideApproval(event(), "WestNO_0", on({ rules: [] }), false)).toEqual({
      approve: false,
      reason: "no approval rule matches",
    });
  });
});

describe("approval: the edges", () => {
  it("refuses a rule whose conditions are all unset, saying why; takes this-vm as approver", () => {
    const refused = approvalPolicySchema.safeParse({ mode: "on", rules: [{ eventType: undefined }] });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues.map((i) => i.message)).toEqual([
      "an approval rule needs at least one condition (an empty rule would approve every event)",
    ]);
    expect(approvalPolicySchema.parse({ approver: "this-vm" }).approver).toBe("this-vm");
  });

  it("describes each kind of rule the way logs and records show it", () => {
    expect(describeRule({ eventSource: ["User", "Platform"] })).toBe("EventSource in [User, Platform]");
    expect(
      describeRule({ eventType: ["Freeze", "Reboot"], minDurationSeconds: 0, maxDurationSecondsExclusive: 9 }),
    ).toBe("EventType in [Freeze, Reboot], 0 <= DurationInSeconds < 9");
    expect(describeRule({ minDurationSeconds: 5 })).toBe("DurationInSeconds >= 5");
    expect(describeRule({ maxDurationSecondsExclusive: 9 })).toBe("DurationInSeconds < 9");
    expect(describeRule({ affectsThisVm: false })).toBe("AffectsThisVm = false");
  });

  it("says why it does not approve, and which rule and role made it approve", () => {
    const freeze = event({ Resources: ["WestNO_0", "WestNO_1"] });
    expect(decideApproval(freeze, "", on(), false)).toEqual({
      approve: false,
      reason: "this VM's name is unknown, cannot tell whether it is the approver",
    });
    expect(decideApproval(event({ Resources: [""] }), "", on(), false).approve).toBe(false);
    expect(decideApproval(event({ Resources: [] }), "WestNO_0", on(), false)).toEqual({
      approve: false,
      reason: 'not the elected approver (first in Resources is "")',
    });
    expect(decideApproval(freeze, "WestNO_9", on({ approver: "this-vm" }), false)).toEqual({
      approve: false,
      reason: "event does not affect this VM",
    });
    expect(decideApproval(freeze, "WestNO_0", on(), false)).toEqual({
      approve: true,
      reason: "rule 2 matches (EventType in [Freeze], 0 <= DurationInSeconds < 9); this VM is first in Resources",
    });
    expect(decideApproval(freeze, "WestNO_1", on({ approver: "this-vm" }), false)).toEqual({
      approve: true,
      reason: "rule 2 matches (EventType in [Freeze], 0 <= DurationInSeconds < 9); this VM is affected VM",
    });
  });

  it("a rule on AffectsThisVm matches the events that do (or do not) name this VM", () => {
    const policy = on({ rules: [{ affectsThisVm: true }] });
    expect(decideApproval(event({ Resources: ["WestNO_0"] }), "WestNO_0", policy, false).approve).toBe(true);
    expect(affectsVm([""], "")).toBe(false);
  });
});

describe("approval settings in the configuration reference", () => {
  it("each has a description, and the reference shows them as the schema gives them", () => {
    const entries = settingEntries();
    const approval = entries.filter((e) => e.path.startsWith("approval."));
    expect(approval.map((e) => e.path)).toEqual(
      expect.arrayContaining(["approval.mode", "approval.rules[].maxDurationSecondsExclusive", "approval.approver"]),
    );
    for (const entry of approval) expect(entry.description, entry.path).not.toBe("");
    const reference = "src/agent/config/README.md";
    const committed = readFileSync(join(repoRoot, reference), "utf8");
    expect(regenerate(committed, reference, entries)).toBe(committed);
  });
});
