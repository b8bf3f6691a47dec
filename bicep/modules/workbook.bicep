// The fleet view: an Azure Monitor Workbook over ScheduledEvents_CL. Its content is ../workbook/fleet.workbook.json,
// generated from the .kql files beside it by `npx tsx test/deploy/generate.ts` (test/deploy/workbook.test.ts checks it).

param location string
param namePrefix string
param tags object

@description('Resource id of the Log Analytics workspace holding ScheduledEvents_CL.')
param workspaceResourceId string

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, namePrefix, 'sef-fleet-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: '${namePrefix}: Scheduled Events fleet view'
    description: 'Upcoming events, per-VM timeline, events by type, zone and scale set, silent agents, agent versions and health.'
    category: 'workbook'
    sourceId: workspaceResourceId
    serializedData: replace(loadTextContent('../workbook/fleet.workbook.json'), '__SEF_WORKSPACE_RESOURCE_ID__', workspaceResourceId)
  }
}

output workbookResourceId string = workbook.id
