// sef (Scheduled Events Forwarder) in Azure: Log Analytics table + DCE/DCR, Event Hubs, the agents' managed identity
// with least-privilege roles, alert rules, the KQL query pack and the fleet workbook. Outputs are every value the agent config needs.

targetScope = 'resourceGroup'

@description('Region of the new resources. Use the workspace region: the data collection rule must be in the same region as its endpoint.')
param location string = resourceGroup().location

@minLength(2)
@maxLength(12)
@description('Prefix of every resource name (letters, digits, hyphens; starts with a letter).')
param namePrefix string = 'sef'

@description('Resource id of an existing Log Analytics workspace to use; empty to create a new one.')
param existingWorkspaceResourceId string = ''

@minValue(30)
@maxValue(730)
@description('Retention of a new workspace, in days (ignored with existingWorkspaceResourceId).')
param workspaceRetentionInDays int = 30

@description('Interactive retention of ScheduledEvents_CL in days (4-730, or -1 for the workspace default).')
param tableRetentionInDays int = 30

@description('Total retention of ScheduledEvents_CL in days, including long-term retention (-1 for the same as above).')
param tableTotalRetentionInDays int = 365

@description('Deploy the Event Hubs namespace, hub and consumer group (the Log Analytics path is always deployed).')
param deployEventHubs bool = true

@description('Name of the event hub the agents send to.')
param eventHubName string = 'scheduled-events'

@minValue(1)
@maxValue(32)
@description('Partitions of the event hub.')
param eventHubPartitionCount int = 4

@minValue(1)
@maxValue(7)
@description('Days the event hub keeps events.')
param eventHubRetentionInDays int = 7

@description('Consumer group created for downstream readers of the hub.')
param eventHubConsumerGroupName string = 'sef-readers'

@description('Deploy the action group and the log search alert rules.')
param deployAlerts bool = true

@description('Whether the deployed alert rules are enabled.')
param alertsEnabled bool = true

// Alerts must reach someone: with deployAlerts, set an existing action group or at least one receiver (the deployment
// fails with a message naming these parameters otherwise). No placeholder defaults.
@description('Resource id of an existing action group the alert rules notify; empty to create one with the receivers below.')
param existingActionGroupResourceId string = ''

@description('Email addresses the new action group notifies.')
param alertEmailAddresses array = []

@description('SMS receivers of the new action group: objects { countryCode: \'1\', phoneNumber: \'5555550100\' }.')
param alertSmsReceivers array = []

@description('HTTPS webhook URLs the new action group posts the common alert schema to (e.g. a Teams workflow).')
param alertWebhookUrls array = []

@description('Logic App receivers of the new action group (e.g. one posting to Teams): objects { name, resourceId, callbackUrl }.')
param alertLogicAppReceivers array = []

@minValue(-1)
@maxValue(4)
@description('Alert severity for Freeze events (0 critical, 1 error, 2 warning, 3 informational, 4 verbose; -1: no rule). A Freeze pauses the VM for seconds.')
param freezeAlertSeverity int = 3

@minValue(-1)
@maxValue(4)
@description('Alert severity for Reboot events (-1: no rule).')
param rebootAlertSeverity int = 2

@minValue(-1)
@maxValue(4)
@description('Alert severity for Redeploy events (-1: no rule).')
param redeployAlertSeverity int = 2

@minValue(-1)
@maxValue(4)
@description('Alert severity for Preempt (Spot eviction) events (-1: no rule).')
param preemptAlertSeverity int = 2

@minValue(-1)
@maxValue(4)
@description('Alert severity for Terminate events (-1: no rule).')
param terminateAlertSeverity int = 2

@minValue(-1)
@maxValue(4)
@description('Alert severity for EventTypes Azure adds after this release (-1: no rule).')
param otherEventTypeAlertSeverity int = 2

@minValue(5)
@description('Minutes an event may stay Started without Completed before the stuck-event alert fires.')
param startedThresholdMinutes int = 30

@minValue(20)
@description('Minutes without any record from a VM (seen in the last day) before the silent-agent alert fires; agents write a Heartbeat every 15 minutes by default.')
param silentAfterMinutes int = 45

@description('Deploy the query pack with the saved KQL library.')
param deployQueryPack bool = true

@description('Deploy sef fleet (the Event Hubs consumer that sends one notification per maintenance event) on Azure Container Apps; needs deployEventHubs.')
param deployFleet bool = false

@description('Container image of the fleet service (infra/fleet/Dockerfile), e.g. myregistry.azurecr.io/sef-fleet:0.2.0 (required with deployFleet).')
param fleetImage string = ''

@minValue(1)
@maxValue(32)
@description('Replicas of sef fleet; the hub\'s partitions are spread over them.')
param fleetReplicas int = 2

@description('sef fleet notification targets (see src/fleet/README.md).')
param fleetTargets array = []

@description('sef fleet rules routing fleet events to targets.')
param fleetRules array = []

@secure()
@description('Secrets named by the targets (urlEnv, routingKeyEnv, hmacSecretEnv) as NAME: value.')
param fleetTargetSecrets object = {}

@description('VM groups (scale sets, rings, teams) that each get a sender identity of their own (sef-agent-identity-GROUP) with the agents\' roles, besides the shared one: revoke one group alone, see who sent in the audit logs. Attach it in place of the shared identity, with its client id in the group\'s config (output groupIdentities).')
@maxLength(20)
param agentIdentityGroups string[] = []

@description('Deploy the fleet workbook (Azure Monitor Workbook over ScheduledEvents_CL).')
param deployWorkbook bool = true

@description('Tags applied to every resource.')
param tags object = {}

var nameSuffix = uniqueString(resourceGroup().id, namePrefix)
var createWorkspace = empty(existingWorkspaceResourceId)
var workspaceSubscriptionId = createWorkspace ? subscription().subscriptionId : split(existingWorkspaceResourceId, '/')[2]
var workspaceResourceGroupName = createWorkspace ? resourceGroup().name : split(existingWorkspaceResourceId, '/')[4]
var workspaceName = createWorkspace ? '${namePrefix}-law-${nameSuffix}' : last(split(existingWorkspaceResourceId, '/'))
var workspaceResourceId = createWorkspace ? resourceId('Microsoft.OperationalInsights/workspaces', workspaceName) : existingWorkspaceResourceId

resource newWorkspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = if (createWorkspace) {
  name: workspaceName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: workspaceRetentionInDays
    features: {
      enableLogAccessUsingOnlyResourcePermissions: true
    }
  }
}

resource existingWorkspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = if (!createWorkspace) {
  name: workspaceName
  scope: resourceGroup(workspaceSubscriptionId, workspaceResourceGroupName)
}

resource agentIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-agent-identity'
  location: location
  tags: tags
}

// The stronger setup (issue 47): one sender identity per VM group, so a group's rights can be revoked alone and
// Azure's audit logs name the group that sent. Each gets the same two data-plane roles as the shared identity.
resource groupIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = [for group in agentIdentityGroups: {
  name: '${namePrefix}-agent-identity-${group}'
  location: location
  tags: tags
}]



module table 'modules/workspace-table.bicep' = {
  name: '${deployment().name}-table'
  scope: resourceGroup(workspaceSubscriptionId, workspaceResourceGroupName)
  params: {
    workspaceName: workspaceName
    retentionInDays: tableRetentionInDays
    totalRetentionInDays: tableTotalRetentionInDays
  }
  dependsOn: [
    newWorkspace
  ]
}

module ingestion 'modules/ingestion.bicep' = {
  name: '${deployment().name}-ingestion'
  params: {
    location: location
    namePrefix: namePrefix
    nameSuffix: nameSuffix
    tags: tags
    workspaceResourceId: workspaceResourceId
    publisherPrincipalId: agentIdentity.properties.principalId
    groupPublisherPrincipalIds: [for (group, i) in agentIdentityGroups: groupIdentity[i].properties.principalId]
  }
  dependsOn: [
    table
  ]
}

module eventHubs 'modules/eventhubs.bicep' = if (deployEventHubs) {
  name: '${deployment().name}-eventhubs'
  params: {
    location: location
    namePrefix: namePrefix
    nameSuffix: nameSuffix
    tags: tags
    eventHubName: eventHubName
    partitionCount: eventHubPartitionCount
    retentionInDays: eventHubRetentionInDays
    consumerGroupName: eventHubConsumerGroupName
    senderPrincipalId: agentIdentity.properties.principalId
    groupSenderPrincipalIds: [for (group, i) in agentIdentityGroups: groupIdentity[i].properties.principalId]
  }
}

module alerts 'modules/alerts.bicep' = if (deployAlerts) {
  name: '${deployment().name}-alerts'
  params: {
    location: location
    namePrefix: namePrefix
    tags: tags
    workspaceResourceId: workspaceResourceId
    existingActionGroupResourceId: existingActionGroupResourceId
    emailAddresses: alertEmailAddresses
    smsReceivers: alertSmsReceivers
    webhookUrls: alertWebhookUrls
    logicAppReceivers: alertLogicAppReceivers
    freezeSeverity: freezeAlertSeverity
    rebootSeverity: rebootAlertSeverity
    redeploySeverity: redeployAlertSeverity
    preemptSeverity: preemptAlertSeverity
    terminateSeverity: terminateAlertSeverity
    otherEventTypeSeverity: otherEventTypeAlertSeverity
    startedThresholdMinutes: startedThresholdMinutes
    silentAfterMinutes: silentAfterMinutes
    enabled: alertsEnabled
  }
  dependsOn: [
    table
  ]
}

module queryPack 'modules/query-pack.bicep' = if (deployQueryPack) {
  name: '${deployment().name}-query-pack'
  params: {
    location: location
    namePrefix: namePrefix
    tags: tags
  }
}

module fleet 'modules/fleet.bicep' = if (deployFleet && deployEventHubs) {
  name: '${deployment().name}-fleet'
  params: {
    location: location
    namePrefix: namePrefix
    nameSuffix: nameSuffix
    tags: tags
    eventHubsNamespaceName: eventHubs!.outputs.namespaceName
    eventHubName: eventHubs!.outputs.eventHubName
    image: fleetImage
    replicas: fleetReplicas
    targets: fleetTargets
    rules: fleetRules
    targetSecrets: fleetTargetSecrets
    workspaceResourceId: workspaceResourceId
  }
}

module workbook 'modules/workbook.bicep' = if (deployWorkbook) {
  name: '${deployment().name}-workbook'
  params: {
    location: location
    namePrefix: namePrefix
    tags: tags
    workspaceResourceId: workspaceResourceId
  }
  dependsOn: [
    table
  ]
}

var eventHubsNamespace = deployEventHubs ? eventHubs!.outputs.fullyQualifiedNamespace : ''

@description('Container app running sef fleet (empty when not deployed).')
output fleetAppName string = deployFleet && deployEventHubs ? fleet!.outputs.appName : ''

@description('Log Analytics workspace resource id.')
output workspaceResourceId string = workspaceResourceId

@description('Workspace id (GUID) for `az monitor log-analytics query -w`.')
output workspaceCustomerId string = createWorkspace ? newWorkspace!.properties.customerId : existingWorkspace!.properties.customerId

@description('Logs ingestion endpoint of the data collection endpoint (config: loganalytics.endpoint).')
output logsIngestionEndpoint string = ingestion.outputs.logsIngestionEndpoint

@description('Immutable id of the data collection rule (config: loganalytics.ruleId).')
output dcrImmutableId string = ingestion.outputs.ruleImmutableId

@description('Data collection rule resource id.')
output dcrResourceId string = ingestion.outputs.ruleResourceId

@description('Stream name of the rule (config: loganalytics.streamName).')
output streamName string = ingestion.outputs.streamName

@description('Custom table the rule writes to.')
output tableName string = table.outputs.tableName

@description('Event Hubs namespace host name (config: eventhubs.fullyQualifiedNamespace); empty without Event Hubs.')
output eventHubsFullyQualifiedNamespace string = eventHubsNamespace

@description('Event hub name (config: eventhubs.eventHubName); empty without Event Hubs.')
output eventHubName string = deployEventHubs ? eventHubs!.outputs.eventHubName : ''

@description('Consumer group for downstream readers; empty without Event Hubs.')
output eventHubConsumerGroupName string = deployEventHubs ? eventHubs!.outputs.consumerGroupName : ''

@description('Client id of the agents\' user-assigned identity (config: *.managedIdentityClientId).')
output identityClientId string = agentIdentity.properties.clientId

@description('Principal (object) id of the agents\' identity.')
output identityPrincipalId string = agentIdentity.properties.principalId

@description('Resource id of the agents\' identity: assign it to the VMs or scale sets that run the agent.')
output identityResourceId string = agentIdentity.id

@description('One identity per agentIdentityGroups entry: group, resourceId (attach to the group\'s VMs), clientId (its config\'s managedIdentityClientId).')
output groupIdentities array = [for (group, i) in agentIdentityGroups: {
  group: group
  resourceId: groupIdentity[i].id
  clientId: groupIdentity[i].properties.clientId
}]

@description('Action group notified by the alert rules; empty without alerts.')
output actionGroupResourceId string = deployAlerts ? alerts!.outputs.actionGroupResourceId : ''

@description('The fleet workbook (open it under Azure Monitor → Workbooks); empty without it.')
output workbookResourceId string = deployWorkbook ? workbook!.outputs.workbookResourceId : ''

var loganalyticsConfig = {
  endpoint: ingestion.outputs.logsIngestionEndpoint
  ruleId: ingestion.outputs.ruleImmutableId
  streamName: ingestion.outputs.streamName
  credential: 'managedIdentity'
  managedIdentityClientId: agentIdentity.properties.clientId
}

var baseConfig = {
  imdsUrl: 'http://169.254.169.254'
  apiVersion: '2020-07-01'
  pollIntervalMs: 1000
  dataDir: '/var/lib/sef'
  sinks: deployEventHubs ? [
    'eventhubs'
    'loganalytics'
  ] : [
    'loganalytics'
  ]
  logLevel: 'info'
  heartbeatIntervalMs: 900000
  loganalytics: loganalyticsConfig
}

@description('A ready-to-use agent config (/etc/sef/config.json) for the deployed sinks, using the identity above.')
output agentConfig object = deployEventHubs ? union(baseConfig, {
  eventhubs: {
    fullyQualifiedNamespace: eventHubsNamespace
    eventHubName: eventHubs!.outputs.eventHubName
    credential: 'managedIdentity'
    managedIdentityClientId: agentIdentity.properties.clientId
  }
}) : baseConfig
