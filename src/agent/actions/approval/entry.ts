// The approval action's registry entry: section `approval` (policy.ts), rows of kind `approval`. Always made when the
// agent runs actions, so that it approves what a holder asks for (drain-then-approve) even with `mode: off`.
import * as z from "zod/mini";
import type { ActionEntry } from "../action.js";
import { approvalPolicySchema, type ApprovalPolicy } from "./policy.js";

export const actionEntry: ActionEntry<ApprovalPolicy> = {
  section: "approval",
  kind: "approval",
  settingsSchema: z._default(approvalPolicySchema, approvalPolicySchema.parse({})),
  settingsDescription: "Approval policy (off by default): see src/agent/actions/README.md.",
  isOn: (policy) => policy.mode !== "off",
  async create(policy, context) {
    const { ApprovalAction } = await import("./action.js");
    return new ApprovalAction({ policy, context });
  },
};
