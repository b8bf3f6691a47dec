// The two ends of the hub the records travel through: the agent's Event Hubs sink (and `sef tail`) writes and reads it,
// the fleet's consumer reads it. What both say the same way: the variable a connection string is read from by default,
// and the rules a connection's settings obey. Pure (each side turns the rules into refinements of its own schema).

/** The environment variable read for a connection string when the settings name none. */
export const defaultConnectionStringEnv = "SEF_EVENTHUBS_CONNECTION_STRING";

/** What the rules read of a connection's settings. */
export interface EventHubsConnectionFields {
  readonly connectionString?: string | undefined;
  readonly fullyQualifiedNamespace?: string | undefined;
  readonly eventHubName?: string | undefined;
}

/** A rule over a connection's settings: where `holds` is false they are refused with `message`, at `path`. */
export interface EventHubsConnectionRule {
  readonly holds: (settings: EventHubsConnectionFields) => boolean;
  readonly issue: { message: string; path?: string[] };
}

/** One way in (a connection string or a namespace for Entra ID, not both); a namespace names its hub. */
export const eventHubsConnectionRules: readonly EventHubsConnectionRule[] = [
  {
    holds: (s) => !(s.connectionString && s.fullyQualifiedNamespace),
    issue: { message: "set either connectionString or fullyQualifiedNamespace, not both" },
  },
  {
    holds: (s) => !s.fullyQualifiedNamespace || Boolean(s.eventHubName),
    issue: { message: "eventHubName is required with fullyQualifiedNamespace", path: ["eventHubName"] },
  },
];
