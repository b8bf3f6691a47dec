// Log search alert rules over ScheduledEvents_CL and the action group they notify. Every rule query is a .kql
// file under ../queries (checked offline by test/deploy/kql.test.ts); thresholds are substituted into `let` lines.

param location string
param namePrefix string
param tags object

@description('Resource id of the Log Analytics workspace holding ScheduledEvents_CL.')
param workspaceResourceId string

@description('Email address notified by the action group; empty for an action group without receivers.')
param alertEmail string

@minValue(5)
@description('Minutes an event may stay Started (no Completed) before the stuck-event alert fires.')
param startedThresholdMinutes int

@minValue(20)
@description('Minutes without any record from a VM (seen in the last day) before the silent-agent alert fires.')
param silentAfterMinutes int

@description('Whether the rules are enabled.')
param enabled bool

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: '${namePrefix}-alerts'
  location: 'Global'
  tags: tags
  properties: {
    groupShortName: 'sef'
    enabled: true
    emailReceivers: empty(alertEmail) ? [] : [
      {
        name: 'sre-email'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

// One entry per rule; `query` is always a loadTextContent of a .kql file (possibly with a `let` line replaced).
var rules = [
  {
    key: 'impactful-event-scheduled'
    displayName: 'sef: impactful maintenance scheduled for a VM'
    description: 'A Reboot, Redeploy, Preempt or Terminate event was scheduled for a VM (reported by that VM).'
    severity: 2
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    overrideQueryTimeRange: ''
    autoMitigate: false
    dimensions: [
      'VmName'
      'EventType'
    ]
    query: loadTextContent('../queries/alerts/impactful-event-scheduled.kql')
  }
  {
    key: 'event-started'
    displayName: 'sef: maintenance event started on a VM'
    description: 'A scheduled event entered the Started state on the VM it affects.'
    severity: 2
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    overrideQueryTimeRange: ''
    autoMitigate: false
    dimensions: [
      'VmName'
      'EventType'
    ]
    query: loadTextContent('../queries/alerts/event-started.kql')
  }
  {
    key: 'event-started-too-long'
    displayName: 'sef: maintenance event still Started after ${startedThresholdMinutes} minutes'
    description: 'An event has been Started for longer than ${startedThresholdMinutes} minutes without Completed from the same VM.'
    severity: 1
    evaluationFrequency: 'PT15M'
    windowSize: 'PT15M'
    overrideQueryTimeRange: 'P2D'
    autoMitigate: true
    dimensions: [
      'VmName'
      'EventId'
    ]
    query: replace(loadTextContent('../queries/alerts/event-started-too-long.kql'), 'let startedThreshold = 30m;', 'let startedThreshold = ${startedThresholdMinutes}m;')
  }
  {
    key: 'silent-agent'
    displayName: 'sef: agent silent for more than ${silentAfterMinutes} minutes'
    description: 'A VM that wrote records in the last day has written none (not even a Heartbeat) for ${silentAfterMinutes} minutes.'
    severity: 2
    evaluationFrequency: 'PT15M'
    windowSize: 'PT15M'
    overrideQueryTimeRange: 'P2D'
    autoMitigate: true
    dimensions: [
      'VmName'
    ]
    query: replace(loadTextContent('../queries/silent-agents.kql'), 'let silentAfter = 45m;', 'let silentAfter = ${silentAfterMinutes}m;')
  }
]

resource alertRules 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = [
  for rule in rules: {
    name: '${namePrefix}-${rule.key}'
    location: location
    tags: tags
    kind: 'LogAlert'
    properties: {
      displayName: rule.displayName
      description: rule.description
      severity: rule.severity
      enabled: enabled
      scopes: [
        workspaceResourceId
      ]
      evaluationFrequency: rule.evaluationFrequency
      windowSize: rule.windowSize
      overrideQueryTimeRange: empty(rule.overrideQueryTimeRange) ? null : rule.overrideQueryTimeRange
      autoMitigate: rule.autoMitigate
      criteria: {
        allOf: [
          {
            query: rule.query
            timeAggregation: 'Count'
            operator: 'GreaterThan'
            threshold: 0
            dimensions: [
              for dimension in rule.dimensions: {
                name: dimension
                operator: 'Include'
                values: [
                  '*'
                ]
              }
            ]
            failingPeriods: {
              numberOfEvaluationPeriods: 1
              minFailingPeriodsToAlert: 1
            }
          }
        ]
      }
      actions: {
        actionGroups: [
          actionGroup.id
        ]
        customProperties: {
          source: 'sef'
        }
      }
    }
  }
]

output actionGroupResourceId string = actionGroup.id
output alertRuleNames array = [for (rule, i) in rules: alertRules[i].name]
