// `sef fleet` in Azure: one Container Apps app (a long-lived Node process, scaled out to N replicas that share the hub's
// partitions), its own user-assigned identity with "Azure Event Hubs Data Receiver" on the hub and "Storage Blob Data
// Contributor" on its own container (checkpoints, fleet state, dead letters; not the whole account), and a consumer
// group of its own.

param location string
param namePrefix string
param nameSuffix string
param tags object

@description('Name of the Event Hubs namespace the agents send to (in this resource group).')
param eventHubsNamespaceName string

@description('Name of the event hub the agents send to.')
param eventHubName string

@description('Consumer group created for sef fleet (one per consumer application).')
param consumerGroupName string = 'sef-fleet'

@description('Container image of the fleet service (infra/fleet/Dockerfile, not the agent image), e.g. myregistry.azurecr.io/sef-fleet:0.2.0.')
param image string

@minValue(1)
@maxValue(32)
@description('Replicas of sef fleet; Event Hubs load balancing spreads the partitions over them.')
param replicas int = 2

@description('Notification targets and rules of the fleet config (see src/fleet/README.md); the Event Hubs and checkpoint sections are filled in here.')
param targets array

@description('Rules that route fleet events to targets.')
param rules array

@secure()
@description('Secrets the targets name in urlEnv, routingKeyEnv or hmacSecretEnv, as an object of NAME: value (webhook URLs, PagerDuty routing keys).')
param targetSecrets object = {}

@description('Resource id of the Log Analytics workspace that receives the app logs.')
param workspaceResourceId string

var storageBlobDataContributorRoleId = 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
var eventHubsDataReceiverRoleId = 'a638d3c7-ab3a-418d-83e6-5f17a39d4fde'
var checkpointContainerName = 'sef-fleet'
var secretNames = objectKeys(targetSecrets)

resource namespace 'Microsoft.EventHub/namespaces@2024-01-01' existing = {
  name: eventHubsNamespaceName
}

resource hub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' existing = {
  parent: namespace
  name: eventHubName
}

resource consumerGroup 'Microsoft.EventHub/namespaces/eventhubs/consumergroups@2024-01-01' = {
  parent: hub
  name: consumerGroupName
  properties: {
    userMetadata: 'sef fleet'
  }
}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-fleet-id-${nameSuffix}'
  location: location
  tags: tags
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: take('${toLower(replace(namePrefix, '-', ''))}fleet${toLower(replace(nameSuffix, '-', ''))}', 24)
  location: location
  tags: tags
  sku: {
    name: 'Standard_LRS'
  }
  kind: 'StorageV2'
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource checkpoints 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: checkpointContainerName
}

resource receiverRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: hub
  name: guid(hub.id, identity.id, eventHubsDataReceiverRoleId)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', eventHubsDataReceiverRoleId)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// On the container, not the account: a blob name the fleet builds can reach no other container.
resource blobRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: checkpoints
  name: guid(checkpoints.id, identity.id, storageBlobDataContributorRoleId)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataContributorRoleId)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = {
  name: last(split(workspaceResourceId, '/'))
  scope: resourceGroup(split(workspaceResourceId, '/')[2], split(workspaceResourceId, '/')[4])
}

resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: '${namePrefix}-fleet-env-${nameSuffix}'
  location: location
  tags: tags
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: workspace.properties.customerId
        sharedKey: workspace.listKeys().primarySharedKey
      }
    }
  }
}

var fleetConfig = {
  eventHubs: {
    consumerGroup: consumerGroup.name
    connection: {
      fullyQualifiedNamespace: '${eventHubsNamespaceName}.servicebus.windows.net'
      eventHubName: eventHubName
      credential: 'managedIdentity'
      managedIdentityClientId: identity.properties.clientId
    }
  }
  checkpoints: {
    blobServiceUrl: storage.properties.primaryEndpoints.blob
    containerName: checkpointContainerName
  }
  targets: targets
  rules: rules
  metrics: {
    host: '0.0.0.0'
    port: 9465
  }
}

// Each target secret as a Container Apps secret and the environment variable that names it.
var secrets = [for name in secretNames: {
  name: toLower(replace(name, '_', '-'))
  value: targetSecrets[name]
}]
var secretEnv = [for name in secretNames: {
  name: name
  secretRef: toLower(replace(name, '_', '-'))
}]

resource app 'Microsoft.App/containerApps@2024-03-01' = {
  name: '${namePrefix}-fleet-${nameSuffix}'
  location: location
  tags: tags
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    managedEnvironmentId: environment.id
    configuration: {
      activeRevisionsMode: 'Single'
      secrets: secrets
    }
    template: {
      containers: [
        {
          name: 'sef-fleet'
          image: image
          // No command: the fleet image's ENTRYPOINT runs its bundle on its Node (a distroless image has no shell);
          // args replace its CMD.
          args: [
            '--config-env'
            'SEF_FLEET_CONFIG'
          ]
          env: concat([
            {
              name: 'SEF_FLEET_CONFIG'
              value: string(fleetConfig)
            }
          ], secretEnv)
          resources: {
            cpu: json('0.5')
            memory: '1Gi'
          }
          probes: [
            {
              type: 'Readiness'
              httpGet: {
                path: '/readyz'
                port: 9465
              }
              periodSeconds: 10
            }
            {
              type: 'Liveness'
              httpGet: {
                path: '/healthz'
                port: 9465
              }
              periodSeconds: 30
            }
          ]
        }
      ]
      scale: {
        minReplicas: replicas
        maxReplicas: replicas
      }
    }
  }
  dependsOn: [
    receiverRole
    blobRole
    checkpoints
  ]
}

output appName string = app.name
output identityPrincipalId string = identity.properties.principalId
output storageAccountName string = storage.name
output consumerGroupName string = consumerGroup.name
