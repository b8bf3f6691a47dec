// End to end with `sef-testbed simulate`'s IMDS: ManagedIdentityCredential (host from AZURE_POD_IDENTITY_AUTHORITY_HOST)
// gets a local token from the simulator and the Logs Ingestion peer accepts it; a failing token endpoint is asked once
// per send (the drain loop is the only retry owner).
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  startLogsIngestionEmulator,
  type LogsIngestionEmulator,
} from "../../src/testbed/peers/logs-ingestion/index.js";
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

/** Token requests the simulator answered, by status (MSAL asks with and without a trailing slash: both count). */
function tokenRequests(): Record<string, number> {
  const byStatus: Record<string, number> = {};
  for (const [path, counts] of Object.entries(simulator.status().requests)) {
    if (path.replace(/\/$/, "") !== "/metadata/identity/oauth2/token") continue;
    for (const [status, n] of Object.entries(counts)) byStatus[status] = (byStatus[status] ?? 0) + n;
  }
  return byStatus;
}

it("delivers with a managed-identity token served by the IMDS simulator", async () => {
  const sink = new LogAnalyticsSink({
    settings: logAnalyticsSettingsSchema.parse({
      endpoint: peer.endpoint,
      ruleId: peer.ruleId,
      caCertFile: peer.caCertPath,
    }),
    logger: silentLogger(),
    pauses: new RulePauses(),
  });
  try {
    expect(
      (await sink.send(entries([transitionRecord(1, { RecordId: "sim-1" })]), new AbortController().signal)).every(
        (o) => o.kind === "delivered",
      ),
    ).toBe(true);
  } finally {
    await sink.close();
  }
  expect(peer.rows().map((r) => r.RecordId)).toEqual(["sim-1"]);
  expect(tokenRequests()).toEqual({ "200": 1 });
});

it("asks a failing token endpoint once per send: no credential retry inside the drain loop's", async () => {
  simulator.setTokenFault({ count: 2, status: 500 });
  // Another user-assigned identity: MSAL's token cache (one per process) holds none for it yet.
  const settings = {
    endpoint: peer.endpoint,
    ruleId: peer.ruleId,
    caCertFile: peer.caCertPath,
    managedIdentityClientId: "22222222-3333-4444-5555-666666666666",
  };
  const sink = new LogAnalyticsSink({
    settings: logAnalyticsSettingsSchema.parse(settings),
    logger: silentLogger(),
    pauses: new RulePauses(),
  });
  const before = tokenRequests();
  const perSend: Array<{ outcome: string; tokens: Record<string, number> }> = [];
  try {
    for (let send = 0; send < 3; send++) {
      const [outcome] = await sink.send(
        entries([transitionRecord(2, { RecordId: "sim-2" })]),
        new AbortController().signal,
      );
      const now = tokenRequests();
      perSend.push({
        outcome: outcome!.kind,
        tokens: { "500": now["500"] ?? 0, "200": (now["200"] ?? 0) - (before["200"] ?? 0) },
      });
    }
  } finally {
    await sink.close();
  }
  expect(perSend).toEqual([
    { outcome: "retry", tokens: { "500": 1, "200": 0 } },
    { outcome: "retry", tokens: { "500": 2, "200": 0 } },
    { outcome: "delivered", tokens: { "500": 2, "200": 1 } },
  ]);
});
