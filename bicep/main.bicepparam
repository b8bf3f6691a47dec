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

param alertEmail = 'sre-oncall@example.com'
param startedThresholdMinutes = 30
param silentAfterMinutes = 45

param tags = {
  workload: 'sef'
}
