// Example parameters: `az deployment group create -g RG -f bicep/main.bicep -p bicep/main.bicepparam`.
using 'main.bicep'

param namePrefix = 'sef'

// Leave empty to create a workspace, or point at an existing one, e.g.
// '/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.OperationalInsights/workspaces/NAME'.
param existingWorkspaceResourceId = ''

param tableRetentionInDays = 30
param tableTotalRetentionInDays = 365

param deployEventHubs = true
param eventHubName = 'scheduled-events'
param eventHubPartitionCount = 4
param eventHubConsumerGroupName = 'sef-readers'

// Alerts must reach someone: an existing action group, or at least one receiver. Taken from the environment so this
// file holds no placeholder address; the deployment fails, naming these parameters, when none is set:
//   SEF_ACTION_GROUP_ID=/subscriptions/SUB/resourceGroups/RG/providers/microsoft.insights/actionGroups/NAME
//   SEF_ALERT_EMAIL=oncall@yourcompany.example
param existingActionGroupResourceId = readEnvironmentVariable('SEF_ACTION_GROUP_ID', '')
param alertEmailAddresses = empty(readEnvironmentVariable('SEF_ALERT_EMAIL', '')) ? [] : [
  readEnvironmentVariable('SEF_ALERT_EMAIL', '')
]

// Severities per EventType (0 critical … 4 verbose; -1: no rule): a Freeze is seconds of pause, not a page.
param freezeAlertSeverity = 3
param rebootAlertSeverity = 2
param redeployAlertSeverity = 2
param preemptAlertSeverity = 2
param terminateAlertSeverity = 2
param startedThresholdMinutes = 30
param silentAfterMinutes = 45

param tags = {
  workload: 'sef'
}
