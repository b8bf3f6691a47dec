// sef on every VM and scale set of a management group, in one deployment: the initiative (DeployIfNotExists: the sef VM
// Application at a pinned version and the agents' identity), one assignment per rollout ring, and the remediation
// identity with its least roles. `az deployment mg create -m MG -l REGION -f bicep/every-vm-mg.bicep -p bicep/every-vm-mg.bicepparam`.
// Generated from every-vm.bicep by `npx tsx test/deploy/generate.ts`: edit that one. rollout.subscriptionId is required.

targetScope = 'managementGroup'

import { definitions } from 'policy/definitions.bicep'
import { initiativeProperties, ringParameters, roleIds, rolloutSettings, settingsOf } from 'policy/initiative.bicep'

@description('Region of the assignments\' remediation identity.')
param location string = deployment().location

@minLength(2)
@maxLength(12)
@description('Prefix of the policy resources\' names.')
param namePrefix string = 'sef'

@description('The gallery, the agent identity, the rings and how the policy acts (see policy/initiative.bicep).')
param rollout rolloutSettings

param tags object = {}

var settings = settingsOf(rollout, '')
// Known at the start of the deployment (a key of userAssignedIdentities must be): modules/vmapp-remediation.bicep's name.
var remediationIdentityId = '/subscriptions/${settings.subscriptionId}/resourceGroups/${settings.resourceGroupName}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${namePrefix}-policy-remediation'

module remediation 'modules/vmapp-remediation.bicep' = {
  name: '${deployment().name}-remediation'
  scope: resourceGroup(settings.subscriptionId, settings.resourceGroupName)
  params: {
    location: location
    namePrefix: namePrefix
    tags: tags
    agentIdentityName: settings.agentIdentityName
    galleryName: settings.galleryName
    roleIds: roleIds
  }
}

resource policyDefinition 'Microsoft.Authorization/policyDefinitions@2024-05-01' = [for definition in definitions: {
  name: '${namePrefix}-${definition.name}'
  properties: union(definition.properties, {
    policyType: 'Custom'
  })
}]

resource initiative 'Microsoft.Authorization/policySetDefinitions@2024-05-01' = {
  name: namePrefix
  properties: union(initiativeProperties([policyDefinition[0].id, policyDefinition[1].id], definitions[0].properties.parameters), {
    policyType: 'Custom'
  })
}

resource assignment 'Microsoft.Authorization/policyAssignments@2024-05-01' = [for r in rollout.rings: {
  name: '${namePrefix}-${r.name}'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${remediationIdentityId}': {}
    }
  }
  properties: {
    displayName: 'sef ring ${r.name}: version ${r.version}'
    description: 'sef ${r.version} on the VMs and scale sets of ring ${r.name} (tag ${settings.ringTagName})'
    policyDefinitionId: initiative.id
    parameters: ringParameters(r, rollout.rings, settings)
    nonComplianceMessages: [
      {
        message: 'sef ${r.version} is not installed here (missing, another version, or without the agent identity)'
      }
    ]
  }
  // Its role assignments first: a remediation started at once would otherwise fail on missing rights.
  dependsOn: [
    remediation
    virtualMachineContributor
  ]
}]

resource virtualMachineContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(managementGroup().id, namePrefix, roleIds.virtualMachineContributor)
  properties: {
    roleDefinitionId: tenantResourceId('Microsoft.Authorization/roleDefinitions', roleIds.virtualMachineContributor)
    principalId: remediation.outputs.identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

@description('Assignment ids, one per ring (for az policy remediation create --policy-assignment).')
output assignmentIds array = [for (r, i) in rollout.rings: assignment[i].id]

@description('The initiative\'s definition reference ids (az policy remediation create --definition-reference-id).')
output definitionReferenceIds array = map(initiative.properties.policyDefinitions, reference => (reference.policyDefinitionReferenceId))
