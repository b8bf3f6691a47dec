// Redirect policy of the webhook sink against real node:http targets: 307/308 to the same origin are followed
// (method and body kept, at most 3 hops); any other redirect is retryable with a clear log line, never dead-lettered.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createWebhookSink, type WebhookSink } from "../../src/agent/sinks/webhook/sink.js";
import { webhookSettingsSchema } from "../../src/agent/sinks/webhook/settings.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { createLogger } from "../../src/agent/observability/logger.js";
import { transition } from "../actions/fixtures.js";

interface Hit {
  method: string;
  path: string;
  body: string;
}

const servers: Server[] = [];
const sinks: WebhookSink[] = [];
afterEach(async () => {
  await Promise.all(sinks.splice(0).map((s) => s.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A target answering by path: `redirects[path]` = [status, Location]; anything else 200. */
async function target(redirects: Record<string, [number, string]>): Promise<{ base: string; hits: Hit[] }> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      hits.push({ method: req.method ?? "", path: req.url ?? "", body });
      const redirect = redirects[req.url ?? ""];
      if (redirect) res.writeHead(redirect[0], { location: redirect[1] }).end();
      else res.writeHead(200).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

function sinkFor(url: string): { sink: WebhookSink; logs: () => string } {
  let logs = "";
  const stream = new Writable({ write: (chunk: Buffer, _e, cb) => ((logs += chunk.toString()), cb()) });
  const sink = createWebhookSink({
    argument: undefined,
    settings: webhookSettingsSchema.parse({ url }),
    logger: createLogger({ level: "debug", destination: stream }),
    agentVersion: "0.1.0",
  });
  sinks.push(sink);
  return { sink, logs: () => logs };
}

function entries(count: number): OutboxEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const record = transition({ EventId: `evt-${i + 1}`, RecordId: "" });
    return { seq: i + 1, record, json: JSON.stringify(record) };
  });
}

const signal = new AbortController().signal;

describe("webhook redirects", () => {
  it("follows 307 and 308 within the same origin, keeping the method and body", async () => {
    const t = await target({ "/old": [307, "/moved"], "/moved": [308, "/final"] });
    const { sink } = sinkFor(`${t.base}/old`);
    expect((await sink.send(entries(2), signal)).map((o) => o.kind)).toEqual(["delivered", "delivered"]);
    expect(t.hits.map((h) => h.path)).toEqual(["/old", "/moved", "/final"]);
    expect(new Set(t.hits.map((h) => h.method))).toEqual(new Set(["POST"]));
    expect(new Set(t.hits.map((h) => h.body)).size).toBe(1);
    expect(JSON.parse(t.hits[2]!.body)).toHaveLength(2);
  });

  it("retries (never dead-letters) a 302, a 307 to another origin and a redirect loop, with a clear log line", async () => {
    const other = await target({});
    const t = await target({
      "/found": [302, "/elsewhere"],
      "/away": [307, `${other.base}/in`],
      "/loop": [307, "/loop"],
    });
    for (const [path, requests] of [
      ["/found", 1],
      ["/away", 1],
      ["/loop", 4],
    ] as const) {
      t.hits.length = 0;
      const { sink, logs } = sinkFor(`${t.base}${path}`);
      const result = (await sink.send(entries(1), signal))[0]!;
      expect(result.kind, path).toBe("retry");
      expect(result.kind === "retry" && result.reason).toMatch(/redirect not followed/);
      expect(t.hits, path).toHaveLength(requests);
      expect(logs()).toContain("webhook answered a redirect that is not followed");
    }
    expect(other.hits).toHaveLength(0);
  });
});
