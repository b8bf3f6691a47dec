// The custom table ScheduledEvents_CL in a Log Analytics workspace, with the record contract's columns.
// Deployed at the workspace's resource group, so it works for a new workspace and for an existing one elsewhere.

@description('Name of the Log Analytics workspace (in the resource group this module is deployed to).')
param workspaceName string

@description('Days the table keeps data for interactive queries (4-730, or -1 for the workspace default).')
param retentionInDays int

@description('Days the table keeps data in total, including long-term retention (-1 for the retention above).')
param totalRetentionInDays int

// Generated from src/contract/ (see test/deploy/generate.ts); schema.test.ts fails when it drifts.
var schema = loadJsonContent('../schema/columns.json')

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = {
  name: workspaceName
}

resource table 'Microsoft.OperationalInsights/workspaces/tables@2023-09-01' = {
  parent: workspace
  name: schema.tableName
  properties: {
    plan: 'Analytics'
    retentionInDays: retentionInDays
    totalRetentionInDays: totalRetentionInDays
    schema: {
      name: schema.tableName
      description: 'Azure Scheduled Events state transitions and agent records written by sef'
      columns: schema.tableColumns
    }
  }
}

output tableName string = table.name
