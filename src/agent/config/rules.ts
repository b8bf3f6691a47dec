// Cross-field configuration rules the per-field schema cannot express: which sections the sinks in use need, credentials
// that must exist, identifiers with a fixed shape. Pure: the parsed config and the environment in, problems out.
import type { AgentConfig } from "./schema.js";
import { findSinkFactory, parseSinkSpec } from "../sinks/registry.js";
import { defaultConnectionStringEnv } from "../sinks/eventhubs/settings.js";

const hostLabel = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const fqdnPattern = new RegExp(`^(?=.{1,253}$)${hostLabel}(?:\\.${hostLabel})+$`, "i");
const hostPattern = new RegExp(`^(?=.{1,253}$)${hostLabel}(?:\\.${hostLabel})*$`, "i");
const ruleIdPattern = /^dcr-[0-9a-f]{32}$/i;

/** Whether `text` has the shape of an Event Hubs connection string; the value itself is never quoted anywhere. */
export function isEventHubsConnectionString(text: string): { ok: true; entityPath: string | undefined } | { ok: false } {
  const parts = new Map<string, string>();
  for (const part of text.split(";")) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    if (eq <= 0) return { ok: false };
    parts.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const endpoint = parts.get("endpoint");
  if (!endpoint || !/^sb:\/\/[^/\s]+/i.test(endpoint)) return { ok: false };
  const hasKey = Boolean(parts.get("sharedaccesskeyname") && parts.get("sharedaccesskey"));
  const hasSas = Boolean(parts.get("sharedaccesssignature"));
  if (!hasKey && !hasSas) return { ok: false };
  return { ok: true, entityPath: parts.get("entitypath") || undefined };
}

/** zod's message, with "expected string, received undefined" said plainly. */
export function describeIssue(issue: { code: string; message: string }): string {
  return issue.code === "invalid_type" && /received undefined$/.test(issue.message) ? "required, but not set" : issue.message;
}

/** Problems as `field: message` lines; empty when the configuration holds together. */
export function crossFieldProblems(config: AgentConfig, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const used = new Map<string, string | undefined>();
  const seen = new Set<string>();
  config.sinks.forEach((spec, index) => {
    try {
      const { type, argument } = parseSinkSpec(spec);
      if (seen.has(spec)) problems.push(`sinks[${index}]: "${spec}" is listed twice`);
      seen.add(spec);
      if (!used.has(type)) used.set(type, argument);
    } catch (err) {
      problems.push(`sinks[${index}]: ${(err as Error).message}`);
    }
  });

  // A sink in use whose section is absent still needs its required settings.
  for (const type of used.keys()) {
    if ((config as Record<string, unknown>)[type] !== undefined) continue;
    const result = findSinkFactory(type).settingsSchema.safeParse({});
    if (!result.success) {
      for (const issue of result.error.issues) problems.push(`${[type, ...issue.path.map(String)].join(".")}: ${describeIssue(issue)} (the ${type} sink is in use)`);
    }
  }

  const eh = config.eventhubs;
  if (eh?.fullyQualifiedNamespace !== undefined) {
    const pattern = eh.customEndpointAddress === undefined ? fqdnPattern : hostPattern;
    if (!pattern.test(eh.fullyQualifiedNamespace)) {
      problems.push("eventhubs.fullyQualifiedNamespace: must be a fully qualified host name such as NAME.servicebus.windows.net (no scheme, port or path)");
    }
  }
  if (eh?.connectionString !== undefined) checkConnectionString(eh.connectionString, "eventhubs.connectionString", eh.eventHubName, problems);
  if (used.has("eventhubs") && eh?.fullyQualifiedNamespace === undefined && eh?.connectionString === undefined) {
    const variable = eh?.connectionStringEnv ?? defaultConnectionStringEnv;
    const fromEnv = env[variable]?.trim();
    if (!fromEnv) {
      problems.push(
        `eventhubs: the eventhubs sink needs a namespace or a connection string: set eventhubs.fullyQualifiedNamespace (+ eventHubName) or the environment variable ${variable}`,
      );
    } else {
      checkConnectionString(fromEnv, `environment variable ${variable}`, eh?.eventHubName, problems);
    }
  }

  const la = config.loganalytics;
  if (la !== undefined) {
    if (!ruleIdPattern.test(la.ruleId)) problems.push(`loganalytics.ruleId: must be the DCR's immutable id: "dcr-" followed by 32 hex digits`);
    if (!la.streamName.startsWith("Custom-")) problems.push(`loganalytics.streamName: must start with "Custom-" (got "${la.streamName}")`);
  }

  if (used.has("webhook")) {
    const argument = used.get("webhook");
    if (argument !== undefined && !/^https?:\/\/[^/\s]+/i.test(argument)) problems.push(`sinks: webhook:URL needs an http:// or https:// URL (got "${argument}")`);
    if (argument === undefined && config.webhook?.url === undefined) problems.push("webhook.url: the webhook sink needs a URL: set webhook.url or use --sink webhook:URL");
    const wh = config.webhook;
    for (const [name, value] of Object.entries(wh?.headers ?? {})) {
      if (typeof value !== "string" && !env[value.fromEnv]) problems.push(`webhook.headers.${name}: environment variable ${value.fromEnv} is not set`);
    }
    if (wh?.signature && !env[wh.signature.secretEnv]) problems.push(`webhook.signature.secretEnv: environment variable ${wh.signature.secretEnv} is not set`);
  }
  return problems;
}

function checkConnectionString(text: string, source: string, eventHubName: string | undefined, problems: string[]): void {
  const parsed = isEventHubsConnectionString(text);
  if (!parsed.ok) {
    problems.push(`${source}: not a valid Event Hubs connection string (expected Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…)`);
  } else if (parsed.entityPath === undefined && eventHubName === undefined) {
    problems.push(`eventhubs.eventHubName: required when the connection string (${source}) has no EntityPath`);
  }
}

/** Names of environment variables the configuration itself refers to (credentials, header values), so they are not "unknown". */
export function referencedVariables(config: Partial<AgentConfig>): string[] {
  const names = [defaultConnectionStringEnv];
  if (config.eventhubs?.connectionStringEnv !== undefined) names.push(config.eventhubs.connectionStringEnv);
  for (const value of Object.values(config.webhook?.headers ?? {})) if (typeof value !== "string") names.push(value.fromEnv);
  if (config.webhook?.signature) names.push(config.webhook.signature.secretEnv);
  return names;
}
