// Instance metadata (`compute`) for the simulated VMs: the scenario's VM, or any VM named by the test-only `X-Sef-Sim-Vm` header.
import { createHash } from "node:crypto";
import type { ScenarioVm } from "./scenario-schema.js";

export interface ComputeMetadata {
  name: string;
  vmId: string;
  resourceId: string;
  subscriptionId: string;
  resourceGroupName: string;
  location: string;
  vmScaleSetName: string;
  zone: string;
  osType: string;
  vmSize: string;
  azEnvironment: string;
  provider: string;
  platformFaultDomain: string;
  platformUpdateDomain: string;
  /** `"name:value;name2:value2"`, as IMDS serves it (ambiguous when a value contains `;` or `:`). */
  tags: string;
  /** The same tags as `[{name, value}]` (api-version 2019-06-04 and later). */
  tagsList: Array<{ name: string; value: string }>;
}

/** A stable GUID-shaped id derived from a name. */
export function stableGuid(seed: string): string {
  const hex = createHash("sha1").update(seed).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Compute metadata for `name` (default: the scenario VM); other names share the scenario VM's subscription, group,
 * scale set and tags unless `tags` gives theirs.
 */
export function computeFor(
  vm: ScenarioVm,
  name: string = vm.name,
  tags: Readonly<Record<string, string>> = vm.tags,
): ComputeMetadata {
  const isDefault = name === vm.name;
  const group = `/subscriptions/${vm.subscriptionId}/resourceGroups/${vm.resourceGroupName}/providers/Microsoft.Compute`;
  const instance = /_(\d+)$/.exec(name)?.[1] ?? name;
  const derivedResourceId = vm.vmScaleSetName
    ? `${group}/virtualMachineScaleSets/${vm.vmScaleSetName}/virtualMachines/${instance}`
    : `${group}/virtualMachines/${name}`;
  const domain = String(Number.parseInt(stableGuid(name).slice(0, 2), 16) % 3);
  return {
    name,
    vmId: (isDefault ? vm.vmId : undefined) ?? stableGuid(`${vm.subscriptionId}/${name}`),
    resourceId: (isDefault ? vm.resourceId : undefined) ?? derivedResourceId,
    subscriptionId: vm.subscriptionId,
    resourceGroupName: vm.resourceGroupName,
    location: vm.location,
    vmScaleSetName: vm.vmScaleSetName,
    zone: vm.zone,
    osType: vm.osType,
    vmSize: vm.vmSize,
    azEnvironment: "AzurePublicCloud",
    provider: "Microsoft.Compute",
    platformFaultDomain: domain,
    platformUpdateDomain: domain,
    tags: Object.entries(tags)
      .map(([k, v]) => `${k}:${v}`)
      .join(";"),
    tagsList: Object.entries(tags).map(([name, value]) => ({ name, value })),
  };
}
