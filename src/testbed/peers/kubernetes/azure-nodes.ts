// Nodes of an AKS cluster as the Azure cloud provider registers them, from the VM's resource id (IMDS
// compute.resourceId): `spec.providerID` = `azure://` + the id with its resource group in lower case (the cloud
// provider's historical form), and the node name AKS gives it: a Uniform scale-set instance `<scaleSet>` + its
// instance id in base 36 over 6 digits (`aks-pool-vmss_10` → `aks-pool-vmss00000a`), a Flexible or standalone VM its
// own name as a DNS label. Pure.
import type { NodeSeed } from "./seed.js";

const resourceGroupPattern = /(\/resourceGroups\/)([^/]+)(\/)/i;
const uniformPattern = /\/virtualMachineScaleSets\/([^/]+)\/virtualMachines\/([^/]+)$/i;
const vmPattern = /\/virtualMachines\/([^/]+)$/i;

/** The Node's spec.providerID for the VM with ARM resource id `resourceId`. */
export function azureProviderID(resourceId: string): string {
  return `azure://${resourceId.replace(resourceGroupPattern, (_m, before: string, group: string, after: string) => `${before}${group.toLowerCase()}${after}`)}`;
}

/** A VM name as a node name: lower case, characters a DNS label cannot hold turned into "-". */
function dnsLabel(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9.-]/g, "-");
}

/** The node name AKS registers for the VM with ARM resource id `resourceId`. */
export function aksNodeName(resourceId: string): string {
  const uniform = uniformPattern.exec(resourceId);
  if (uniform) {
    const [, scaleSet = "", instanceId = ""] = uniform;
    const instance = Number(instanceId);
    if (Number.isInteger(instance) && instance >= 0)
      return `${dnsLabel(scaleSet)}${instance.toString(36).padStart(6, "0")}`;
    return dnsLabel(`${scaleSet}-${instanceId}`);
  }
  const vm = vmPattern.exec(resourceId);
  if (!vm) throw new Error(`${resourceId} is not the resource id of an Azure VM`);
  return dnsLabel(vm[1] ?? "");
}

/** A node seed for the VM with resource id `resourceId`: name (unless given) and providerID as AKS sets them. */
export function azureNodeSeed(
  resourceId: string,
  extra: Omit<NodeSeed, "name" | "providerID"> & { name?: string } = {},
): NodeSeed {
  return { ...extra, name: extra.name ?? aksNodeName(resourceId), providerID: azureProviderID(resourceId) };
}
