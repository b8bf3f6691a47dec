// What the two remediations (remediation-vm.bicep, remediation-vmss.bicep) write, from what they read live: the
// resource's identities with the agent's added, and its VM Applications with sef's entry in place of any older one.

@export()
@description('The identity block: the live user-assigned identities kept, the agent\'s added, a system-assigned one kept.')
func identityWith(live object, agentIdentityResourceId string) object => {
  type: contains(toLower(live.?type ?? 'None'), 'systemassigned') ? 'SystemAssigned,UserAssigned' : 'UserAssigned'
  userAssignedIdentities: union(toObject(objectKeys(live.?userAssignedIdentities ?? {}), id => id, id => {}), {
    '${agentIdentityResourceId}': {}
  })
}

@export()
@description('The live applications other than any version of sef\'s (kept as they are).')
func othersThan(applications array, applicationId string) array => filter(applications, app => !startsWith(toLower(app.packageReferenceId), toLower('${applicationId}/versions/')))

@export()
@description('sef\'s entry: always treatFailureAsDeploymentFailure, so a failed install fails the resource (non-compliant).')
func sefEntry(applicationId string, applicationVersion string, configurationReference string, enableAutomaticUpgrade bool) object => {
  packageReferenceId: '${applicationId}/versions/${applicationVersion}'
  configurationReference: empty(configurationReference) ? null : configurationReference
  enableAutomaticUpgrade: enableAutomaticUpgrade
  treatFailureAsDeploymentFailure: true
}

@export()
@description('Azure retries a failed VM Application only when it is removed and added again: remove first when the resource failed (its state as the policy saw it).')
func removeFirst(provisioningState string) bool => toLower(provisioningState) == 'failed'
