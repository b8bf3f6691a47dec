// The sef-vmss policy's remediation (compiled into remediation-vmss.json by `npm run deploy:generate`; the definition
// embeds that output): reads the scale set live (reference(id, apiVersion, 'Full'), as Microsoft's identity policies do) and
// writes back all its identities and applications with sef's added, in a nested deployment (remediation-apply-vmss.bicep).
// A scale set that failed with sef listed first gets sef removed, then added again: the documented way to retry an install.
import { identityWith, othersThan, removeFirst, sefEntry } from 'remediation-shared.bicep'

param resourceName string
param location string
param agentIdentityResourceId string
param applicationId string
param applicationVersion string
param configurationReference string = ''
param enableAutomaticUpgrade bool = false

@description('The resource\'s provisioning state when the policy evaluated it (Failed: sef is removed, then added again).')
param provisioningState string = ''

resource vmss 'Microsoft.Compute/virtualMachineScaleSets@2025-04-01' existing = {
  name: resourceName
}

var liveApplications = vmss.properties.?virtualMachineProfile.?applicationProfile.?galleryApplications ?? []
var others = othersThan(liveApplications, applicationId)
var identity = identityWith(vmss.?identity ?? {}, agentIdentityResourceId)

module retry 'remediation-apply-vmss.bicep' = if (removeFirst(provisioningState)) {
  name: take('sef-remove-${resourceName}', 64)
  params: {
    resourceName: resourceName
    location: location
    identity: identity
    applications: others
  }
}

module apply 'remediation-apply-vmss.bicep' = {
  name: take('sef-apply-${resourceName}', 64)
  params: {
    resourceName: resourceName
    location: location
    identity: identity
    applications: concat(others, [
      sefEntry(applicationId, applicationVersion, configurationReference, enableAutomaticUpgrade)
    ])
  }
  dependsOn: [
    retry
  ]
}
