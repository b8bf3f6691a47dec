// Builds the Log Analytics sink's Logs Ingestion client (@azure/monitor-ingestion) from its settings: the credential
// the settings name, an extra trusted CA when given, the SDK's retries off (the drainer is the only retry loop), and
// the policy that sends the pre-encoded request bodies.
import { readFileSync } from "node:fs";
import { Agent as HttpsAgent } from "node:https";
import { rootCertificates } from "node:tls";
import { LogsIngestionClient } from "@azure/monitor-ingestion";
import { createAzureCredential } from "../azure-credential.js";
import type { PreEncodedBodies } from "./pre-encoded-body.js";
import type { LogAnalyticsSettings } from "./settings.js";

export type TokenCredential = ConstructorParameters<typeof LogsIngestionClient>[1];

/** Builds the credential the settings name. */
export function createCredential(settings: LogAnalyticsSettings): TokenCredential {
  return createAzureCredential(settings.credential, settings.managedIdentityClientId);
}

/** The client and the HTTPS agent it owns (undefined: the SDK's default); the sink destroys the agent on close. */
export function createLogsIngestionClient(
  settings: LogAnalyticsSettings,
  credential: TokenCredential | undefined,
  bodies: PreEncodedBodies,
): { client: LogsIngestionClient; agent: HttpsAgent | undefined } {
  // An extra CA (private PKI, the local peer) is trusted for this client only, next to the public roots.
  const agent = settings.caCertFile
    ? new HttpsAgent({ keepAlive: true, ca: [...rootCertificates, readFileSync(settings.caCertFile, "utf8")] })
    : undefined;
  const client = new LogsIngestionClient(settings.endpoint, credential ?? createCredential(settings), {
    audience: settings.audience,
    // The drain loop owns retries and the rule-wide throttling pause: the SDK's pipeline answers at once.
    retryOptions: { maxRetries: 0 },
    ...(agent ? { agent } : {}),
  });
  client.pipeline.addPolicy(bodies.policy, { phase: "Serialize" });
  return { client, agent };
}
