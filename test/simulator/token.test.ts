// The managed-identity token endpoint, exercised by the real ManagedIdentityCredential of @azure/identity
// (AZURE_POD_IDENTITY_AUTHORITY_HOST points it at the simulator).
import { ManagedIdentityCredential } from "@azure/identity";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLocalToken } from "../../src/testbed/peers/local-tokens.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";

const managedIdentityVariables = [
  "AZURE_POD_IDENTITY_AUTHORITY_HOST",
  "IDENTITY_ENDPOINT",
  "IDENTITY_HEADER",
  "IDENTITY_SERVER_THUMBPRINT",
  "IMDS_ENDPOINT",
  "MSI_ENDPOINT",
  "MSI_SECRET",
];
const savedEnv = new Map<string, string | undefined>();
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ scenario: "idle", port: 0 });
  for (const name of managedIdentityVariables) {
    savedEnv.set(name, process.env[name]);
    delete process.env[name];
  }
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = sim.url;
});

afterAll(async () => {
  for (const [name, value] of savedEnv) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await sim.close();
});

describe("ManagedIdentityCredential against the simulator", () => {
  const cases = [
    { scope: "https://eventhubs.azure.net/.default", audience: "https://eventhubs.azure.net", clientId: undefined },
    { scope: "https://monitor.azure.com//.default", audience: "https://monitor.azure.com", clientId: undefined },
    {
      scope: "https://eventhubs.azure.net/.default",
      audience: "https://eventhubs.azure.net",
      clientId: "5c3f1a9e-0d6b-4e2a-9b7c-1d2e3f4a5b6c",
    },
    {
      scope: "https://monitor.azure.com//.default",
      audience: "https://monitor.azure.com",
      clientId: "5c3f1a9e-0d6b-4e2a-9b7c-1d2e3f4a5b6c",
    },
  ];

  it.each(cases)("gets a token for $scope (clientId $clientId)", async ({ scope, audience, clientId }) => {
    const credential =
      clientId === undefined ? new ManagedIdentityCredential() : new ManagedIdentityCredential({ clientId });
    const before = Date.now();
    const token = await credential.getToken(scope);
    expect(token.expiresOnTimestamp).toBeGreaterThan(before + 3_000_000);
    const check = verifyLocalToken(token.token, audience);
    expect(check).toMatchObject({ ok: true, claims: { appid: clientId ?? "system" } });
  });

  it("counts the token requests it served", () => {
    expect(sim.status().requests["/metadata/identity/oauth2/token"]?.["200"]).toBeGreaterThanOrEqual(4);
  });
});

describe("token endpoint rules", () => {
  it("answers the availability probe (no Metadata header, no query) like IMDS: 400 with a JSON error", async () => {
    const res = await request(`${sim.url}/metadata/identity/oauth2/token`, { headers: { Accept: "application/json" } });
    expect(res.statusCode).toBe(400);
    expect(await res.body.json()).toEqual({
      error: "invalid_request",
      error_description: "Required metadata header not specified",
    });
  });

  it("returns the IMDS token shape and requires resource", async () => {
    const res = await request(
      `${sim.url}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent("https://eventhubs.azure.net")}&client_id=abc`,
      {
        headers: { Metadata: "true" },
      },
    );
    expect(res.statusCode).toBe(200);
    const body = (await res.body.json()) as Record<string, string>;
    expect(Object.keys(body).sort()).toEqual([
      "access_token",
      "client_id",
      "expires_in",
      "expires_on",
      "ext_expires_in",
      "not_before",
      "resource",
      "token_type",
    ]);
    expect(body).toMatchObject({
      expires_in: "3599",
      resource: "https://eventhubs.azure.net",
      token_type: "Bearer",
      client_id: "abc",
    });
    expect(Number(body.expires_on)).toBe(Number(body.not_before) + 3599);
    const missing = await request(`${sim.url}/metadata/identity/oauth2/token?api-version=2018-02-01`, {
      headers: { Metadata: "true" },
    });
    expect(missing.statusCode).toBe(400);
    await missing.body.dump();
  });
});
