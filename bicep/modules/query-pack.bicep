// The KQL library as a Log Analytics query pack: every saved query body is a .kql file under ../queries, loaded with
// loadTextContent so the files and the saved queries never drift (test/deploy/kql.test.ts compiles the files).

param location string
param namePrefix string
param tags object

var savedQueries = [
  {
    key: 'upcoming-maintenance'
    displayName: 'Scheduled Events: upcoming maintenance across the fleet'
    description: 'Events whose latest status is Scheduled or Started, per affected VM, by NotBefore.'
    body: loadTextContent('../queries/upcoming-maintenance.kql')
  }
  {
    key: 'event-timeline'
    displayName: 'Scheduled Events: one event timeline'
    description: 'Every record any VM wrote about one EventId (set eventId in the first line).'
    body: loadTextContent('../queries/event-timeline.kql')
  }
  {
    key: 'notice-lead-time'
    displayName: 'Scheduled Events: notice lead time by EventType'
    description: 'Scheduled sighting to NotBefore and to Started, by EventType.'
    body: loadTextContent('../queries/notice-lead-time.kql')
  }
  {
    key: 'impact-duration'
    displayName: 'Scheduled Events: impact duration by EventType'
    description: 'Started to Completed, by EventType, next to the announced DurationInSeconds.'
    body: loadTextContent('../queries/impact-duration.kql')
  }
  {
    key: 'most-affected-vms'
    displayName: 'Scheduled Events: most affected VMs'
    description: 'VMs hit by the most events in the last 30 days.'
    body: loadTextContent('../queries/most-affected-vms.kql')
  }
  {
    key: 'event-status-deduplicated'
    displayName: 'Scheduled Events: one row per event status across VMs'
    description: 'One row per (EventId, EventStatus), deduplicated on RecordId, with the VMs that reported it.'
    body: loadTextContent('../queries/event-status-deduplicated.kql')
  }
  {
    key: 'cancelled-events'
    displayName: 'Scheduled Events: cancelled events'
    description: 'Events that were Scheduled and disappeared without starting.'
    body: loadTextContent('../queries/cancelled-events.kql')
  }
  {
    key: 'spot-evictions'
    displayName: 'Scheduled Events: Spot evictions by region and zone'
    description: 'Preempt events per Location and Zone.'
    body: loadTextContent('../queries/spot-evictions.kql')
  }
  {
    key: 'silent-agents'
    displayName: 'Scheduled Events: silent agents'
    description: 'VMs seen in the last day that have written no record (not even a Heartbeat) for 45 minutes.'
    body: loadTextContent('../queries/silent-agents.kql')
  }
  {
    key: 'malformed-events'
    displayName: 'Scheduled Events: malformed events'
    description: 'Events IMDS listed that an agent could not read (MalformedEvent records): reason, problem and the raw event.'
    body: loadTextContent('../queries/malformed-events.kql')
  }
  {
    key: 'node-drains'
    displayName: 'Scheduled Events: Kubernetes node drains'
    description: 'Drains by the kubernetes action: seconds taken, pods evicted, pods held by a PodDisruptionBudget (and how long), pods left at the deadline.'
    body: loadTextContent('../queries/node-drains.kql')
  }
]

resource pack 'Microsoft.OperationalInsights/queryPacks@2019-09-01' = {
  name: '${namePrefix}-queries'
  location: location
  tags: tags
  properties: {}
}

resource queries 'Microsoft.OperationalInsights/queryPacks/queries@2019-09-01' = [
  for query in savedQueries: {
    parent: pack
    name: guid(pack.id, query.key)
    properties: {
      displayName: query.displayName
      description: query.description
      body: query.body
      related: {
        categories: [
          'virtualmachines'
          'monitor'
        ]
        resourceTypes: [
          'microsoft.operationalinsights/workspaces'
        ]
      }
      tags: {
        labels: [
          'sef'
          'scheduled-events'
        ]
      }
    }
  }
]

output queryPackResourceId string = pack.id
