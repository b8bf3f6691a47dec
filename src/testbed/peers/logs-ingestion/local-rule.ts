// The rule the Logs Ingestion peer serves when none is named: a plain constant, apart from the server so that a command
// line can show it without loading the HTTPS peer.
/** A DCR immutable id shaped like the real ones, used when none is given. */
export const defaultLocalRuleId = "dcr-00000000000000000000000000000000";
