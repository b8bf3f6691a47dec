// The policy's remediation identity, in sef's resource group, with the roles it needs there: Managed Identity Operator
// on the agents' identity (to attach it to VMs) and Reader on the gallery (to reference its application versions).
// Virtual Machine Contributor on the assignment's scope is given by the caller (a subscription or management group).

param location string
param namePrefix string
param tags object = {}

@description('Name of the agents\' user-assigned identity (main.bicep\'s agentIdentity) in this resource group.')
param agentIdentityName string

@description('Name of the Azure Compute Gallery holding sef\'s applications, in this resource group.')
param galleryName string

@description('Role definition ids (GUIDs): managedIdentityOperator and reader.')
param roleIds object

resource agentIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' existing = {
  name: agentIdentityName
}

resource gallery 'Microsoft.Compute/galleries@2025-03-03' existing = {
  name: galleryName
}

resource remediationIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-policy-remediation'
  location: location
  tags: tags
}

resource identityOperator 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: agentIdentity
  name: guid(agentIdentity.id, remediationIdentity.id, roleIds.managedIdentityOperator)
  properties: {
    roleDefinitionId: tenantResourceId('Microsoft.Authorization/roleDefinitions', roleIds.managedIdentityOperator)
    principalId: remediationIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource galleryReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: gallery
  name: guid(gallery.id, remediationIdentity.id, roleIds.reader)
  properties: {
    roleDefinitionId: tenantResourceId('Microsoft.Authorization/roleDefinitions', roleIds.reader)
    principalId: remediationIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

output identityResourceId string = remediationIdentity.id
output identityPrincipalId string = remediationIdentity.properties.principalId
