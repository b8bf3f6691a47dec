// The IMDS client against a real local HTTP server: headers, proxy bypass, redirects, body cap, classification, rate.
import { describe, expect, it, afterEach } from "vitest";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ImdsClient } from "../../src/agent/imds/client.js";
import { maxTags, parseCompute, parseTags } from "../../src/agent/imds/document.js";
import { ImdsRequestError } from "../../src/agent/imds/errors.js";
import { systemClock } from "../../src/runtime/clock.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
const servers: Server[] = [];
const clients: ImdsClient[] = [];

async function serve(handler: Handler): Promise<{ url: string; requests: IncomingMessage[]; starts: number[] }> {
  const requests: IncomingMessage[] = [];
  const starts: number[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    starts.push(performance.now());
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, starts };
}

function client(url: string, over: Partial<ConstructorParameters<typeof ImdsClient>[0]> = {}) {
  const c = new ImdsClient({ imdsUrl: url, apiVersion: "2020-07-01", clock: systemClock, ...over });
  clients.push(c);
  return c;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
};

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  delete process.env.HTTP_PROXY;
  delete process.env.http_proxy;
});

describe("ImdsClient", () => {
  it("sends Metadata: true and the api-version, and parses the document", async () => {
    const peer = await serve((_req, res) => json(res, 200, { DocumentIncarnation: 2, Events: [] }));
    const fetched = await client(peer.url).getScheduledEvents();
    expect(fetched.document.DocumentIncarnation).toBe(2);
    expect(peer.requests[0]!.headers.metadata).toBe("true");
    expect(peer.requests[0]!.url).toBe("/metadata/scheduledevents?api-version=2020-07-01");
    expect(peer.requests[0]!.headers["x-forwarded-for"]).toBeUndefined();
  });

  it("ignores proxy environment variables", async () => {
    const proxy = await serve((_req, res) => json(res, 502, { error: "went through the proxy" }));
    const peer = await serve((_req, res) => json(res, 200, { DocumentIncarnation: 1, Events: [] }));
    process.env.HTTP_PROXY = proxy.url;
    process.env.http_proxy = proxy.url;
    await client(peer.url).getScheduledEvents();
    expect(proxy.requests.length).toBe(0);
    expect(peer.requests.length).toBe(1);
  });

  it("does not follow redirects", async () => {
    const elsewhere = await serve((_req, res) => json(res, 200, { DocumentIncarnation: 1, Events: [] }));
    const peer = await serve((_req, res) => {
      res.writeHead(302, { Location: `${elsewhere.url}/metadata/scheduledevents` });
      res.end();
    });
    await expect(client(peer.url).getScheduledEvents()).rejects.toMatchObject({ kind: "http_error", status: 302 });
    expect(elsewhere.requests.length).toBe(0);
  });

  it("refuses a body over the cap, declared or streamed", async () => {
    const big = JSON.stringify({ DocumentIncarnation: 1, Events: [], pad: "x".repeat(200_000) });
    const declared = await serve((_req, res) => json(res, 200, big));
    await expect(client(declared.url, { maxBodyBytes: 100_000 }).getScheduledEvents()).rejects.toMatchObject({
      kind: "too_large",
    });
    const chunked = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      for (let i = 0; i < 20; i++) res.write("x".repeat(10_000));
      res.end();
    });
    await expect(client(chunked.url, { maxBodyBytes: 100_000 }).getScheduledEvents()).rejects.toMatchObject({
      kind: "too_large",
    });
  });

  it("classifies 400 as bad_request without retrying it", async () => {
    const peer = await serve((_req, res) => json(res, 400, { error: "Bad request. api-version is invalid" }));
    const err = (await client(peer.url)
      .getScheduledEvents()
      .catch((e: unknown) => e)) as ImdsRequestError;
    expect(err).toBeInstanceOf(ImdsRequestError);
    expect(err.kind).toBe("bad_request");
    expect(peer.requests.length).toBe(1);
  });

  it("sends each call once: a 500, 410 or 429 fails that call at once (the poll stage owns retries), the next call is answered", async () => {
    const answers = [500, 410, 429];
    const peer = await serve((_req, res) => {
      const status = answers.shift();
      if (status) json(res, status, { error: "transient" });
      else json(res, 200, { DocumentIncarnation: 3, Events: [] });
    });
    const c = client(peer.url);
    for (const kind of ["http_error", "http_error", "throttled"]) {
      const before = peer.requests.length;
      await expect(c.getScheduledEvents()).rejects.toMatchObject({ kind });
      expect(peer.requests.length).toBe(before + 1);
    }
    expect((await c.getScheduledEvents()).document.DocumentIncarnation).toBe(3);
    expect(peer.requests.length).toBe(4);
  });

  it("reports a throttle with its Retry-After hint", async () => {
    const peer = await serve((_req, res) => json(res, 429, { error: "Too many requests" }, { "Retry-After": "3" }));
    await expect(client(peer.url).getScheduledEvents()).rejects.toMatchObject({
      kind: "throttled",
      retryAfterMs: 3000,
    });
    expect(peer.requests.length).toBe(1);
  });

  it("classifies malformed JSON and a connection reset", async () => {
    const malformed = await serve((_req, res) => json(res, 200, '{"DocumentIncarnation": 1, "Events": ['));
    await expect(client(malformed.url).getScheduledEvents()).rejects.toMatchObject({ kind: "malformed" });
    const reset = await serve((req) => req.socket.destroy());
    await expect(client(reset.url).getScheduledEvents()).rejects.toMatchObject({ kind: "network_error" });
  });

  it("times out a request that never answers", async () => {
    const silent = await serve(() => undefined);
    await expect(client(silent.url, { firstCallTimeoutMs: 200 }).getScheduledEvents()).rejects.toMatchObject({
      kind: "timeout",
    });
  });

  it("never starts more than 5 requests in any second", async () => {
    const peer = await serve((_req, res) => json(res, 200, { DocumentIncarnation: 1, Events: [] }));
    const c = client(peer.url);
    await Promise.all(Array.from({ length: 12 }, () => c.getScheduledEvents()));
    // Seen at the peer, a window can look shorter by how late its first request arrived (a loaded machine delays an
    // arrival by tens of ms: 69 ms seen in CI beside two soaks); the limiter's exact 1000 ms window is asserted on a fake
    // clock in rate-limiter.test.ts. A limiter out of the path lets all 12 start within a few ms.
    const arrivalJitterMs = 150;
    for (let i = 5; i < peer.starts.length; i++)
      expect(peer.starts[i]! - peer.starts[i - 5]!).toBeGreaterThanOrEqual(1000 - arrivalJitterMs);
    expect(peer.starts[10]! - peer.starts[0]!).toBeGreaterThanOrEqual(2000 - arrivalJitterMs);
  });

  it("reads the VM's tags from tagsList, else from the tags string; none is {}", () => {
    expect(
      parseTags(
        [
          { name: "env", value: "prod" },
          { name: "owner", value: "a;b:c" },
        ],
        "env:prod;owner:a;b:c",
      ),
    ).toEqual({ env: "prod", owner: "a;b:c" });
    expect(parseTags(undefined, "env:prod;team:web:blue;flag")).toEqual({ env: "prod", team: "web:blue", flag: "" });
    expect(
      parseTags([{ name: "env", value: 1 }, "x", null, { name: "a", value: "1" }, { name: "a", value: "2" }], ""),
    ).toEqual({ a: "1" });
    expect(parseTags([], "env:prod")).toEqual({});
    expect(parseTags(undefined, undefined)).toEqual({});
    expect(parseTags(undefined, "")).toEqual({});
    expect(
      Object.keys(
        parseTags(
          Array.from({ length: 60 }, (_, i) => ({ name: `t${i}`, value: "v" })),
          "",
        ),
      ),
    ).toHaveLength(maxTags);
    expect(
      parseCompute(JSON.stringify({ name: "vm1", tagsList: [{ name: "env", value: "prod" }], tags: "env:prod" })).Tags,
    ).toEqual({ env: "prod" });
  });

  it("reads compute into the VM identity and posts approvals", async () => {
    const peer = await serve((req, res) => {
      if (req.method === "POST") {
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => json(res, 200, { received: JSON.parse(body) }));
        return;
      }
      json(res, 200, { name: "vm1", vmId: "id1", location: "westeurope", zone: "2", resourceGroupName: "rg" });
    });
    const c = client(peer.url);
    expect(await c.getCompute()).toMatchObject({
      VmName: "vm1",
      VmId: "id1",
      Location: "westeurope",
      Zone: "2",
      ResourceGroup: "rg",
      VmScaleSetName: "",
      Tags: {},
    });
    const posted = await c.postStartRequests(["E1"]);
    expect(posted.status).toBe(200);
    expect(JSON.parse(posted.body)).toEqual({ received: { StartRequests: [{ EventId: "E1" }] } });
  });
});
