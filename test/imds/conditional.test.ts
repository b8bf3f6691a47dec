// Conditional polls against real local HTTP servers: If-None-Match with the last ETag, 304 → the last document, an
// unchanged body → the last parsed document, every Nth poll unconditional, and the simulator's side of it.
import { afterEach, describe, expect, it } from "vitest";
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ImdsClient } from "../../src/agent/imds/client.js";
import { systemClock } from "../../src/runtime/clock.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { waitFor } from "../helpers/wait.js";

const servers: Server[] = [];
const clients: ImdsClient[] = [];
const simulators: Simulator[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  await Promise.all(simulators.splice(0).map((s) => s.close()));
});

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

function client(url: string, over: Partial<ConstructorParameters<typeof ImdsClient>[0]> = {}): ImdsClient {
  const c = new ImdsClient({ imdsUrl: url, apiVersion: "2020-07-01", clock: systemClock, ...over });
  clients.push(c);
  return c;
}

/** A peer that tags each document with its incarnation and answers 304 to a matching If-None-Match. */
function conditionalPeer(state: { incarnation: number }) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const etag = `"doc-${state.incarnation}"`;
    if (req.headers["if-none-match"] === etag) {
      res.writeHead(304, { ETag: etag });
      res.end();
      return;
    }
    res.writeHead(200, { "Content-Type": "application/json", ETag: etag });
    res.end(JSON.stringify({ DocumentIncarnation: state.incarnation, Events: [] }));
  };
}

describe("conditional polls (ImdsClient)", () => {
  it("sends the last ETag as If-None-Match and hands back the same document on 304, counted", async () => {
    const state = { incarnation: 1 };
    const peer = await serve(conditionalPeer(state));
    const c = client(peer.url);
    const first = await c.getScheduledEvents();
    const second = await c.getScheduledEvents();
    expect(peer.requests[0]!.headers["if-none-match"]).toBeUndefined();
    expect(peer.requests[1]!.headers["if-none-match"]).toBe('"doc-1"');
    expect(second.notModified).toBe(true);
    expect(second.document).toBe(first.document);
    expect(c.conditionalCounts.notModified).toBe(1);
    state.incarnation = 2;
    const third = await c.getScheduledEvents();
    expect(third.notModified).toBe(false);
    expect(third.document.DocumentIncarnation).toBe(2);
    const fourth = await c.getScheduledEvents();
    expect(peer.requests[3]!.headers["if-none-match"]).toBe('"doc-2"');
    expect(fourth.document).toBe(third.document);
  });

  it("sends no If-None-Match to a service that gives no ETag, and parses an unchanged body only once", async () => {
    const peer = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ DocumentIncarnation: 4, Events: [] }));
    });
    const c = client(peer.url);
    const first = await c.getScheduledEvents();
    const second = await c.getScheduledEvents();
    expect(peer.requests.map((r) => r.headers["if-none-match"])).toEqual([undefined, undefined]);
    expect(second.notModified).toBe(false);
    expect(second.document).toBe(first.document);
    expect(c.conditionalCounts).toEqual({ notModified: 0, unchangedBodies: 1 });
  });

  it("sends every Nth poll without If-None-Match", async () => {
    const peer = await serve(conditionalPeer({ incarnation: 7 }));
    const c = client(peer.url, { unconditionalEvery: 3 });
    for (let i = 0; i < 7; i++) await c.getScheduledEvents();
    const sent = peer.requests.map((r) => r.headers["if-none-match"] !== undefined);
    expect(sent).toEqual([false, true, true, false, true, true, false]);
  });

  it("ends requests in flight when the caller's signal aborts, each request once, the signal watched once", async () => {
    const peer = await serve(() => undefined); // never answers
    const c = client(peer.url);
    const stop = new AbortController();
    let listeners = 0;
    const add = stop.signal.addEventListener.bind(stop.signal);
    stop.signal.addEventListener = ((...args: Parameters<AbortSignal["addEventListener"]>) => {
      listeners += 1;
      add(...args);
    }) as AbortSignal["addEventListener"];
    const polls = [c.getScheduledEvents(stop.signal), c.getScheduledEvents(stop.signal)];
    await waitFor("both requests at the peer", () => peer.requests.length === 2);
    const startedMs = performance.now();
    stop.abort(new Error("stopping"));
    const outcomes = await Promise.allSettled(polls);
    expect(performance.now() - startedMs).toBeLessThan(1000);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(listeners).toBe(1);
  });

  it("takes a 304 it did not ask for as an error, never as a document", async () => {
    const peer = await serve((_req, res) => {
      res.writeHead(304);
      res.end();
    });
    await expect(client(peer.url).getScheduledEvents()).rejects.toMatchObject({ kind: "http_error", status: 304 });
  });
});

/** One GET of the simulator's scheduled events with raw node:http (no client logic in between). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; etag: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/metadata/scheduledevents?api-version=2020-07-01`,
      { headers: { Metadata: "true", ...headers } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, etag: res.headers.etag, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("conditional polls (simulator)", () => {
  it("tags every document, answers 304 to a matching If-None-Match and 200 to everyone else", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    simulators.push(sim);
    const plain = await rawGet(sim.url, {});
    expect(plain.status).toBe(200);
    expect(plain.etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await rawGet(sim.url, {});
    expect(again).toEqual(plain);
    const matching = await rawGet(sim.url, { "If-None-Match": plain.etag! });
    expect(matching).toEqual({ status: 304, etag: plain.etag, body: "" });
    expect(await rawGet(sim.url, { "If-None-Match": `W/${plain.etag!}, "other"` })).toMatchObject({ status: 304 });
    expect(await rawGet(sim.url, { "If-None-Match": '"something-else"' })).toMatchObject({
      status: 200,
      etag: plain.etag,
    });

    sim.setEvents([{ EventId: "0c3b6a52-8f0e-4b8a-9d4e-2f6c1a7e9b31", EventType: "Reboot", Resources: ["WestNO_0"] }]);
    const changed = await rawGet(sim.url, { "If-None-Match": plain.etag! });
    expect(changed.status).toBe(200);
    expect(changed.etag).not.toBe(plain.etag);
    expect(JSON.parse(changed.body).Events).toHaveLength(1);
    expect(sim.status().requests["/metadata/scheduledevents"]).toMatchObject({ "200": 4, "304": 2 });
  });

  it("lets the agent's client poll it conditionally and still see every change", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    simulators.push(sim);
    const c = client(sim.url);
    const first = await c.getScheduledEvents();
    expect((await c.getScheduledEvents()).notModified).toBe(true);
    sim.setEvents([{ EventId: "0c3b6a52-8f0e-4b8a-9d4e-2f6c1a7e9b31", EventType: "Reboot", Resources: ["WestNO_0"] }]);
    const changed = await c.getScheduledEvents();
    expect(changed.notModified).toBe(false);
    expect(changed.document.DocumentIncarnation).toBeGreaterThan(first.document.DocumentIncarnation);
    expect(changed.document.Events.map((e) => e.EventId)).toEqual(["0c3b6a52-8f0e-4b8a-9d4e-2f6c1a7e9b31"]);
    expect((await c.getScheduledEvents()).notModified).toBe(true);
    expect(c.conditionalCounts.notModified).toBe(2);
  });
});
