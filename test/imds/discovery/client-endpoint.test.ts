// The IMDS client with a discovered endpoint: the base URL is read per request, refused connections and answers
// are reported back, and without an endpoint a poll fails as no_endpoint without sending anything.
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ImdsClient, type ImdsEndpointSource } from "../../../src/agent/imds/client.js";
import { ImdsRequestError } from "../../../src/agent/imds/errors.js";
import { systemClock } from "../../../src/runtime/clock.js";

const servers: Server[] = [];
const clients: ImdsClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function imds(): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits += 1;
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ DocumentIncarnation: 1, Events: [] }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

function endpointAt(current: { url: string } | { error: string }) {
  const calls: string[] = [];
  const endpoint: ImdsEndpointSource & { target: { url: string } | { error: string } } = {
    target: current,
    current: () => endpoint.target,
    connectionFailed: () => calls.push("failed"),
    answered: () => calls.push("answered"),
  };
  return { endpoint, calls };
}

function client(endpoint: ImdsEndpointSource): ImdsClient {
  const c = new ImdsClient({ imdsUrl: "http://127.0.0.1:1", endpoint, apiVersion: "2020-07-01", clock: systemClock });
  clients.push(c);
  return c;
}

describe("ImdsClient with a discovered endpoint", () => {
  it("asks the endpoint for the base URL on every request and reports answers and refused connections", async () => {
    const sim = await imds();
    const closedPort = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const { endpoint, calls } = endpointAt({ url: `http://127.0.0.1:${closedPort}` });
    const c = client(endpoint);
    await expect(c.getScheduledEvents()).rejects.toMatchObject({ kind: "network_error" });
    expect(calls).toEqual(["failed"]);
    endpoint.target = { url: sim.url };
    await expect(c.getScheduledEvents()).resolves.toMatchObject({ document: { DocumentIncarnation: 1 } });
    expect(calls).toEqual(["failed", "answered"]);
    expect(sim.hits()).toBe(1);
  });

  it("fails as no_endpoint, sending nothing, while no endpoint is known", async () => {
    const { endpoint, calls } = endpointAt({ error: "no IMDS endpoint found (link-local: not-answering)" });
    const c = new ImdsClient({ imdsUrl: "http://127.0.0.1:1", endpoint, apiVersion: "2020-07-01", clock: systemClock });
    clients.push(c);
    const err = await c.getScheduledEvents().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImdsRequestError);
    expect(err).toMatchObject({ kind: "no_endpoint", message: expect.stringContaining("link-local: not-answering") });
    expect(calls).toEqual([]);
  });
});
