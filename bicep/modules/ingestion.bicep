// Logs Ingestion API path: a data collection endpoint and a data collection rule routing the Custom-ScheduledEvents
// stream to the ScheduledEvents_CL table, and the publisher role for the agents' identity on the rule.

param location string
param namePrefix string
param nameSuffix string
param tags object

@description('Resource id of the destination Log Analytics workspace (the table must already exist).')
param workspaceResourceId string

@description('Principal (object) id of the managed identity the agents use.')
param publisherPrincipalId string

@description('Principal (object) ids of the VM groups\' own identities (main.bicep agentIdentityGroups), given the same role.')
param groupPublisherPrincipalIds string[] = []

var publisherPrincipalIds = concat([publisherPrincipalId], groupPublisherPrincipalIds)

// Generated from src/contract/ (see test/deploy/generate.ts); schema.test.ts fails when it drifts.
var schema = loadJsonContent('../schema/columns.json')
var monitoringMetricsPublisherRoleId = '3913510d-42f4-4e42-8a64-420c390055eb'

resource endpoint 'Microsoft.Insights/dataCollectionEndpoints@2023-03-11' = {
  name: '${namePrefix}-dce-${nameSuffix}'
  location: location
  tags: tags
  properties: {
    description: 'Logs ingestion endpoint for sef (Scheduled Events Forwarder)'
    networkAcls: {
      publicNetworkAccess: 'Enabled'
    }
  }
}

resource rule 'Microsoft.Insights/dataCollectionRules@2023-03-11' = {
  name: '${namePrefix}-dcr-${nameSuffix}'
  location: location
  tags: tags
  properties: {
    description: 'Routes sef records (${schema.streamName}) to ${schema.tableName}'
    dataCollectionEndpointId: endpoint.id
    streamDeclarations: {
      '${schema.streamName}': {
        columns: schema.streamColumns
      }
    }
    destinations: {
      logAnalytics: [
        {
          name: 'workspace'
          workspaceResourceId: workspaceResourceId
        }
      ]
    }
    dataFlows: [
      {
        streams: [
          schema.streamName
        ]
        destinations: [
          'workspace'
        ]
        // Transformations support a subset of KQL and no comments: see the file for what it does.
        transformKql: loadTextContent('../transforms/scheduled-events.kql')
        outputStream: 'Custom-${schema.tableName}'
      }
    ]
  }
}

resource publisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for principalId in publisherPrincipalIds: {
  name: guid(rule.id, principalId, monitoringMetricsPublisherRoleId)
  scope: rule
  properties: {
    description: 'sef agents send records through this data collection rule'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisherRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}]

output logsIngestionEndpoint string = endpoint.properties.logsIngestion.endpoint
output ruleImmutableId string = rule.properties.immutableId
output ruleResourceId string = rule.id
output streamName string = schema.streamName
