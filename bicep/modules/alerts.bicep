// Log search alert rules over ScheduledEvents_CL and the action group they notify. Every rule query is a .kql
// file under ../queries (checked offline by test/deploy/kql.test.ts); thresholds are substituted into `let` lines.

param location string
param namePrefix string
param tags object

@description('Resource id of the Log Analytics workspace holding ScheduledEvents_CL.')
param workspaceResourceId string

@description('Resource id of an existing action group the rules notify; empty to create one with the receivers below.')
param existingActionGroupResourceId string

@description('Email addresses the new action group notifies (common alert schema).')
param emailAddresses array

@description('SMS receivers of the new action group: objects { countryCode: \'1\', phoneNumber: \'5555550100\' }.')
param smsReceivers array

@description('HTTPS webhooks the new action group posts the common alert schema to (e.g. a Teams workflow or an HTTP-triggered function).')
param webhookUrls array

@description('Logic App receivers of the new action group (e.g. one posting to Teams): objects { name, resourceId, callbackUrl }.')
param logicAppReceivers array

@minValue(-1)
@maxValue(4)
@description('Severity of the alert for Freeze events (0 critical … 4 verbose; -1: no rule).')
param freezeSeverity int

@minValue(-1)
@maxValue(4)
@description('Severity of the alert for Reboot events (-1: no rule).')
param rebootSeverity int

@minValue(-1)
@maxValue(4)
@description('Severity of the alert for Redeploy events (-1: no rule).')
param redeploySeverity int

@minValue(-1)
@maxValue(4)
@description('Severity of the alert for Preempt (Spot eviction) events (-1: no rule).')
param preemptSeverity int

@minValue(-1)
@maxValue(4)
@description('Severity of the alert for Terminate events (-1: no rule).')
param terminateSeverity int

@minValue(-1)
@maxValue(4)
@description('Severity of the alert for EventTypes Azure adds later (-1: no rule).')
param otherEventTypeSeverity int

@minValue(5)
@description('Minutes an event may stay Started (no Completed) before the stuck-event alert fires.')
param startedThresholdMinutes int

@minValue(20)
@description('Minutes without any record from a VM (seen in the last day) before the silent-agent alert fires.')
param silentAfterMinutes int

@description('Whether the rules are enabled.')
param enabled bool

var receiverCount = length(emailAddresses) + length(smsReceivers) + length(webhookUrls) + length(logicAppReceivers)
var createActionGroup = empty(existingActionGroupResourceId)
var actionGroupName = '${namePrefix}-alerts'

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (createActionGroup) {
  name: actionGroupName
  location: 'Global'
  tags: tags
  properties: {
    groupShortName: 'sef'
    enabled: true
    emailReceivers: [
      for (address, i) in emailAddresses: {
        name: 'email-${i}'
        emailAddress: address
        useCommonAlertSchema: true
      }
    ]
    smsReceivers: [
      for (receiver, i) in smsReceivers: {
        name: 'sms-${i}'
        countryCode: receiver.countryCode
        phoneNumber: receiver.phoneNumber
      }
    ]
    webhookReceivers: [
      for (url, i) in webhookUrls: {
        name: 'webhook-${i}'
        serviceUri: url
        useCommonAlertSchema: true
      }
    ]
    logicAppReceivers: [
      for (receiver, i) in logicAppReceivers: {
        name: receiver.?name ?? 'logicapp-${i}'
        resourceId: receiver.resourceId
        callbackUrl: receiver.callbackUrl
        useCommonAlertSchema: true
      }
    ]
  }
}

// An action group without receivers notifies nobody: the deployment fails here, naming the parameters to set.
var actionGroupId = !createActionGroup
  ? existingActionGroupResourceId
  : receiverCount > 0
      ? resourceId('Microsoft.Insights/actionGroups', actionGroupName)
      : fail('sef alerts need someone to notify: set existingActionGroupResourceId, or at least one of alertEmailAddresses, alertSmsReceivers, alertWebhookUrls, alertLogicAppReceivers (or deployAlerts=false).')

// One rule per EventType, each with its own severity: a Freeze (seconds of pause) need not page like a Reboot.
var eventTypeRules = [
  {
    eventType: 'Freeze'
    severity: freezeSeverity
  }
  {
    eventType: 'Reboot'
    severity: rebootSeverity
  }
  {
    eventType: 'Redeploy'
    severity: redeploySeverity
  }
  {
    eventType: 'Preempt'
    severity: preemptSeverity
  }
  {
    eventType: 'Terminate'
    severity: terminateSeverity
  }
]

// One entry per rule; `query` is always a loadTextContent of a .kql file (possibly with a `let` line replaced).
// The event rules' windows are on ingestion_time() in the query (5 minutes, as evaluationFrequency and windowSize);
// overrideQueryTimeRange P2D lets them see records observed up to 2 days before they arrived.
var eventRules = [
  for rule in eventTypeRules: {
    key: 'event-${toLower(rule.eventType)}'
    displayName: 'sef: ${rule.eventType} event scheduled or started on a VM'
    description: 'A ${rule.eventType} event was Scheduled (Freeze: only Started) or Started on the VM it affects, reported by that VM; ObservedAtUtc is when the VM saw it.'
    severity: rule.severity
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    overrideQueryTimeRange: 'P2D'
    autoMitigate: false
    dimensions: [
      'VmName'
      'EventStatus'
      'EventId'
      'ObservedAtUtc'
    ]
    query: replace(loadTextContent('../queries/alerts/event-of-type.kql'), 'let eventType = "Reboot";', 'let eventType = "${rule.eventType}";')
  }
]

var remainingRules = [
  {
    key: 'event-other-type'
    displayName: 'sef: event of a new EventType scheduled or started on a VM'
    description: 'An event of an EventType without a rule of its own was Scheduled or Started on the VM it affects; ObservedAtUtc is when the VM saw it.'
    severity: otherEventTypeSeverity
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    overrideQueryTimeRange: 'P2D'
    autoMitigate: false
    dimensions: [
      'VmName'
      'EventType'
      'EventStatus'
      'EventId'
      'ObservedAtUtc'
    ]
    query: loadTextContent('../queries/alerts/event-of-other-type.kql')
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

var rules = filter(concat(eventRules, remainingRules), rule => rule.severity >= 0)

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
          actionGroupId
        ]
        customProperties: {
          source: 'sef'
        }
      }
    }
    dependsOn: [
      actionGroup
    ]
  }
]

output actionGroupResourceId string = actionGroupId
output alertRuleNames array = [for (rule, i) in rules: alertRules[i].name]
