// The managed-identity path end to end: the real ManagedIdentityCredential fetches a local token (pod-identity
// endpoint), the real producer puts it on $cbs over TLS, and the peer checks audience and signature.
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { spawn } from "node:child_process";
import { localTokenResponse } from "../../src/testbed/peers/local-tokens.js";
import { startEventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { entries, interleavedTransitions } from "./fixtures.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A pod-identity style token endpoint serving local tokens for the requested resource (or a fixed wrong one). */
async function tokenServer(audienceOverride?: string): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    requests.push(url.pathname);
    const resource = audienceOverride ?? url.searchParams.get("resource") ?? "";
    const clientId = url.searchParams.get("client_id");
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(localTokenResponse(resource, clientId ? { clientId } : {})));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`, requests };
}

function runChild(
  env: Record<string, string>,
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/eventhubs/mi-child.ts"], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe("eventhubs sink with a managed identity over TLS", () => {
  it("sends with a local managed-identity token whose audience the peer checks", async () => {
    const emulator = await startEventHubsEmulator({ hubName: "sef-mi", tls: true });
    cleanups.push(() => emulator.close());
    const tokens = await tokenServer();
    const records = interleavedTransitions(3);
    const env = {
      NODE_EXTRA_CA_CERTS: emulator.caCertPath!,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: tokens.url,
      SEF_TEST_HUB: "sef-mi",
      SEF_TEST_ENDPOINT: `amqps://localhost:${emulator.port}`,
    };
    const ok = await runChild(env, JSON.stringify(entries(records)));
    expect(ok.stdout.trim(), ok.stderr).toBe(JSON.stringify(records.map(() => ({ kind: "delivered" }))));
    expect(tokens.requests.length).toBeGreaterThan(0);
    expect(
      emulator
        .events()
        .map((e) => e.messageId)
        .sort(),
    ).toEqual(records.map((r) => r.RecordId).sort());
  });

  it("reopens after an idle close with the token the credential already holds (one token request, two connections)", async () => {
    const emulator = await startEventHubsEmulator({ hubName: "sef-mi", tls: true });
    cleanups.push(() => emulator.close());
    const tokens = await tokenServer();
    const records = interleavedTransitions(2);
    const env = {
      NODE_EXTRA_CA_CERTS: emulator.caCertPath!,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: tokens.url,
      SEF_TEST_HUB: "sef-mi",
      SEF_TEST_ENDPOINT: `amqps://localhost:${emulator.port}`,
      SEF_TEST_IDLE_CLOSE_MS: "200",
    };
    const twice = await runChild(env, JSON.stringify(entries(records)));
    expect(twice.stdout.trim(), twice.stderr).toBe(JSON.stringify(records.map(() => ({ kind: "delivered" }))));
    expect(emulator.stats.connectionsOpened).toBe(2);
    expect(emulator.events()).toHaveLength(2 * records.length);
    expect(tokens.requests).toHaveLength(1);
  });

  it("a token for another audience is refused: retryable, nothing stored", async () => {
    const emulator = await startEventHubsEmulator({ hubName: "sef-mi", tls: true });
    cleanups.push(() => emulator.close());
    const tokens = await tokenServer("https://management.azure.com");
    const env = {
      NODE_EXTRA_CA_CERTS: emulator.caCertPath!,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: tokens.url,
      SEF_TEST_HUB: "sef-mi",
      SEF_TEST_ENDPOINT: `amqps://localhost:${emulator.port}`,
    };
    const refused = await runChild(env, JSON.stringify(entries(interleavedTransitions(3))));
    const [result] = JSON.parse(refused.stdout.trim() || "[{}]") as Array<{ kind?: string; reason?: string }>;
    expect(result?.kind, refused.stderr).toBe("retry");
    expect(result?.reason).toContain("not authorized");
    expect(emulator.events()).toEqual([]);
  });
});
