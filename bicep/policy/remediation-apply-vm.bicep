// The PUT of the sef-vm remediation (remediation-vm.bicep reads the VM live and passes what it read): its
// identities with the agent's added (a system-assigned one kept), its VM Applications with sef's entry in place of any
// older version of it. No user-defined functions: the compiled template stays at language version 1.0.

param resourceName string
param location string

@description('The identity block as read live (reference(id, apiVersion, \'Full\').identity), or {}.')
param liveIdentity object

@description('The VM Applications as read live.')
param liveApplications array

param agentIdentityResourceId string
param applicationId string
param applicationVersion string
param configurationReference string
param enableAutomaticUpgrade bool

@description('Write the applications without sef (the first step of a retry).')
param removeSef bool = false

var others = filter(liveApplications, app => !startsWith(toLower(app.packageReferenceId), toLower('${applicationId}/versions/')))
// Always treatFailureAsDeploymentFailure: a failed install fails the VM, which the policy reads as non-compliant.
var sef = {
  packageReferenceId: '${applicationId}/versions/${applicationVersion}'
  configurationReference: empty(configurationReference) ? null : configurationReference
  enableAutomaticUpgrade: enableAutomaticUpgrade
  treatFailureAsDeploymentFailure: true
}

resource vm 'Microsoft.Compute/virtualMachines@2025-04-01' = {
  name: resourceName
  location: location
  identity: {
    type: contains(toLower(liveIdentity.?type ?? 'None'), 'systemassigned') ? 'SystemAssigned, UserAssigned' : 'UserAssigned'
    userAssignedIdentities: union(toObject(objectKeys(liveIdentity.?userAssignedIdentities ?? {}), id => id, id => {}), {
      '${agentIdentityResourceId}': {}
    })
  }
  properties: {
    applicationProfile: {
      galleryApplications: removeSef ? others : concat(others, [sef])
    }
  }
}
