// End to end through managed identity: ManagedIdentityCredential fetches a local token from an IMDS-style token
// endpoint (found through AZURE_POD_IDENTITY_AUTHORITY_HOST), and the ingestion peer accepts it.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localTokenResponse } from "../../src/testbed/peers/local-tokens.js";
import {
  startLogsIngestionEmulator,
  type LogsIngestionEmulator,
} from "../../src/testbed/peers/logs-ingestion/index.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { LogAnalyticsSink } from "../../src/agent/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema } from "../../src/agent/sinks/loganalytics/settings.js";
import { RulePauses } from "../../src/agent/sinks/loganalytics/rule-pauses.js";
import { entries, transitionRecord } from "./helpers.js";

const unknownClientId = "99999999-9999-9999-9999-999999999999";

interface TokenRequest {
  readonly resource: string | null;
  readonly clientId: string | null;
  readonly metadataHeader: string | undefined;
}

/** The IMDS managed-identity token endpoint as `sef-testbed simulate` serves it (GET /metadata/identity/oauth2/token). */
function startTokenServer(): Promise<{ server: Server; url: string; requests: TokenRequest[] }> {
  const requests: TokenRequest[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? "/", "http://imds.local");
    // MSAL asks for `/metadata/identity/oauth2/token/` (trailing slash) when the host comes from the environment.
    if (url.pathname.replace(/\/$/, "") !== "/metadata/identity/oauth2/token" || req.headers.metadata !== "true") {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ error: "invalid_request", error_description: "Required metadata header not specified" }),
      );
      return;
    }
    const resource = url.searchParams.get("resource");
    const clientId = url.searchParams.get("client_id");
    if (clientId === unknownClientId) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "invalid_request", error_description: "Identity not found" }));
      return;
    }
    requests.push({ resource, clientId, metadataHeader: req.headers.metadata });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(localTokenResponse(resource ?? "", clientId ? { clientId } : {})));
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests });
    });
  });
}

let peer: LogsIngestionEmulator;
let tokenServer: Awaited<ReturnType<typeof startTokenServer>>;

beforeAll(async () => {
  peer = await startLogsIngestionEmulator();
  tokenServer = await startTokenServer();
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = tokenServer.url;
});
afterAll(async () => {
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  await peer.close();
  await new Promise((resolve) => tokenServer.server.close(resolve));
});

/** A sink for the peer that authenticates with the SDK's managed-identity credential (settings `extra` on top). */
function sinkWith(extra: Record<string, unknown>): LogAnalyticsSink {
  return new LogAnalyticsSink({
    settings: logAnalyticsSettingsSchema.parse({
      endpoint: peer.endpoint,
      ruleId: peer.ruleId,
      caCertFile: peer.caCertPath,
      ...extra,
    }),
    logger: silentLogger(),
    pauses: new RulePauses(),
  });
}

describe("managed identity", () => {
  it("a user-assigned identity's token for https://monitor.azure.com is fetched and accepted", async () => {
    const sink = sinkWith({
      credential: "managedIdentity",
      managedIdentityClientId: "11111111-2222-3333-4444-555555555555",
    });
    const records = [transitionRecord(1, { RecordId: "mi-1" }), transitionRecord(2, { RecordId: "mi-2" })];
    try {
      expect(
        (await sink.send(entries(records), new AbortController().signal)).every((o) => o.kind === "delivered"),
      ).toBe(true);
    } finally {
      await sink.close();
    }
    expect(peer.rows().map((r) => r.RecordId)).toEqual(["mi-1", "mi-2"]);
    expect(tokenServer.requests).toContainEqual({
      resource: "https://monitor.azure.com",
      clientId: "11111111-2222-3333-4444-555555555555",
      metadataHeader: "true",
    });
  });

  it("the system-assigned identity works too (and the token is cached between sends)", async () => {
    const sink = sinkWith({});
    try {
      const before = tokenServer.requests.filter((r) => r.clientId === null).length;
      expect(
        (await sink.send(entries([transitionRecord(3, { RecordId: "mi-3" })]), new AbortController().signal)).every(
          (o) => o.kind === "delivered",
        ),
      ).toBe(true);
      expect(
        (await sink.send(entries([transitionRecord(4, { RecordId: "mi-4" })], 2), new AbortController().signal)).every(
          (o) => o.kind === "delivered",
        ),
      ).toBe(true);
      expect(tokenServer.requests.filter((r) => r.clientId === null).length - before).toBe(1);
    } finally {
      await sink.close();
    }
    expect(peer.rows().map((r) => r.RecordId)).toContain("mi-4");
  });

  it("an identity the token endpoint refuses makes the send retryable, never dead-lettered", async () => {
    const sink = sinkWith({ managedIdentityClientId: unknownClientId });
    try {
      const result = await sink.send(
        entries([transitionRecord(5, { RecordId: "mi-5" })]),
        new AbortController().signal,
      );
      expect(result[0]).toMatchObject({
        kind: "retry",
        reason: expect.stringMatching(/^CredentialUnavailableError: .*Identity not found/),
      });
    } finally {
      await sink.close();
    }
    expect(peer.rows().map((r) => r.RecordId)).not.toContain("mi-5");
  });
});
