// sef on every VM by Azure Policy (bicep/every-vm.bicep, every-vm-mg.bicep, policy/, vmapp.bicep): the generated
// files are current; every resource type, API version and property is one Azure's SDK describes; the rules name only
// aliases derived from those types; rendered for a management group with two rings, the rules cover the right VMs and
// scale sets (not AKS nodes, not opted-out VMs) and call compliant only the VMs running the ring's version.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Parser } from "web-tree-sitter";
import { beforeAll, describe, expect, it } from "vitest";
import { BicepEvaluator } from "./support/bicep-eval.js";
import { bicepResourceProblems, bicepValueProblems } from "./support/bicep-properties.js";
import {
  bicepRoot,
  callsOf,
  filesUnder,
  loadBicepParser,
  parseBicep,
  propertiesNamed,
  repoRoot,
  resourceDeclarations,
  stringLiteral,
  type BicepFile,
} from "./support/bicep.js";
import {
  aliasPaths,
  jsonProblems,
  resourceType,
  shapeAt,
  typeSources,
  type ResourceType,
  type Shape,
} from "./support/azure-types.js";
import { evaluate, fieldsNamed, type Json } from "./support/policy-eval.js";
import {
  managementGroupEntryPath,
  policyDefinitionPaths,
  renderManagementGroupEntry,
  renderPolicyDefinition,
} from "./support/vmapp-generated.js";

type Definition = {
  parameters: Record<string, { defaultValue?: Json }>;
  policyRule: { if: Json; then: { details: Record<string, Json> } };
};
const readJson = (path: string): Json => JSON.parse(readFileSync(path, "utf8")) as Json;
const definitionsByName = {
  "sef-vm": readJson(policyDefinitionPaths.vm) as Definition,
  "sef-vmss": readJson(policyDefinitionPaths.vmss) as Definition,
};

let parser: Parser;
let files: BicepFile[];
const types = new Map<string, ResourceType>();
const byName = (name: string): BicepFile => files.find((f) => f.name === `bicep/${name}`)!;
const typeOf = (type: string): ResourceType => types.get(type)!;
const propertiesShape = (type: string): Shape => shapeAt(typeOf(type).shape, ["properties"])!;

beforeAll(async () => {
  parser = await loadBicepParser();
  files = filesUnder(bicepRoot, ".bicep").map((path) => parseBicep(parser, path));
  for (const [type, pkg] of Object.entries(typeSources)) types.set(type, await resourceType(pkg, type));
});

describe("generated rollout files", () => {
  it("the policy definitions and the management group entry are current (regenerate: npx tsx test/deploy/generate.ts)", () => {
    expect(readFileSync(policyDefinitionPaths.vm, "utf8")).toBe(renderPolicyDefinition("vm"));
    expect(readFileSync(policyDefinitionPaths.vmss, "utf8")).toBe(renderPolicyDefinition("vmss"));
    expect(readFileSync(managementGroupEntryPath, "utf8")).toBe(renderManagementGroupEntry());
  });

  it("the management group entry differs from the subscription one only in scope, names and command", () => {
    const mg = byName("every-vm-mg.bicep").text;
    expect(mg).toMatch(/^targetScope = 'managementGroup'$/m);
    expect(mg).toContain("settingsOf(rollout, '')");
    expect(() => renderManagementGroupEntry("targetScope = 'subscription'\n")).toThrow(/occurrences/);
  });
});

describe("resource types and properties, against the Azure SDK's description of the same API version", () => {
  it("reads the types from the SDK packages (PUT operation, API version, body model)", () => {
    expect(typeOf("Microsoft.Compute/galleries/applications/versions")).toMatchObject({
      apiVersion: "2025-03-03",
      model: "GalleryApplicationVersion",
    });
    expect(typeOf("Microsoft.Authorization/policyAssignments")).toMatchObject({
      apiVersion: "2024-05-01",
      model: "PolicyAssignment",
    });
    expect(typeOf("Microsoft.Authorization/roleAssignments")).toMatchObject({ apiVersion: "2022-04-01" });
    expect(typeOf("Microsoft.Compute/virtualMachines")).toMatchObject({
      apiVersion: "2025-04-01",
      model: "VirtualMachine",
    });
  });

  it("every Bicep resource of these types uses the SDK's API version and only writable properties the type has", () => {
    const checked: string[] = [];
    const problems = files.flatMap((file) =>
      resourceDeclarations(file).flatMap((r) => {
        const [type, version] = r.typeAndVersion.split("@");
        const known = types.get(type!);
        if (known === undefined) return [];
        checked.push(`${file.name} ${r.symbol}`);
        const versionProblem =
          version === known.apiVersion
            ? []
            : [`${file.name} ${r.symbol}: ${r.typeAndVersion}, but ${known.source} describes ${known.apiVersion}`];
        return [...versionProblem, ...(r.existing ? [] : bicepResourceProblems(file, r.node, known.shape))];
      }),
    );
    expect(problems).toEqual([]);
    expect(checked).toEqual(
      expect.arrayContaining([
        "bicep/vmapp.bicep applicationVersion",
        "bicep/every-vm-mg.bicep assignment",
        "bicep/every-vm.bicep initiative",
        "bicep/modules/vmapp-remediation.bicep galleryReader",
      ]),
    );
  });

  it("the checker catches a property the type does not have, a read-only one, and a wrong nesting", () => {
    const version = typeOf("Microsoft.Compute/galleries/applications/versions").shape;
    const file = parseBicep(
      parser,
      join(bicepRoot, "broken.bicep"),
      "resource v 'Microsoft.Compute/galleries/applications/versions@2025-03-03' = {\n  name: 'x'\n  properties: {\n    publishingProfile: {\n      sorce: {}\n      manageActions: [\n        {}\n      ]\n      targetRegions: [for r in regions: {\n        nme: r\n      }]\n    }\n    provisioningState: 'Succeeded'\n  }\n}\n",
    );
    expect(bicepResourceProblems(file, resourceDeclarations(file)[0]!.node, version)).toEqual([
      "bicep/broken.bicep:1 v.properties.publishingProfile.sorce: no such property",
      "bicep/broken.bicep:1 v.properties.publishingProfile.manageActions: an array where the type has a object",
      "bicep/broken.bicep:1 v.properties.publishingProfile.targetRegions[].nme: no such property",
      "bicep/broken.bicep:1 v.properties.provisioningState: read-only",
    ]);
  });

  it("the policy definitions (sef-vm.json, sef-vmss.json) have the definition's properties", () => {
    for (const definition of Object.values(definitionsByName))
      expect(
        jsonProblems(definition, propertiesShape("Microsoft.Authorization/policyDefinitions"), "definition"),
      ).toEqual([]);
    expect(
      jsonProblems(
        { displayName: "x", policyRules: {} },
        propertiesShape("Microsoft.Authorization/policyDefinitions"),
        "d",
      ),
    ).toEqual(["d.policyRules: no such property"]);
  });

  it("the rule's deployment is a deployment; its template's VM and scale set use the SDK's API version and real properties", () => {
    for (const [name, definition] of Object.entries(definitionsByName)) {
      const deployment = definition.policyRule.then.details.deployment as {
        properties: { template: { resources: Record<string, Json>[]; variables: { sef: Json } } };
      };
      expect(jsonProblems(deployment, typeOf("Microsoft.Resources/deployments").shape, name)).toEqual([]);
      const [resource] = deployment.properties.template.resources;
      const type = typeOf(String(resource!.type));
      expect(resource!.apiVersion, name).toBe(type.apiVersion);
      const { type: _t, apiVersion: _v, name: _n, ...body } = resource!;
      expect(jsonProblems(body, type.shape, name)).toEqual([]);
      // The application entry the template adds: an element of galleryApplications.
      const profile = name === "sef-vm" ? ["properties"] : ["properties", "virtualMachineProfile"];
      expect(
        jsonProblems(
          [deployment.properties.template.variables.sef],
          shapeAt(type.shape, [...profile, "applicationProfile", "galleryApplications"])!,
          name,
        ),
      ).toEqual([]);
    }
  });

  it("the rendered initiative and a ring's assignment parameters have the set definition's and assignment's properties", () => {
    const { initiative, assignments } = render(sampleRollout);
    expect(
      jsonProblems(initiative, propertiesShape("Microsoft.Authorization/policySetDefinitions"), "initiative"),
    ).toEqual([]);
    for (const parameters of Object.values(assignments))
      expect(
        jsonProblems({ parameters }, propertiesShape("Microsoft.Authorization/policyAssignments"), "assignment"),
      ).toEqual([]);
  });

  it("the versions' commands and file names (infra/vmapp/commands.json) are the version's manageActions and settings", () => {
    const commands = readJson(join(repoRoot, "infra/vmapp/commands.json")) as Record<string, Record<string, string>>;
    const profile = shapeAt(propertiesShape("Microsoft.Compute/galleries/applications/versions"), [
      "publishingProfile",
    ])!;
    for (const os of ["linux", "windows"]) {
      const { install, update, remove, packageFileName, configFileName } = commands[os]!;
      expect(
        jsonProblems(
          { manageActions: { install, update, remove }, settings: { packageFileName, configFileName } },
          profile,
          os,
        ),
      ).toEqual([]);
    }
    const vmapp = byName("vmapp.bicep");
    expect(callsOf(vmapp, "loadJsonContent").map((c) => stringLiteral(c.args[0]))).toEqual([
      "../infra/vmapp/commands.json",
    ]);
    const actions = propertiesNamed(vmapp, "manageActions")[0]!.value.text.replace(/\s+/g, " ");
    expect(actions).toBe(
      "{ install: commands[app.os].install update: commands[app.os].update remove: commands[app.os].remove }",
    );
  });
});

/** A field every type has (Azure Policy's own fields), as opposed to a type's aliases. */
const commonFields = /^(type|name|location|kind|id|tags|tags\[.+\]|identity\.type|identity\.userAssignedIdentities)$/;

describe("policy aliases", () => {
  const defaults = (definition: Definition): Record<string, Json> => ({
    ...Object.fromEntries(Object.entries(definition.parameters).map(([k, v]) => [k, v.defaultValue])),
  });

  it("every field the rules name is a common field or an alias of the resource type's properties", () => {
    const unknown = Object.entries(definitionsByName).flatMap(([name, definition]) => {
      const type = typeOf(String(definition.policyRule.then.details.type));
      const aliases = aliasPaths(type);
      const fields = fieldsNamed(
        [definition.policyRule.if, definition.policyRule.then.details.existenceCondition],
        defaults(definition),
      );
      expect(fields.length, name).toBeGreaterThan(8);
      return fields.filter((f) => !commonFields.test(f) && !aliases.has(f)).map((f) => `${name}: ${f}`);
    });
    expect(unknown).toEqual([]);
  });

  it("aliases are derived from the type's property paths, and a made-up one is not among them", () => {
    const vm = aliasPaths(typeOf("Microsoft.Compute/virtualMachines"));
    expect(vm.has("Microsoft.Compute/virtualMachines/storageProfile.osDisk.osType")).toBe(true);
    expect(
      vm.has("Microsoft.Compute/virtualMachines/applicationProfile.galleryApplications[*].packageReferenceId"),
    ).toBe(true);
    expect(
      vm.has("Microsoft.Compute/virtualMachines/applicationProfile.galleryApplications[*].packageReferenceID2"),
    ).toBe(false);
    expect(vm.has("Microsoft.Compute/virtualMachines/storageProfile.osDisk.osTyp")).toBe(false);
    const vmss = aliasPaths(typeOf("Microsoft.Compute/virtualMachineScaleSets"));
    expect(
      vmss.has(
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachineProfile.applicationProfile.galleryApplications[*]",
      ),
    ).toBe(true);
  });
});

// ---- rendering for a management group --------------------------------------------------------------------------

interface Ring {
  name: string;
  version: string;
  tagValues: string[];
}
const sampleRollout = {
  subscriptionId: "00000000-0000-0000-0000-0000000000aa",
  resourceGroupName: "sef-rg",
  galleryName: "sef_gallery",
  rings: [
    { name: "canary", version: "0.2.0", tagValues: ["canary"] },
    { name: "broad", version: "0.1.0", tagValues: [] },
  ] as Ring[],
};

/** What every-vm-mg.bicep passes to Azure for a rollout: the initiative's properties and each ring's assignment parameters. */
function render(rollout: typeof sampleRollout): {
  initiative: Record<string, Json>;
  assignments: Record<string, Record<string, { value: Json }>>;
} {
  const initiativeFile = byName("policy/initiative.bicep");
  const evaluator = new BicepEvaluator(initiativeFile);
  const entry = byName("every-vm-mg.bicep");
  // The entry calls exactly these, so evaluating them renders its deployment.
  expect(entry.text).toContain(
    "import { definitions, initiativeProperties, ringParameters, roleIds, rolloutSettings, settingsOf } from 'policy/initiative.bicep'",
  );
  expect(entry.text).toContain("var settings = settingsOf(rollout, '')");
  expect(entry.text).toContain("'${remediationIdentityId}': {}");
  // The assignments' identity key is computed from the name the remediation module gives it.
  expect(entry.text).toMatch(
    /^var remediationIdentityId = '.*\/userAssignedIdentities\/\$\{namePrefix\}-policy-remediation'$/m,
  );
  expect(byName("modules/vmapp-remediation.bicep").text).toContain("name: '${namePrefix}-policy-remediation'");
  expect(entry.text).toContain("parameters: ringParameters(r, rollout.rings, settings)");
  expect(entry.text).toContain(
    "initiativeProperties([policyDefinition[0].id, policyDefinition[1].id], definitions[0].properties.parameters)",
  );
  const definitions = evaluator.variable("definitions") as { name: string; properties: Definition }[];
  const settings = evaluator.call("settingsOf", [rollout, ""]);
  const initiative = evaluator.call("initiativeProperties", [
    definitions.map(
      (d) =>
        `/providers/Microsoft.Management/managementGroups/mg/providers/Microsoft.Authorization/policyDefinitions/sef-${d.name}`,
    ),
    definitions[0]!.properties.parameters,
  ]) as Record<string, Json>;
  const assignments = Object.fromEntries(
    rollout.rings.map((r) => [
      r.name,
      evaluator.call("ringParameters", [r, rollout.rings, settings]) as Record<string, { value: Json }>,
    ]),
  );
  return { initiative, assignments };
}

interface Reference {
  ring: string;
  id: string;
  definition: Definition;
  parameters: Record<string, Json>;
}

/** Each (ring, initiative reference) with the parameters its definition sees. */
function references(): Reference[] {
  const { initiative, assignments } = render(sampleRollout);
  return Object.entries(assignments).flatMap(([ring, assigned]) =>
    (
      initiative.policyDefinitions as {
        policyDefinitionReferenceId: string;
        policyDefinitionId: string;
        parameters: Record<string, { value: Json }>;
      }[]
    ).map((reference) => {
      const definition =
        definitionsByName[reference.policyDefinitionId.split("/").at(-1) as keyof typeof definitionsByName];
      const parameters = Object.fromEntries(
        Object.entries(reference.parameters).map(([name, { value }]) => {
          const passed = typeof value === "string" ? /^\[parameters\('(\w+)'\)\]$/.exec(value) : null;
          return [name, passed === null ? value : assigned[passed[1]!]!.value];
        }),
      );
      // Definition defaults for what the initiative does not pass.
      for (const [name, declared] of Object.entries(definition.parameters))
        if (!(name in parameters)) parameters[name] = declared.defaultValue;
      return { ring, id: reference.policyDefinitionReferenceId, definition, parameters };
    }),
  );
}

const galleryId =
  "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/sef-rg/providers/Microsoft.Compute/galleries/sef_gallery";
const agentIdentity =
  "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/sef-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/sef-agent-identity";

function vm(
  os: "Linux" | "Windows",
  tags: Record<string, string> = {},
  extra: Record<string, Json> = {},
): Record<string, Json> {
  return {
    type: "Microsoft.Compute/virtualMachines",
    name: "vm1",
    location: "westeurope",
    tags,
    properties: { storageProfile: { osDisk: { osType: os } } },
    ...extra,
  };
}

function vmss(os: "Linux" | "Windows", tags: Record<string, string> = {}, mode = "Uniform"): Record<string, Json> {
  return {
    type: "Microsoft.Compute/virtualMachineScaleSets",
    name: "ss1",
    location: "westeurope",
    tags,
    properties: { orchestrationMode: mode, virtualMachineProfile: { storageProfile: { osDisk: { osType: os } } } },
  };
}

/** The (ring, reference) pairs whose `if` matches a resource. */
function applicable(resource: Record<string, Json>, resourceGroup = "app-rg"): string[] {
  return references()
    .filter((r) => evaluate(r.definition.policyRule.if, { resource, parameters: r.parameters, resourceGroup }))
    .map((r) => `${r.ring}/${r.id}`);
}

/** Whether the existence condition of (ring, reference) holds for a resource (compliant). */
function compliant(ring: string, id: string, resource: Record<string, Json>): boolean {
  const r = references().find((x) => x.ring === ring && x.id === id)!;
  return evaluate(r.definition.policyRule.then.details.existenceCondition, {
    resource,
    parameters: r.parameters,
    resourceGroup: "app-rg",
  });
}

const aksTags = { "aks-managed-orchestrator": "Kubernetes:1.33.3", "aks-managed-poolName": "system" };

describe("rendered for a management group with a canary and a broad ring", () => {
  it("an untagged Linux VM is the broad ring's, a canary-tagged one the canary's; Windows VMs get the Windows reference", () => {
    expect(applicable(vm("Linux"))).toEqual(["broad/linux-vm"]);
    expect(applicable(vm("Linux", { "sef-ring": "canary" }))).toEqual(["canary/linux-vm"]);
    expect(applicable(vm("Linux", { "SEF-RING": "Canary" }))).toEqual(["canary/linux-vm"]);
    expect(applicable(vm("Windows"))).toEqual(["broad/windows-vm"]);
    expect(applicable(vm("Linux", { "sef-ring": "someday" }))).toEqual(["broad/linux-vm"]);
  });

  it("scale sets, Uniform and Flexible with a VM profile, get the scale set reference; a Flexible one without a profile none (its VMs are VMs)", () => {
    expect(applicable(vmss("Linux"))).toEqual(["broad/linux-vmss"]);
    expect(applicable(vmss("Windows", { "sef-ring": "canary" }, "Flexible"))).toEqual(["canary/windows-vmss"]);
    expect(
      applicable({
        type: "Microsoft.Compute/virtualMachineScaleSets",
        name: "flex",
        location: "westeurope",
        properties: { orchestrationMode: "Flexible" },
      }),
    ).toEqual([]);
  });

  it("AKS node pools are excluded: by their aks-managed tags in any resource group, and anything in an MC_ resource group", () => {
    expect(applicable(vmss("Linux", aksTags), "MC_rg_cluster_westeurope")).toEqual([]);
    expect(applicable(vmss("Linux", aksTags), "custom-node-rg")).toEqual([]);
    expect(applicable(vmss("Linux", { "aks-managed-poolName": "np1" }), "custom-node-rg")).toEqual([]);
    expect(applicable(vm("Linux", aksTags), "custom-node-rg")).toEqual([]);
    expect(applicable(vmss("Linux"), "mc_rg_cluster_westeurope")).toEqual([]);
    expect(applicable(vmss("Linux"), "rg-mc-like")).toEqual(["broad/linux-vmss"]);
  });

  it("VMs and scale sets with the opt-out tag true are excluded, whatever their ring", () => {
    expect(applicable(vm("Linux", { "sef-opt-out": "true" }))).toEqual([]);
    expect(applicable(vm("Linux", { "sef-opt-out": "True", "sef-ring": "canary" }))).toEqual([]);
    expect(applicable(vmss("Windows", { "sef-opt-out": "true" }))).toEqual([]);
    expect(applicable(vm("Linux", { "sef-opt-out": "false" }))).toEqual(["broad/linux-vm"]);
  });

  it("compliant only with the agent identity and the ring's version; another version or no identity is not", () => {
    const withApps = (
      apps: Json[],
      identity: Json = { type: "SystemAssigned, UserAssigned", userAssignedIdentities: { [agentIdentity]: {} } },
    ) =>
      vm(
        "Linux",
        {},
        {
          identity,
          properties: {
            storageProfile: { osDisk: { osType: "Linux" } },
            applicationProfile: { galleryApplications: apps },
          },
        },
      );
    const sef = (version: string) => ({
      packageReferenceId: `${galleryId}/applications/sef-linux/versions/${version}`,
    });
    const other = {
      packageReferenceId:
        "/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/galleries/g/applications/other/versions/1.0.0",
    };
    expect(compliant("broad", "linux-vm", withApps([other, sef("0.1.0")]))).toBe(true);
    expect(compliant("canary", "linux-vm", withApps([sef("0.2.0")]))).toBe(true);
    expect(compliant("canary", "linux-vm", withApps([sef("0.1.0")]))).toBe(false); // an old version: non-compliant
    expect(compliant("broad", "linux-vm", withApps([other]))).toBe(false);
    expect(compliant("broad", "linux-vm", withApps([sef("0.1.0")], { type: "SystemAssigned" }))).toBe(false);
    expect(compliant("broad", "linux-vm", vm("Linux"))).toBe(false);
    // The Windows reference wants the Windows application.
    expect(compliant("broad", "windows-vm", withApps([sef("0.1.0")]))).toBe(false);
  });

  it("the rings' assignments share out the VMs: the broad ring leaves the canary's tag values alone", () => {
    const { assignments } = render(sampleRollout);
    expect(assignments.canary!.ringTagValues!.value).toEqual(["canary"]);
    expect(assignments.broad!.ringTagValues!.value).toEqual([]);
    expect(assignments.broad!.excludedRingTagValues!.value).toEqual(["canary"]);
    expect(assignments.canary!.applicationVersion!.value).toBe("0.2.0");
    expect(assignments.broad!.linuxApplicationId!.value).toBe(`${galleryId}/applications/sef-linux`);
  });

  it("the remediation identity gets the roles the definitions declare, and Reader on the gallery", () => {
    const declared = new Set(
      Object.values(definitionsByName).flatMap((d) =>
        (d.policyRule.then.details.roleDefinitionIds as string[]).map((id) => id.split("/").at(-1)),
      ),
    );
    const roleIds = new BicepEvaluator(byName("policy/initiative.bicep")).variable("roleIds") as Record<string, string>;
    expect(declared).toEqual(new Set([roleIds.virtualMachineContributor, roleIds.managedIdentityOperator]));
    const assigned = [
      ...byName("every-vm-mg.bicep").text.matchAll(/roleIds\.(\w+)\)/g),
      ...byName("modules/vmapp-remediation.bicep").text.matchAll(/roleIds\.(\w+)\)/g),
    ].map((m) => m[1]);
    expect(new Set(assigned)).toEqual(new Set(["virtualMachineContributor", "managedIdentityOperator", "reader"]));
  });
});

describe("the policy evaluator, on the examples of Azure Policy's documentation", () => {
  const context = (resource: Record<string, Json>, parameters: Record<string, Json> = {}) => ({
    resource,
    parameters,
    resourceGroup: "rg1",
  });
  const nsg = {
    type: "Microsoft.Network/networkSecurityGroups",
    name: "nsg1",
    tags: { Environment: "Prod" },
    properties: {
      securityRules: [
        { name: "a", properties: { direction: "Inbound", access: "Allow" } },
        { name: "b", properties: { direction: "Outbound", access: "Deny" } },
      ],
    },
  };

  it("equals and in ignore case; like matches * wildcards; a missing field fails equals and passes notEquals", () => {
    expect(evaluate({ field: "tags['environment']", equals: "prod" }, context(nsg))).toBe(true);
    expect(evaluate({ field: "tags.Environment", in: ["dev", "PROD"] }, context(nsg))).toBe(true);
    expect(evaluate({ field: "name", like: "nsg*" }, context(nsg))).toBe(true);
    expect(evaluate({ field: "name", like: "*g1" }, context(nsg))).toBe(true);
    expect(evaluate({ field: "name", like: "vm*" }, context(nsg))).toBe(false);
    expect(evaluate({ field: "tags['owner']", equals: "x" }, context(nsg))).toBe(false);
    expect(evaluate({ field: "tags['owner']", notEquals: "x" }, context(nsg))).toBe(true);
    expect(evaluate({ field: "tags['owner']", notIn: ["x"] }, context(nsg))).toBe(true);
    expect(evaluate({ field: "tags['owner']", exists: "false" }, context(nsg))).toBe(true);
    expect(evaluate({ field: "tags['owner']", exists: true }, context(nsg))).toBe(false);
  });

  it("count with where counts the array members that match; [*] outside count must hold for every member", () => {
    const rules = "Microsoft.Network/networkSecurityGroups/securityRules[*]";
    expect(
      evaluate(
        { count: { field: rules, where: { field: `${rules}.direction`, equals: "Inbound" } }, equals: 1 },
        context(nsg),
      ),
    ).toBe(true);
    expect(evaluate({ count: { field: rules }, greater: 1 }, context(nsg))).toBe(true);
    expect(
      evaluate(
        {
          count: {
            field: rules,
            where: {
              allOf: [
                { field: `${rules}.direction`, equals: "Inbound" },
                { field: `${rules}.access`, equals: "Deny" },
              ],
            },
          },
          greater: 0,
        },
        context(nsg),
      ),
    ).toBe(false);
    expect(evaluate({ field: `${rules}.direction`, in: ["Inbound", "Outbound"] }, context(nsg))).toBe(true);
    expect(evaluate({ field: `${rules}.direction`, equals: "Inbound" }, context(nsg))).toBe(false);
    // An alias of another type does not apply.
    expect(
      evaluate(
        { count: { field: "Microsoft.Compute/virtualMachines/applicationProfile.galleryApplications[*]" }, equals: 0 },
        context(nsg),
      ),
    ).toBe(true);
  });

  it("allOf, anyOf and not; value conditions with template functions; containsKey; field names built from parameters", () => {
    const vmDoc = {
      type: "Microsoft.Compute/virtualMachines",
      name: "vm",
      tags: { "cost-center": "42" },
      identity: { type: "SystemAssigned,UserAssigned", userAssignedIdentities: { "/subs/x/id1": {} } },
    };
    expect(
      evaluate(
        {
          allOf: [
            { field: "type", equals: "microsoft.compute/virtualmachines" },
            { not: { field: "name", equals: "other" } },
          ],
        },
        context(vmDoc),
      ),
    ).toBe(true);
    expect(
      evaluate(
        {
          anyOf: [
            { field: "name", equals: "a" },
            { field: "name", equals: "b" },
          ],
        },
        context(vmDoc),
      ),
    ).toBe(false);
    expect(evaluate({ value: "[resourceGroup().name]", like: "RG*" }, context(vmDoc))).toBe(true);
    expect(evaluate({ value: "[length(parameters('list'))]", equals: 0 }, context(vmDoc, { list: [] }))).toBe(true);
    expect(
      evaluate(
        { field: "[concat('tags[', parameters('tagName'), ']')]", equals: "42" },
        context(vmDoc, { tagName: "cost-center" }),
      ),
    ).toBe(true);
    expect(evaluate({ field: "identity.userAssignedIdentities", containsKey: "/SUBS/x/id1" }, context(vmDoc))).toBe(
      true,
    );
    expect(evaluate({ field: "identity.userAssignedIdentities", containsKey: "/subs/x/id2" }, context(vmDoc))).toBe(
      false,
    );
    expect(evaluate({ field: "identity.type", contains: "userassigned" }, context(vmDoc))).toBe(true);
    expect(() => evaluate({ field: "name", equals: "[parameters('missing')]" }, context(vmDoc))).toThrow(
      /no parameter missing/,
    );
  });
});

describe("Bicep values against shapes", () => {
  it("follows for, if, ternaries and union() into object literals", () => {
    const shape: Shape = {
      kind: "object",
      properties: new Map([["a", { shape: { kind: "scalar", type: "String" }, readOnly: false }]]),
    };
    const file = parseBicep(parser, join(bicepRoot, "x.bicep"), "var v = union(x, c ? { a: 'y' } : { b: 'z' })\n");
    const value = file.root.descendantsOfType("call_expression")[0]!;
    expect(bicepValueProblems(value, shape, "v")).toEqual(["v.b: no such property"]);
  });
});
