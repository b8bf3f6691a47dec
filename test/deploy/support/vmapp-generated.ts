// The generated sef rollout files: the two DeployIfNotExists policy definitions (bicep/policy/sef-vm.json and
// sef-vmss.json, from one description of the rule here) and bicep/every-vm-mg.bicep (every-vm.bicep at management
// group scope). `generate.ts` writes them; vmapp-policy.test.ts fails when a checked-in copy drifts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { bicepRoot } from "./bicep.js";

export const policyDefinitionPaths = {
  vm: join(bicepRoot, "policy/sef-vm.json"),
  vmss: join(bicepRoot, "policy/sef-vmss.json"),
} as const;
export const subscriptionEntryPath = join(bicepRoot, "every-vm.bicep");
export const managementGroupEntryPath = join(bicepRoot, "every-vm-mg.bicep");
/** The API version of the VM and scale set in the rule's deployment. */
export const computeApiVersion = "2025-04-01";
/** Virtual Machine Contributor and Managed Identity Operator: what the deployment in the rule needs. */
const roles = [
  "/providers/Microsoft.Authorization/roleDefinitions/9980e02c-c2be-4d73-94e8-173b1dc7cf3c",
  "/providers/Microsoft.Authorization/roleDefinitions/f1a07417-d97a-45cb-824c-7a7467783830",
];

type Json = unknown;

const param = (type: string, description: string, extra: Record<string, Json> = {}): Json => ({
  type,
  metadata: { displayName: description.split(":")[0], description },
  ...extra,
});
const parameters = {
  effect: param(
    "String",
    "Effect: DeployIfNotExists installs sef, AuditIfNotExists only reports, Disabled turns the policy off",
    { allowedValues: ["DeployIfNotExists", "AuditIfNotExists", "Disabled"], defaultValue: "DeployIfNotExists" },
  ),
  osType: param("String", "OS type: the VMs this reference covers (the application is built for one OS)", {
    allowedValues: ["Linux", "Windows"],
  }),
  applicationId: param(
    "String",
    "Gallery application: resource id of the sef VM Application for this OS (…/galleries/G/applications/sef-linux)",
  ),
  applicationVersion: param(
    "String",
    "Version: the sef version this ring runs (a version of the application, MAJOR.MINOR.PATCH)",
  ),
  configurationReference: param(
    "String",
    "Config blob: URL of an agent config replacing the version's default configuration; empty for the version's",
    { defaultValue: "" },
  ),
  enableAutomaticUpgrade: param(
    "Boolean",
    "Automatic upgrade: the platform moves VMs to a newer version of the application on its own (bypasses the rings)",
    { defaultValue: false },
  ),
  treatFailureAsDeploymentFailure: param(
    "Boolean",
    "Fail the deployment: a failed install fails the VM update (and so the remediation), instead of being reported by the extension only",
    { defaultValue: true },
  ),
  agentIdentityResourceId: param(
    "String",
    "Agent identity: resource id of the user-assigned identity sef authenticates with (main.bicep's identityResourceId)",
  ),
  ringTagName: param("String", "Ring tag: name of the tag that puts a VM into a rollout ring", {
    defaultValue: "sef-ring",
  }),
  ringTagValues: param(
    "Array",
    "Ring: ring tag values this assignment covers; empty covers every VM whose ring tag is not in excludedRingTagValues",
    { defaultValue: [] },
  ),
  excludedRingTagValues: param(
    "Array",
    "Other rings: ring tag values left to other assignments (used when ringTagValues is empty)",
    { defaultValue: [] },
  ),
  optOutTagName: param("String", "Opt-out tag: a VM or scale set with this tag set to true is left alone", {
    defaultValue: "sef-opt-out",
  }),
};
const tag = (p: string): string => `[concat('tags[', parameters('${p}'), ']')]`;
const scope = (type: string, prefix: string): Json => ({
  allOf: [
    { field: "type", equals: type },
    { field: `${prefix}storageProfile.osDisk.osType`, equals: "[parameters('osType')]" },
    { field: "tags['aks-managed-orchestrator']", exists: false },
    { field: "tags['aks-managed-poolName']", exists: false },
    { value: "[resourceGroup().name]", notLike: "MC_*" },
    { field: tag("optOutTagName"), notEquals: "true" },
    {
      anyOf: [
        { field: tag("ringTagName"), in: "[parameters('ringTagValues')]" },
        {
          allOf: [
            { value: "[length(parameters('ringTagValues'))]", equals: 0 },
            { field: tag("ringTagName"), notIn: "[parameters('excludedRingTagValues')]" },
          ],
        },
      ],
    },
  ],
});
const apps = (prefix: string): string => `${prefix}applicationProfile.galleryApplications`;
const existence = (prefix: string): Json => ({
  allOf: [
    { field: "identity.type", contains: "UserAssigned" },
    { field: "identity.userAssignedIdentities", containsKey: "[parameters('agentIdentityResourceId')]" },
    {
      count: {
        field: `${apps(prefix)}[*]`,
        where: {
          allOf: [
            {
              field: `${apps(prefix)}[*].packageReferenceId`,
              equals: "[concat(parameters('applicationId'), '/versions/', parameters('applicationVersion'))]",
            },
            {
              anyOf: [
                { value: "[length(parameters('configurationReference'))]", equals: 0 },
                {
                  field: `${apps(prefix)}[*].configurationReference`,
                  equals: "[parameters('configurationReference')]",
                },
              ],
            },
          ],
        },
      },
      greater: 0,
    },
  ],
});
const templateParam = (type: string): Json => ({ type });
const deployment = (type: string, prefix: string, profilePath: string | undefined): Json => {
  const galleryApplications = {
    galleryApplications: "[concat(variables('otherApplications'), createArray(variables('sef')))]",
  };
  let properties: Record<string, Json> = { applicationProfile: galleryApplications };
  if (profilePath) properties = { [profilePath]: properties };
  return {
    properties: {
      mode: "incremental",
      parameters: {
        resourceName: { value: "[field('name')]" },
        location: { value: "[field('location')]" },
        identityType: { value: "[coalesce(field('identity.type'), 'None')]" },
        existingApplications: { value: `[coalesce(field('${apps(prefix)}'), createArray())]` },
        agentIdentityResourceId: { value: "[parameters('agentIdentityResourceId')]" },
        applicationId: { value: "[parameters('applicationId')]" },
        applicationVersion: { value: "[parameters('applicationVersion')]" },
        configurationReference: { value: "[parameters('configurationReference')]" },
        enableAutomaticUpgrade: { value: "[parameters('enableAutomaticUpgrade')]" },
        treatFailureAsDeploymentFailure: { value: "[parameters('treatFailureAsDeploymentFailure')]" },
      },
      template: {
        $schema: "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
        contentVersion: "1.0.0.0",
        parameters: {
          resourceName: templateParam("string"),
          location: templateParam("string"),
          identityType: templateParam("string"),
          existingApplications: templateParam("array"),
          agentIdentityResourceId: templateParam("string"),
          applicationId: templateParam("string"),
          applicationVersion: templateParam("string"),
          configurationReference: templateParam("string"),
          enableAutomaticUpgrade: templateParam("bool"),
          treatFailureAsDeploymentFailure: templateParam("bool"),
        },
        variables: {
          otherApplications:
            "[filter(parameters('existingApplications'), app => not(startsWith(toLower(app.packageReferenceId), toLower(concat(parameters('applicationId'), '/versions/')))))]",
          sef: {
            packageReferenceId: "[concat(parameters('applicationId'), '/versions/', parameters('applicationVersion'))]",
            configurationReference:
              "[if(empty(parameters('configurationReference')), null(), parameters('configurationReference'))]",
            enableAutomaticUpgrade: "[parameters('enableAutomaticUpgrade')]",
            treatFailureAsDeploymentFailure: "[parameters('treatFailureAsDeploymentFailure')]",
          },
        },
        resources: [
          {
            type,
            apiVersion: computeApiVersion,
            name: "[parameters('resourceName')]",
            location: "[parameters('location')]",
            identity: {
              type: "[if(contains(parameters('identityType'), 'SystemAssigned'), 'SystemAssigned,UserAssigned', 'UserAssigned')]",
              userAssignedIdentities: "[createObject(parameters('agentIdentityResourceId'), createObject())]",
            },
            properties,
          },
        ],
      },
    },
  };
};
/** A policy definition's properties for VMs or scale sets. */
function definition(
  what: string,
  type: string,
  prefix: string,
  profilePath: string | undefined,
  description: string,
): Json {
  return {
    displayName: `sef: install the Scheduled Events Forwarder (VM Application) and attach its identity on ${what}`,
    description,
    mode: "Indexed",
    metadata: { category: "Compute", version: "1.0.0" },
    parameters,
    policyRule: {
      if: scope(type, prefix),
      then: {
        effect: "[parameters('effect')]",
        details: {
          type,
          name: "[field('name')]",
          evaluationDelay: "AfterProvisioning",
          roleDefinitionIds: roles,
          existenceCondition: existence(prefix),
          deployment: deployment(type, prefix, profilePath),
        },
      },
    },
  };
}

/** The text of bicep/policy/sef-vm.json or sef-vmss.json. */
export function renderPolicyDefinition(kind: "vm" | "vmss"): string {
  const json =
    kind === "vm"
      ? definition(
          "virtual machines",
          "Microsoft.Compute/virtualMachines",
          "Microsoft.Compute/virtualMachines/",
          undefined,
          "Virtual machines of the given OS in the ring (ring tag), not opted out (opt-out tag true) and not AKS nodes, get the sef VM Application at the ring's version and the agent's user-assigned identity. Compliant: both present at that version. VMs of a Flexible scale set are virtual machines and covered here.",
        )
      : definition(
          "scale sets",
          "Microsoft.Compute/virtualMachineScaleSets",
          "Microsoft.Compute/virtualMachineScaleSets/virtualMachineProfile.",
          "virtualMachineProfile",
          "Scale sets (Uniform, and Flexible ones with a VM profile) of the given OS in the ring, not opted out and not AKS node pools, get the sef VM Application at the ring's version in their VM profile and the agent's user-assigned identity. Instances of a Uniform scale set with a Manual upgrade policy take the new model on their next upgrade (az vmss update-instances).",
        );
  return `${JSON.stringify(json, null, 2)}\n`;
}

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
