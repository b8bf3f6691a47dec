// sef on every VM by Azure Policy (bicep/every-vm.bicep, every-vm-mg.bicep, policy/, vmapp.bicep): rendered for a
// management group by the Bicep CLI's own template engine (`bicep snapshot`), the definitions, initiative and
// assignments have the properties Azure's SDK describes and their rules name only aliases of those types; the rules
// (Azure Policy's language, which no offline Azure tool evaluates) run on sample VMs and scale sets in a small evaluator:
// who is in scope, which ring, what is compliant. The remediation's functions run in the engine on live-like resources.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Parser } from "web-tree-sitter";
import { beforeAll, describe, expect, it } from "vitest";
import { bicepRoot, loadBicepParser, parseBicep, propertiesNamed, repoRoot, type BicepFile } from "./support/bicep.js";
import { managementGroupScope, resourceGroupScope, snapshot, type Snapshot } from "./support/bicep-cli.js";
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
import { managementGroupEntryPath, renderManagementGroupEntry } from "./support/vmapp-generated.js";

type Definition = {
  parameters: Record<string, { defaultValue?: Json }>;
  policyRule: { if: Json; then: { details: Record<string, Json> } };
};
type Resource = { type: string; name: string; properties: Record<string, Json> } & Record<string, Json>;

interface Ring {
  name: string;
  version: string;
  tagValues: string[];
  configurationReference?: string;
}
const sampleRollout = {
  subscriptionId: "00000000-0000-0000-0000-0000000000aa",
  resourceGroupName: "sef-rg",
  galleryName: "sef_gallery",
  regions: ["westeurope", "northeurope"],
  customImageIds: ["/subscriptions/x/resourceGroups/img/providers/Microsoft.Compute/galleries/g/images/golden"],
  rings: [
    { name: "canary", version: "0.2.0", tagValues: ["canary"] },
    { name: "broad", version: "0.1.0", tagValues: [] },
  ] as Ring[],
};
const galleryId =
  "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/sef-rg/providers/Microsoft.Compute/galleries/sef_gallery";
const agentIdentity =
  "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/sef-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/sef-agent-identity";

let parser: Parser;
let rendered: Snapshot;
let withSas: Snapshot;
let remediationCases: Snapshot;
const types = new Map<string, ResourceType>();
const typeOf = (type: string): ResourceType => types.get(type)!;
const propertiesShape = (type: string): Shape => shapeAt(typeOf(type).shape, ["properties"])!;
const renderedOf = (type: string): Resource[] =>
  rendered.resources.filter((r) => r.type === `Microsoft.Authorization/${type}`) as Resource[];
const definitionsByName = (): Record<string, Definition> =>
  Object.fromEntries(renderedOf("policyDefinitions").map((d) => [d.name, d.properties as unknown as Definition]));
const byName = (name: string): BicepFile => parseBicep(parser, join(bicepRoot, name));

/** What a remediation reads live from a VM (remediation-vm.bicep passes it to remediation-apply-vm.bicep). */
const amaIdentity = "/subscriptions/x/resourceGroups/y/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ama";
const otherApp = {
  packageReferenceId:
    "/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/galleries/g/applications/other/versions/1.0.0",
  order: 1,
};
const linuxApp = `${galleryId}/applications/sef-linux`;
const sefParameters = {
  resourceName: "vm1",
  location: "westeurope",
  agentIdentityResourceId: agentIdentity,
  applicationId: linuxApp,
  applicationVersion: "0.2.0",
  configurationReference: "",
  enableAutomaticUpgrade: false,
};
const richLive = {
  liveIdentity: {
    type: "SystemAssigned, UserAssigned",
    principalId: "p0",
    userAssignedIdentities: { [amaIdentity]: { principalId: "p", clientId: "c" } },
  },
  liveApplications: [otherApp, { packageReferenceId: `${linuxApp}/versions/0.1.0` }],
};

beforeAll(async () => {
  parser = await loadBicepParser();
  const withSasRollout = {
    ...sampleRollout,
    rings: [
      {
        ...sampleRollout.rings[0]!,
        configurationReference: "https://a.example/c/config.json?sv=x&se=2026-12-14&sig=y",
      },
    ],
  };
  [rendered, withSas, remediationCases] = await Promise.all([
    snapshot("bicep/every-vm-mg.bicep", { rollout: sampleRollout }, managementGroupScope),
    snapshot("bicep/every-vm-mg.bicep", { rollout: withSasRollout }, managementGroupScope),
    snapshot(
      "test/deploy/fixtures/remediation-cases.bicep",
      {
        vmCases: [
          { ...sefParameters, ...richLive },
          { ...sefParameters, resourceName: "vm2", liveIdentity: {}, liveApplications: [], removeSef: true },
        ],
        vmssCases: [{ ...sefParameters, ...richLive }],
      },
      resourceGroupScope,
    ),
  ]);
  for (const [type, pkg] of Object.entries(typeSources)) types.set(type, await resourceType(pkg, type));
}, 600_000);

describe("rendered by the Bicep CLI's template engine (bicep snapshot) for a management group", () => {
  it("writes the two definitions, the initiative, one assignment per ring and the remediation identity's roles", () => {
    expect(rendered.run.status, rendered.run.stderr).toBe(0);
    expect(Object.keys(definitionsByName()).sort()).toEqual(["sef-vm", "sef-vmss"]);
    expect(renderedOf("policySetDefinitions").map((r) => r.name)).toEqual(["sef"]);
    expect(renderedOf("policyAssignments").map((r) => r.name)).toEqual(["sef-canary", "sef-broad"]);
    expect(renderedOf("roleAssignments")).toHaveLength(3);
  });

  it("the management group entry is every-vm.bicep with its scope, names and command (npx tsx test/deploy/generate.ts)", () => {
    expect(readFileSync(managementGroupEntryPath, "utf8")).toBe(renderManagementGroupEntry());
    expect(() => renderManagementGroupEntry("targetScope = 'subscription'\n")).toThrow(/occurrences/);
  });

  it("a ring's configurationReference with a SAS expiry fails the deployment, naming the ring", () => {
    expect(withSas.run.status).not.toBe(0);
    expect(withSas.run.stderr + withSas.run.stdout).toContain(
      "ring canary: configurationReference carries a SAS expiry",
    );
  });
});

describe("resource types and properties, against the Azure SDK's description of the same API version", () => {
  it("reads the types from the SDK packages (PUT operation, API version, body model)", () => {
    expect(typeOf("Microsoft.Authorization/policyAssignments")).toMatchObject({
      apiVersion: "2024-05-01",
      model: "PolicyAssignment",
    });
    expect(typeOf("Microsoft.Compute/virtualMachines")).toMatchObject({
      apiVersion: "2025-04-01",
      model: "VirtualMachine",
    });
  });

  it("the rendered definitions, initiative and assignments have only the properties their types have", () => {
    for (const type of ["policyDefinitions", "policySetDefinitions", "policyAssignments"])
      for (const resource of renderedOf(type))
        expect(
          jsonProblems(resource.properties, propertiesShape(`Microsoft.Authorization/${type}`), resource.name),
        ).toEqual([]);
    expect(
      jsonProblems(
        { displayName: "x", policyRules: {} },
        propertiesShape("Microsoft.Authorization/policyDefinitions"),
        "d",
      ),
    ).toEqual(["d.policyRules: no such property"]);
  });

  it("the versions' commands and file names come from infra/vmapp/commands.json; configFileName is always set", () => {
    const commands = JSON.parse(readFileSync(join(repoRoot, "infra/vmapp/commands.json"), "utf8")) as Record<
      string,
      Record<string, string>
    >;
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
    // Without configFileName Azure names the file <application>_config (REST spec) or -config (docs).
    expect(propertiesNamed(vmapp, "configFileName").map((p) => p.value.text)).toEqual([
      "commands[app.os].configFileName",
    ]);
    expect(propertiesNamed(vmapp, "packageFileName").map((p) => p.value.text)).toEqual([
      "commands[app.os].packageFileName",
    ]);
    // A version is replicated to its own region whatever targetRegions says.
    expect(vmapp.text).toMatch(/^var regions = union\(\[location\], targetRegions\)$/m);
  });

  it("vmapp.bicep writes the bundle's SHA-256 into the version's commands and refuses a bundle without one", async () => {
    const commands = JSON.parse(readFileSync(join(repoRoot, "infra/vmapp/commands.json"), "utf8")) as Record<
      string,
      Record<string, string>
    >;
    const sha256 = "AB".repeat(32);
    const url = "https://sefpkgs.blob.core.windows.net/sef-releases/1.2.3/sef-1.2.3-vmapp-linux.tar?sig=x";
    const [published, unhashed] = await Promise.all([
      snapshot(
        "bicep/vmapp.bicep",
        { galleryName: "sef_gallery", version: "1.2.3", linuxBundle: { url, sha256 } },
        resourceGroupScope,
      ),
      snapshot(
        "bicep/vmapp.bicep",
        { galleryName: "sef_gallery", version: "1.2.3", linuxBundle: { url, sha256: "ab" } },
        resourceGroupScope,
      ),
    ]);
    expect(published.run.status, published.run.stderr).toBe(0);
    const versions = published.resources.filter(
      (r) => r.type === "Microsoft.Compute/galleries/applications/versions",
    ) as {
      name: string;
      properties: { publishingProfile: { source: { mediaLink: string }; manageActions: object } };
    }[];
    expect(versions.map((v) => v.name)).toEqual(["sef_gallery/sef-linux/1.2.3"]); // no Windows bundle: no version
    const profile = versions[0]!.properties.publishingProfile;
    // The URL is @secure(): the engine leaves it to the deployment (never in the template's text or its history).
    expect(profile.source.mediaLink).toBe("[coalesce(parameters('linuxBundle').url, '')]");
    const withHash = (command: string) => command.replaceAll("@BUNDLE_SHA256@", sha256.toLowerCase());
    expect(profile.manageActions).toEqual({
      install: withHash(commands.linux!.install!),
      update: withHash(commands.linux!.update!),
      remove: withHash(commands.linux!.remove!),
    });
    expect(unhashed.run.status).not.toBe(0);
    expect(unhashed.run.stderr).toMatch(/BCP333: .* minimum allowable length is 64/);
  });
});

/** A field every type has (Azure Policy's own fields), as opposed to a type's aliases. */
const commonFields = /^(type|name|location|kind|id|tags|tags\[.+\]|identity\.type|identity\.userAssignedIdentities)$/;
/** Aliases Azure names apart from the property paths (used by Microsoft's built-in Azure Monitor Agent policies). */
const renamedAliases = new Set(["Microsoft.Compute/imagePublisher", "Microsoft.Compute/imageId"]);

describe("policy aliases", () => {
  it("every field the rendered rules name is a common field, a renamed image alias or an alias of the type's paths", () => {
    const unknown = Object.entries(definitionsByName()).flatMap(([name, definition]) => {
      const type = typeOf(String(definition.policyRule.then.details.type));
      const aliases = aliasPaths(type);
      const defaults = Object.fromEntries(Object.entries(definition.parameters).map(([k, v]) => [k, v.defaultValue]));
      const fields = fieldsNamed(
        [definition.policyRule.if, definition.policyRule.then.details.existenceCondition],
        defaults,
      );
      expect(fields.length, name).toBeGreaterThan(12);
      return fields
        .filter((f) => !commonFields.test(f) && !renamedAliases.has(f) && !aliases.has(f))
        .map((f) => `${name}: ${f}`);
    });
    expect(unknown).toEqual([]);
  });

  it("aliases are derived from the type's property paths, and a made-up one is not among them", () => {
    const vm = aliasPaths(typeOf("Microsoft.Compute/virtualMachines"));
    expect(vm.has("Microsoft.Compute/virtualMachines/storageProfile.osDisk.osType")).toBe(true);
    expect(vm.has("Microsoft.Compute/virtualMachines/osProfile.linuxConfiguration.provisionVMAgent")).toBe(true);
    expect(vm.has("Microsoft.Compute/virtualMachines/storageProfile.osDisk.osTyp")).toBe(false);
    const vmss = aliasPaths(typeOf("Microsoft.Compute/virtualMachineScaleSets"));
    expect(vmss.has("Microsoft.Compute/virtualMachineScaleSets/upgradePolicy.mode")).toBe(true);
  });
});

// ---- the rendered rules on sample VMs and scale sets ------------------------------------------------------------

interface Reference {
  ring: string;
  id: string;
  definition: Definition;
  parameters: Record<string, Json>;
}

/** Each (ring, initiative reference) with the parameters its definition sees, from the rendered resources. */
function references(overrides: Record<string, Json> = {}): Reference[] {
  const [initiative] = renderedOf("policySetDefinitions");
  const definitions = definitionsByName();
  return renderedOf("policyAssignments").flatMap((assignment) => {
    const assigned = assignment.properties.parameters as Record<string, { value: Json }>;
    const ring = assignment.name.replace(/^sef-/, "");
    return (
      initiative!.properties.policyDefinitions as {
        policyDefinitionReferenceId: string;
        policyDefinitionId: string;
        parameters: Record<string, { value: Json }>;
      }[]
    ).map((reference) => {
      const definition = definitions[reference.policyDefinitionId.split("/").at(-1)!]!;
      const parameters = Object.fromEntries(
        Object.entries(reference.parameters).map(([name, { value }]) => {
          const passed = typeof value === "string" ? /^\[parameters\('(\w+)'\)\]$/.exec(value) : null;
          return [name, passed === null ? value : assigned[passed[1]!]!.value];
        }),
      );
      for (const [name, declared] of Object.entries(definition.parameters))
        if (!(name in parameters)) parameters[name] = declared.defaultValue;
      return {
        ring,
        id: reference.policyDefinitionReferenceId,
        definition,
        parameters: { ...parameters, ...overrides },
      };
    });
  });
}

const marketplace = (publisher = "Canonical"): Json => ({ publisher, offer: "x", sku: "y", version: "latest" });

function vm(
  os: "Linux" | "Windows",
  tags: Record<string, string> = {},
  extra: Record<string, Json> = {},
): Record<string, Json> {
  const { properties, ...rest } = extra as { properties?: Record<string, Json> };
  return {
    type: "Microsoft.Compute/virtualMachines",
    name: "vm1",
    location: "westeurope",
    tags,
    properties: { storageProfile: { osDisk: { osType: os }, imageReference: marketplace() }, ...properties },
    ...rest,
  };
}

function vmss(
  os: "Linux" | "Windows",
  tags: Record<string, string> = {},
  mode = "Uniform",
  upgrade = "Automatic",
): Record<string, Json> {
  return {
    type: "Microsoft.Compute/virtualMachineScaleSets",
    name: "ss1",
    location: "westeurope",
    tags,
    properties: {
      orchestrationMode: mode,
      upgradePolicy: { mode: upgrade },
      virtualMachineProfile: { storageProfile: { osDisk: { osType: os }, imageReference: marketplace() } },
    },
  };
}

/** The (ring, reference) pairs whose `if` matches a resource. */
function applicable(
  resource: Record<string, Json>,
  resourceGroup = "app-rg",
  overrides: Record<string, Json> = {},
): string[] {
  return references(overrides)
    .filter((r) => evaluate(r.definition.policyRule.if, { resource, parameters: r.parameters, resourceGroup }))
    .map((r) => `${r.ring}/${r.id}`);
}

/** Whether the existence condition of (ring, reference) holds for a resource (compliant). */
function compliant(
  ring: string,
  id: string,
  resource: Record<string, Json>,
  overrides: Record<string, Json> = {},
): boolean {
  const r = references(overrides).find((x) => x.ring === ring && x.id === id)!;
  return evaluate(r.definition.policyRule.then.details.existenceCondition, {
    resource,
    parameters: r.parameters,
    resourceGroup: "app-rg",
  });
}

const aksTags = { "aks-managed-orchestrator": "Kubernetes:1.33.3", "aks-managed-poolName": "system" };
const imageReference = (reference: Json): Record<string, Json> => ({
  properties: { storageProfile: { osDisk: { osType: "Linux" }, imageReference: reference } },
});

describe("who is in scope: the rendered rules", () => {
  it("an untagged Linux VM is the broad ring's, a canary-tagged one the canary's; Windows VMs get the Windows reference", () => {
    expect(applicable(vm("Linux"))).toEqual(["broad/linux-vm"]);
    expect(applicable(vm("Linux", { "sef-ring": "canary" }))).toEqual(["canary/linux-vm"]);
    expect(applicable(vm("Linux", { "SEF-RING": "Canary" }))).toEqual(["canary/linux-vm"]);
    expect(applicable(vm("Windows"))).toEqual(["broad/windows-vm"]);
    expect(applicable(vm("Linux", { "sef-ring": "someday" }))).toEqual(["broad/linux-vm"]);
  });

  it("AKS node pools are excluded: by their aks-managed tags in any resource group, and anything in an MC_ resource group", () => {
    expect(applicable(vmss("Linux", aksTags), "MC_rg_cluster_westeurope")).toEqual([]);
    expect(applicable(vmss("Linux", aksTags), "custom-node-rg")).toEqual([]);
    expect(applicable(vm("Linux", aksTags), "custom-node-rg")).toEqual([]);
    expect(applicable(vmss("Linux"), "mc_rg_cluster_westeurope")).toEqual([]);
    expect(applicable(vmss("Linux"), "rg-mc-like")).toEqual(["broad/linux-vmss"]);
  });

  it("other platform-managed VMs are excluded: Databricks and Service Fabric managed clusters' resource groups", () => {
    expect(applicable(vmss("Linux"), "databricks-rg-ws1-abc")).toEqual([]);
    expect(applicable(vmss("Windows"), "SFC_0123-4567")).toEqual([]);
    expect(applicable(vm("Linux"), "databricks-like")).toEqual(["broad/linux-vm"]);
  });

  it("only supported images: a platform's image (AKS, Databricks, ARO, Batch) is out, a listed custom image in", () => {
    const aksImage = {
      id: "/subscriptions/x/resourceGroups/AKS-Ubuntu/providers/Microsoft.Compute/galleries/AKSUbuntu/images/2204gen2containerd/versions/2025.01.01",
    };
    expect(applicable(vm("Linux", {}, imageReference(aksImage)))).toEqual([]);
    for (const publisher of ["AzureDatabricks", "azureopenshift", "microsoft-azure-batch"])
      expect(applicable(vm("Linux", {}, imageReference(marketplace(publisher)))), publisher).toEqual([]);
    for (const publisher of ["Canonical", "Debian", "RedHat", "MicrosoftWindowsServer"])
      expect(applicable(vm("Linux", {}, imageReference(marketplace(publisher)))), publisher).toEqual([
        "broad/linux-vm",
      ]);
    expect(applicable(vm("Linux", {}, imageReference({ id: sampleRollout.customImageIds[0] })))).toEqual([
      "broad/linux-vm",
    ]);
    expect(applicable(vm("Linux", {}, imageReference(aksImage)), "app-rg", { scopeToSupportedImages: false })).toEqual([
      "broad/linux-vm",
    ]);
  });

  it("VMs created without the VM agent are excluded (no VM Application can run there)", () => {
    const noAgent = (os: "Linux" | "Windows", key: string) =>
      vm(os, {}, { properties: { osProfile: { [key]: { provisionVMAgent: false } } } });
    expect(applicable(noAgent("Linux", "linuxConfiguration"))).toEqual([]);
    expect(applicable(noAgent("Windows", "windowsConfiguration"))).toEqual([]);
    expect(
      applicable(vm("Linux", {}, { properties: { osProfile: { linuxConfiguration: { provisionVMAgent: true } } } })),
    ).toEqual(["broad/linux-vm"]);
  });

  it("only the regions the versions are replicated to: a VM elsewhere is left alone (its install would fail)", () => {
    expect(applicable({ ...vm("Linux"), location: "northeurope" })).toEqual(["broad/linux-vm"]);
    expect(applicable({ ...vm("Linux"), location: "eastus" })).toEqual([]);
    expect(applicable({ ...vmss("Linux"), location: "eastus" })).toEqual([]);
  });

  it("VMs and scale sets with the opt-out tag true are excluded, whatever their ring", () => {
    expect(applicable(vm("Linux", { "sef-opt-out": "true" }))).toEqual([]);
    expect(applicable(vm("Linux", { "sef-opt-out": "True", "sef-ring": "canary" }))).toEqual([]);
    expect(applicable(vmss("Windows", { "sef-opt-out": "true" }))).toEqual([]);
    expect(applicable(vm("Linux", { "sef-opt-out": "false" }))).toEqual(["broad/linux-vm"]);
  });
});

describe("rings, decided on the rendered rules", () => {
  it("Flexible scale sets are the VM rule's: the set is left alone, each VM is in the ring of its own tags", () => {
    expect(applicable(vmss("Linux", { "sef-ring": "canary" }, "Flexible"))).toEqual([]);
    const member = (tags: Record<string, string>) =>
      vm("Linux", tags, {
        properties: {
          virtualMachineScaleSet: {
            id: "/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/virtualMachineScaleSets/flex",
          },
        },
      });
    // An untagged VM of a canary-tagged Flexible set: only the broad ring's rule, no flipping between two rules.
    expect(applicable(member({}))).toEqual(["broad/linux-vm"]);
    expect(applicable(member({ "sef-ring": "canary" }))).toEqual(["canary/linux-vm"]);
  });

  it("Uniform scale sets with an Automatic or Rolling upgrade policy are in; with a Manual one left alone", () => {
    expect(applicable(vmss("Linux"))).toEqual(["broad/linux-vmss"]);
    expect(applicable(vmss("Windows", { "sef-ring": "canary" }, "Uniform", "Rolling"))).toEqual([
      "canary/windows-vmss",
    ]);
    expect(applicable(vmss("Linux", {}, "Uniform", "Manual"))).toEqual([]);
  });

  it("the rings' assignments share out the VMs: the broad ring leaves the canary's tag values alone", () => {
    const parameters = Object.fromEntries(
      renderedOf("policyAssignments").map((a) => [a.name, a.properties.parameters as Record<string, { value: Json }>]),
    );
    expect(parameters["sef-canary"]!.ringTagValues!.value).toEqual(["canary"]);
    expect(parameters["sef-broad"]!.excludedRingTagValues!.value).toEqual(["canary"]);
    expect(parameters["sef-canary"]!.applicationVersion!.value).toBe("0.2.0");
    expect(parameters["sef-broad"]!.linuxApplicationId!.value).toBe(`${galleryId}/applications/sef-linux`);
    expect(parameters["sef-broad"]!.locations!.value).toEqual(["westeurope", "northeurope"]);
  });
});

describe("compliance means installed: the rendered existence conditions", () => {
  const withApps = (
    apps: Json[],
    provisioningState = "Succeeded",
    identity: Json = { type: "SystemAssigned, UserAssigned", userAssignedIdentities: { [agentIdentity]: {} } },
  ) =>
    vm("Linux", {}, { identity, properties: { provisioningState, applicationProfile: { galleryApplications: apps } } });
  const sef = (version: string) => ({ packageReferenceId: `${linuxApp}/versions/${version}` });

  it("compliant only with the agent identity, the ring's version and the VM provisioned", () => {
    expect(compliant("broad", "linux-vm", withApps([otherApp, sef("0.1.0")]))).toBe(true);
    expect(compliant("canary", "linux-vm", withApps([sef("0.2.0")]))).toBe(true);
    expect(compliant("canary", "linux-vm", withApps([sef("0.1.0")]))).toBe(false);
    expect(compliant("broad", "linux-vm", withApps([otherApp]))).toBe(false);
    expect(compliant("broad", "linux-vm", withApps([sef("0.1.0")], "Succeeded", { type: "SystemAssigned" }))).toBe(
      false,
    );
    expect(compliant("broad", "windows-vm", withApps([sef("0.1.0")]))).toBe(false);
    // A failed install (treatFailureAsDeploymentFailure, always set) leaves the VM Failed: not compliant, remediated.
    expect(compliant("broad", "linux-vm", withApps([sef("0.1.0")], "Failed"))).toBe(false);
  });

  it("with enableAutomaticUpgrade any version of the application is compliant (no fight with the platform)", () => {
    expect(compliant("broad", "linux-vm", withApps([sef("0.3.0")]), { enableAutomaticUpgrade: true })).toBe(true);
    expect(compliant("broad", "linux-vm", withApps([sef("0.3.0")]))).toBe(false);
    expect(compliant("broad", "linux-vm", withApps([otherApp]), { enableAutomaticUpgrade: true })).toBe(false);
  });

  it("the remediation embeds the compiled template and passes the provisioning state the policy saw", () => {
    for (const [name, definition] of Object.entries(definitionsByName())) {
      const deployment = definition.policyRule.then.details.deployment as {
        properties: { parameters: Record<string, { value: string }>; template: { metadata: Json } };
      };
      const kind = name.replace(/^sef-/, "");
      expect(deployment.properties.template).toEqual(
        JSON.parse(readFileSync(join(bicepRoot, `policy/remediation-${kind}.json`), "utf8")),
      );
      expect(deployment.properties.parameters.provisioningState!.value).toBe(
        `[field('${String(definition.policyRule.then.details.type)}/provisioningState')]`,
      );
    }
  });
});

describe("the remediation's PUT, rendered by the template engine from what it read live", () => {
  const put = (type: string, name: string) => {
    expect(remediationCases.run.status, remediationCases.run.stderr).toBe(0);
    const found = remediationCases.resources.filter((r) => r.type === type && r.name === name);
    expect(found).toHaveLength(1);
    return found[0] as { identity: Json; properties: Record<string, Json> };
  };
  const applyVm = ["Microsoft.Compute/virtualMachines", "vm1"] as const;
  const applyVmss = ["Microsoft.Compute/virtualMachineScaleSets", "vm1"] as const;
  const retryVm = ["Microsoft.Compute/virtualMachines", "vm2"] as const;
  const sefEntry = {
    packageReferenceId: `${linuxApp}/versions/0.2.0`,
    configurationReference: null,
    enableAutomaticUpgrade: false,
    treatFailureAsDeploymentFailure: true,
  };

  it("keeps every live user-assigned identity and the system-assigned one, adding the agent's (VM and scale set)", () => {
    for (const [type, name] of [applyVm, applyVmss])
      expect(put(type, name).identity).toEqual({
        type: "SystemAssigned, UserAssigned",
        userAssignedIdentities: { [amaIdentity]: {}, [agentIdentity]: {} },
      });
    expect(put(...retryVm).identity).toEqual({ type: "UserAssigned", userAssignedIdentities: { [agentIdentity]: {} } });
  });

  it("keeps the other applications as they are, replaces an older sef, always failing the resource on a failed install", () => {
    expect(put(...applyVm).properties).toEqual({ applicationProfile: { galleryApplications: [otherApp, sefEntry] } });
    expect(put(...applyVmss).properties).toEqual({
      virtualMachineProfile: { applicationProfile: { galleryApplications: [otherApp, sefEntry] } },
    });
  });

  it("a resource the policy saw Failed gets sef removed, then added again (Azure's retry for a VM Application)", () => {
    expect(put(...retryVm).properties).toEqual({ applicationProfile: { galleryApplications: [] } });
    const template = JSON.parse(readFileSync(join(bicepRoot, "policy/remediation-vm.json"), "utf8")) as {
      resources: { name: string; condition?: string; dependsOn?: string[]; properties?: Record<string, Json> }[];
    };
    const [retry, apply] = template.resources.filter((r) => String(r.name).includes("sef-"));
    expect(retry!.condition).toBe("[equals(toLower(parameters('provisioningState')), 'failed')]");
    expect(JSON.stringify(retry!.properties)).toContain('"removeSef":{"value":true}');
    expect(apply!.dependsOn).toEqual([expect.stringContaining("sef-remove-")]);
    // The live identity is read whole, as Microsoft's identity policies read it.
    expect(JSON.stringify(template)).toContain(
      "reference(resourceId('Microsoft.Compute/virtualMachines', parameters('resourceName')), '2025-04-01', 'full')",
    );
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
