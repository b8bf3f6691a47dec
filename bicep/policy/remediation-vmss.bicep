// The sef-vmss policy's remediation (compiled into remediation-vmss.json by `npm run deploy:generate`; the definition
// embeds that output): reads the scale set live (reference(id, apiVersion, 'Full'), as Microsoft's identity policies do) and
// writes back all its identities and applications with sef's added, in a nested deployment (remediation-apply-vmss.bicep).
// One the policy saw Failed first gets sef removed, then added again: Azure's way to retry a VM Application.

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

var live = {
  identity: vmss.?identity ?? {}
  applications: vmss.properties.?virtualMachineProfile.?applicationProfile.?galleryApplications ?? []
}

module retry 'remediation-apply-vmss.bicep' = if (toLower(provisioningState) == 'failed') {
  name: take('sef-remove-${resourceName}', 64)
  params: {
    resourceName: resourceName
    location: location
    liveIdentity: live.identity
    liveApplications: live.applications
    agentIdentityResourceId: agentIdentityResourceId
    applicationId: applicationId
    applicationVersion: applicationVersion
    configurationReference: configurationReference
    enableAutomaticUpgrade: enableAutomaticUpgrade
    removeSef: true
  }
}

module apply 'remediation-apply-vmss.bicep' = {
  name: take('sef-apply-${resourceName}', 64)
  params: {
    resourceName: resourceName
    location: location
    liveIdentity: live.identity
    liveApplications: live.applications
    agentIdentityResourceId: agentIdentityResourceId
    applicationId: applicationId
    applicationVersion: applicationVersion
    configurationReference: configurationReference
    enableAutomaticUpgrade: enableAutomaticUpgrade
  }
  dependsOn: [
    retry
  ]
}
