// Event Hubs path: a Standard namespace with local (SAS) auth disabled, the hub and a consumer group for readers,
// and the sender role for the agents' identity on the hub.

param location string
param namePrefix string
param nameSuffix string
param tags object

@description('Name of the event hub the agents send to.')
param eventHubName string

@minValue(1)
@maxValue(32)
@description('Partitions of the hub (fixed after creation on the Standard tier).')
param partitionCount int

@minValue(1)
@maxValue(7)
@description('Days the hub keeps events (Standard tier: 1-7).')
param retentionInDays int

@description('Consumer group created for downstream readers.')
param consumerGroupName string

@description('Principal (object) id of the managed identity the agents use.')
param senderPrincipalId string

@description('Principal (object) ids of the VM groups\' own identities (main.bicep agentIdentityGroups), given the same role.')
param groupSenderPrincipalIds string[] = []

var senderPrincipalIds = concat([senderPrincipalId], groupSenderPrincipalIds)

var eventHubsDataSenderRoleId = '2b629674-e913-4c01-ae53-ef4638d8f975'

resource namespace 'Microsoft.EventHub/namespaces@2024-01-01' = {
  name: '${namePrefix}-ehns-${nameSuffix}'
  location: location
  tags: tags
  sku: {
    name: 'Standard'
    tier: 'Standard'
    capacity: 1
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
    publicNetworkAccess: 'Enabled'
    isAutoInflateEnabled: false
  }
}

resource hub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' = {
  parent: namespace
  name: eventHubName
  properties: {
    partitionCount: partitionCount
    messageRetentionInDays: retentionInDays
  }
}

resource readers 'Microsoft.EventHub/namespaces/eventhubs/consumergroups@2024-01-01' = {
  parent: hub
  name: consumerGroupName
  properties: {
    userMetadata: 'Readers of sef records'
  }
}

resource sender 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for principalId in senderPrincipalIds: {
  name: guid(hub.id, principalId, eventHubsDataSenderRoleId)
  scope: hub
  properties: {
    description: 'sef agents send records to this event hub'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', eventHubsDataSenderRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}]

// serviceBusEndpoint is https://NAME.servicebus.windows.net:443/ (the suffix depends on the cloud).
output fullyQualifiedNamespace string = split(split(namespace.properties.serviceBusEndpoint, '/')[2], ':')[0]
output eventHubName string = hub.name
output consumerGroupName string = readers.name
output namespaceResourceId string = namespace.id

@description('Name of the Event Hubs namespace.')
output namespaceName string = namespace.name
