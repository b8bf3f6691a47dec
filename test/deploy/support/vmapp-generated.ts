// The generated sef rollout files: the remediation templates the policy definitions embed (bicep/policy/remediation-
// vm.json and -vmss.json, written by the Bicep CLI from their modules) and bicep/every-vm-mg.bicep (every-vm.bicep at
// management group scope). `generate.ts` writes them; the tests fail when a checked-in copy drifts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { bicepRoot } from "./bicep.js";

/** The compiled remediation templates (bicep/policy/definitions.bicep loads them), each from its .bicep module. */
export const remediationTemplatePaths = {
  vm: join(bicepRoot, "policy/remediation-vm.json"),
  vmss: join(bicepRoot, "policy/remediation-vmss.json"),
} as const;
export const subscriptionEntryPath = join(bicepRoot, "every-vm.bicep");
export const managementGroupEntryPath = join(bicepRoot, "every-vm-mg.bicep");
/** every-vm.bicep with the management group's scope, names and command: the only differences between the two. */
const toManagementGroup: readonly (readonly [string, string])[] = [
  [
    "// sef on every VM and scale set of a subscription, in one deployment",
    "// sef on every VM and scale set of a management group, in one deployment",
  ],
  [
    "`az deployment sub create -l REGION -f bicep/every-vm.bicep -p bicep/every-vm.bicepparam`.",
    "`az deployment mg create -m MG -l REGION -f bicep/every-vm-mg.bicep -p bicep/every-vm-mg.bicepparam`.",
  ],
  [
    "// For a management group: every-vm-mg.bicep (the same content from policy/initiative.bicep).",
    "// Generated from every-vm.bicep by `npx tsx test/deploy/generate.ts`: edit that one. rollout.subscriptionId is required.",
  ],
  ["targetScope = 'subscription'", "targetScope = 'managementGroup'"],
  ["settingsOf(rollout, subscription().subscriptionId)", "settingsOf(rollout, '')"],
  ["guid(subscription().id, namePrefix", "guid(managementGroup().id, namePrefix"],
];

/** The text of bicep/every-vm-mg.bicep: every-vm.bicep with each of the substitutions above made exactly once. */
export function renderManagementGroupEntry(
  subscriptionText: string = readFileSync(subscriptionEntryPath, "utf8"),
): string {
  return toManagementGroup.reduce((text, [from, to]) => {
    const count = text.split(from).length - 1;
    if (count !== 1)
      throw new Error(`every-vm.bicep has ${count} occurrences of ${JSON.stringify(from)} (expected one)`);
    return text.replace(from, to);
  }, subscriptionText);
}
