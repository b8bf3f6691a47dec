// End to end with `sef-testbed simulate`'s IMDS: ManagedIdentityCredential (host from AZURE_POD_IDENTITY_AUTHORITY_HOST)
// gets a local token from the simulator and the Logs Ingestion peer accepts it.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLogsIngestionEmulator, type LogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/index.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/index.js";
import { LogAnalyticsSink } from "../../src/agent/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema } from "../../src/agent/sinks/loganalytics/settings.js";
import { RulePauses } from "../../src/agent/sinks/loganalytics/rule-pauses.js";
import { entries, transitionRecord } from "./helpers.js";

let peer: LogsIngestionEmulator;
let simulator: Simulator;

beforeAll(async () => {
  peer = await startLogsIngestionEmulator();
  simulator = await startSimulator({ scenario: "idle" });
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = simulator.url;
});
afterAll(async () => {
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  await peer.close();
  await simulator.close();
});

it("delivers with a managed-identity token served by the IMDS simulator", async () => {
  const sink = new LogAnalyticsSink({
    settings: logAnalyticsSettingsSchema.parse({ endpoint: peer.endpoint, ruleId: peer.ruleId, caCertFile: peer.caCertPath }),
    logger: silentLogger(),
    pauses: new RulePauses(),
  });
  try {
    expect((await sink.send(entries([transitionRecord(1, { RecordId: "sim-1" })]), new AbortController().signal)).every((o) => o.kind === "delivered")).toBe(true);
  } finally {
    await sink.close();
  }
  expect(peer.rows().map((r) => r.RecordId)).toEqual(["sim-1"]);
  // MSAL asks for the token path with a trailing slash; count both spellings.
  const tokenRequests = Object.entries(simulator.status().requests)
    .filter(([path]) => path.replace(/\/$/, "") === "/metadata/identity/oauth2/token")
    .map(([, byStatus]) => byStatus["200"] ?? 0);
  expect(tokenRequests.reduce((a, b) => a + b, 0)).toBe(1);
});
