import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createWebhookSink, type WebhookSink } from "../../src/agent/sinks/webhook/sink.js";
import { webhookSettingsSchema } from "../../src/agent/sinks/webhook/settings.js";
import { findSinkFactory, parseSinkSpec } from "../../src/agent/sinks/registry.js";
import type { SendOutcomes } from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { drainThroughLedger } from "../helpers/ledger-drain.js";
import { createLogger, silentLogger } from "../../src/agent/observability/logger.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { transition } from "../actions/fixtures.js";

interface Received {
  headers: IncomingMessage["headers"];
  raw: Buffer;
  records: { RecordId: string }[];
}
type Responder = (req: Received, res: ServerResponse) => void;

const servers: Server[] = [];
const sinks: WebhookSink[] = [];
afterEach(async () => {
  await Promise.all(sinks.splice(0).map((s) => s.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A local webhook receiver; each request is answered by the next responder (the last one repeats). */
async function startReceiver(...responders: Responder[]): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(parts);
      const r: Received = {
        headers: req.headers,
        raw,
        records: JSON.parse(raw.toString("utf8")) as { RecordId: string }[],
      };
      received.push(r);
      const responder = responders[Math.min(received.length - 1, responders.length - 1)] ?? ok;
      responder(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ingest`, received };
}

const ok: Responder = (_r, res) => res.writeHead(200).end("{}");
const status =
  (code: number, headers: Record<string, string> = {}, body = ""): Responder =>
  (_r, res) =>
    res.writeHead(code, headers).end(body);
const reset: Responder = (_r, res) => res.socket?.destroy();

function entries(count: number, startSeq = 1): OutboxEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const record = transition({ EventId: `evt-${startSeq + i}`, RecordId: "" });
    return { seq: startSeq + i, record, json: JSON.stringify(record) };
  });
}

function sink(
  url: string,
  settings: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = {},
  clock?: FakeClock,
  logger = silentLogger(),
): WebhookSink {
  const s = createWebhookSink({
    argument: undefined,
    settings: webhookSettingsSchema.parse({ url, ...settings }),
    logger,
    agentVersion: "0.1.0",
    env,
    ...(clock ? { clock } : {}),
  });
  sinks.push(s);
  return s;
}

const signal = new AbortController().signal;

/** Outcomes in short: "delivered", "retry:REASON[@MS]", "rejected:REASON". */
function brief(outcomes: SendOutcomes): string[] {
  return outcomes.map((o) =>
    o.kind === "delivered"
      ? "delivered"
      : o.kind === "retry"
        ? `retry:${o.reason}${o.afterMs !== undefined ? `@${o.afterMs}` : ""}`
        : `rejected:${o.reason}`,
  );
}
const times = (n: number, text: string): string[] => Array.from({ length: n }, () => text);

describe("webhook sink", () => {
  it("POSTs a JSON array with env and literal headers and a verifiable HMAC signature over timestamp and body", async () => {
    const receiver = await startReceiver(ok);
    const env = { SEF_WEBHOOK_TOKEN: "Bearer t0ken-value", SEF_WEBHOOK_SECRET: "s3cret" };
    const clock = new FakeClock(Date.UTC(2026, 11, 7, 13, 0, 0, 999));
    const s = sink(
      receiver.url,
      {
        headers: { Authorization: { fromEnv: "SEF_WEBHOOK_TOKEN" }, "X-Team": "sre" },
        signature: { secretEnv: "SEF_WEBHOOK_SECRET" },
      },
      env,
      clock,
    );
    const batch = entries(3);
    expect(brief(await s.send(batch, signal))).toEqual(times(batch.length, "delivered"));
    expect(receiver.received).toHaveLength(1);
    const req = receiver.received[0]!;
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["authorization"]).toBe("Bearer t0ken-value");
    expect(req.headers["x-team"]).toBe("sre");
    expect(req.records.map((r) => r.RecordId)).toEqual(batch.map((e) => e.record.RecordId));
    expect(req.raw.toString("utf8")).toBe(`[${batch.map((e) => e.json).join(",")}]`);
    const timestamp = String(Date.UTC(2026, 11, 7, 13, 0, 0) / 1000);
    expect(req.headers["x-sef-timestamp"]).toBe(timestamp);
    const expected = `sha256=${createHmac("sha256", "s3cret")
      .update(`${timestamp}.${req.raw.toString("utf8")}`)
      .digest("hex")}`;
    expect(req.headers["x-sef-signature"]).toBe(expected);
    // The body alone, or the body with another time, does not verify: a replay cannot move the timestamp.
    expect(req.headers["x-sef-signature"]).not.toBe(
      `sha256=${createHmac("sha256", "s3cret").update(req.raw).digest("hex")}`,
    );
  });

  it("signs each attempt with its own time", async () => {
    const receiver = await startReceiver(status(500), ok);
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const s = sink(receiver.url, { signature: { secretEnv: "K", timestampHeader: "X-Sent-At" } }, { K: "k" }, clock);
    await s.send(entries(1), signal);
    clock.jump(61_000);
    await s.send(entries(1), signal);
    const sentAt = receiver.received.map((r) => r.headers["x-sent-at"]);
    expect(sentAt).toEqual([String(Date.UTC(2026, 0, 1) / 1000), String(Date.UTC(2026, 0, 1) / 1000 + 61)]);
    expect(receiver.received[0]!.headers["x-sef-signature"]).not.toBe(receiver.received[1]!.headers["x-sef-signature"]);
  });

  it("uses a custom signature header", async () => {
    const receiver = await startReceiver(ok);
    const s = sink(receiver.url, { signature: { secretEnv: "K", header: "X-Hub-Signature-256" } }, { K: "k" });
    await s.send(entries(1), signal);
    expect(receiver.received[0]!.headers["x-hub-signature-256"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(receiver.received[0]!.headers["x-sef-signature"]).toBeUndefined();
  });

  it("retries a 500, then succeeds", async () => {
    const receiver = await startReceiver(status(500, {}, "boom"), ok);
    const s = sink(receiver.url);
    const first = await s.send(entries(2), signal);
    expect(brief(first)).toEqual(times(2, "retry:HTTP 500: boom"));
    expect(brief(await s.send(entries(2), signal))).toEqual(times(2, "delivered"));
    expect(receiver.received).toHaveLength(2);
  });

  it("passes Retry-After (seconds or HTTP date) on 429 and 503 as retryAfterMs", async () => {
    const clock = new FakeClock(Date.UTC(2024, 0, 1, 12, 0, 0));
    const receiver = await startReceiver(
      status(429, { "Retry-After": "7" }),
      status(503, { "Retry-After": new Date(Date.UTC(2024, 0, 1, 12, 0, 30)).toUTCString() }),
      status(408),
    );
    const s = sink(receiver.url, {}, {}, clock);
    expect(await s.send(entries(1), signal)).toEqual([{ kind: "retry", afterMs: 7000, reason: "HTTP 429" }]);
    expect(await s.send(entries(1), signal)).toMatchObject([{ kind: "retry", afterMs: 30_000 }]);
    const third = await s.send(entries(1), signal);
    expect(third[0]!.kind).toBe("retry");
    expect(third[0]).not.toHaveProperty("afterMs");
  });

  it("dead-letters the batch on 400 with the status and a truncated body", async () => {
    const receiver = await startReceiver(status(400, {}, `{"error":"bad field ${"y".repeat(1000)}"}`));
    const result = await sink(receiver.url).send(entries(2), signal);
    expect(result.map((o) => o.kind)).toEqual(["rejected", "rejected"]);
    const reason = (result[0] as { reason: string }).reason;
    expect(reason.startsWith('HTTP 400: {"error":"bad field yyy')).toBe(true);
    expect(reason.length).toBeLessThan(400);
  });

  it("keeps records on 401/403 (credentials can be fixed)", async () => {
    const receiver = await startReceiver(status(401), status(403));
    const s = sink(receiver.url);
    expect((await s.send(entries(1), signal))[0]!.kind).toBe("retry");
    expect((await s.send(entries(1), signal))[0]!.kind).toBe("retry");
  });

  it("treats a connection reset and a timeout as retryable", async () => {
    const receiver = await startReceiver(reset);
    const r1 = await sink(receiver.url).send(entries(1), signal);
    expect(r1[0]!.kind).toBe("retry");
    expect((r1[0] as { reason: string }).reason).toContain("request to the webhook failed");

    const hanging = await startReceiver(() => undefined);
    const started = Date.now();
    const r2 = await sink(hanging.url, { timeoutMs: 200 }).send(entries(1), signal);
    expect(r2[0]!.kind).toBe("retry");
    expect(Date.now() - started).toBeLessThan(5000);
    for (const s of servers) s.closeAllConnections();
  });

  it("splits by maxBatchBytes and maxBatchRecords, each body within the limits", async () => {
    const receiver = await startReceiver(ok);
    const batch = entries(10);
    const recordBytes = Buffer.byteLength(batch[0]!.json);
    const maxBatchBytes = Math.max(1024, recordBytes * 3 + 10);
    const s = sink(receiver.url, { maxBatchBytes, maxBatchRecords: 500 });
    expect(brief(await s.send(batch, signal))).toEqual(times(batch.length, "delivered"));
    expect(receiver.received.length).toBeGreaterThan(1);
    for (const r of receiver.received) expect(r.raw.length).toBeLessThanOrEqual(maxBatchBytes);
    expect(receiver.received.flatMap((r) => r.records.map((x) => x.RecordId))).toEqual(
      batch.map((e) => e.record.RecordId),
    );

    const byCount = await startReceiver(ok);
    const s2 = sink(byCount.url, { maxBatchRecords: 4 });
    expect(s2.maxBatchRecords).toBe(4);
    await s2.send(batch, signal);
    expect(byCount.received.map((r) => r.records.length)).toEqual([4, 4, 2]);
  });

  it("reports the records delivered before a failure as delivered, the rest as retry", async () => {
    const receiver = await startReceiver(ok, status(503));
    const s = sink(receiver.url, { maxBatchRecords: 4 });
    expect(brief(await s.send(entries(10), signal))).toEqual([...times(4, "delivered"), ...times(6, "retry:HTTP 503")]);
  });

  it("through the real drainer: after a 503 part-way, the records the endpoint took are never POSTed again", async () => {
    let calls = 0;
    const receiver = await startReceiver((_r, res) =>
      ++calls === 2 ? res.writeHead(503).end() : res.writeHead(200).end(),
    );
    const all = entries(10);
    const outcome = await drainThroughLedger(sink(receiver.url, { maxBatchRecords: 4 }), all);
    expect(outcome.rejected).toEqual([]);
    const posted = receiver.received.flatMap((r) => r.records.map((x) => (x as { EventId?: string }).EventId));
    expect(posted.filter((id) => id === "evt-1")).toHaveLength(1);
    expect(new Set(posted).size).toBe(10);
    expect(posted).toHaveLength(14); // the 4 refused with the 503 went twice, nothing else
  });

  it("on a 400 after part of the batch was delivered, dead-letters exactly the rest", async () => {
    const receiver = await startReceiver(ok, status(400, {}, "nope"));
    const result = await sink(receiver.url, { maxBatchRecords: 4 }).send(entries(10), signal);
    expect(brief(result)).toEqual([...times(4, "delivered"), ...times(6, "rejected:HTTP 400: nope")]);
  });

  it("on 413 splits the body, and rejects a record the server refuses alone", async () => {
    const batch = entries(4);
    const big = transition({ EventId: "big", Description: "d".repeat(4000) });
    batch[2] = { seq: 3, record: big, json: JSON.stringify(big) };
    const limit = 3000;
    const receiver = await startReceiver((r, res) =>
      r.raw.length > limit ? res.writeHead(413).end("too large") : res.writeHead(200).end(),
    );
    const result = await sink(receiver.url).send(batch, signal);
    expect(brief(result)).toEqual(["delivered", "delivered", "rejected:HTTP 413: too large", "delivered"]);
    const delivered = receiver.received
      .filter((r) => r.raw.length <= limit)
      .flatMap((r) => r.records.map((x) => x.RecordId));
    expect(delivered).toEqual([batch[0], batch[1], batch[3]].map((e) => e!.record.RecordId));
  });

  it("rejects a record larger than maxBatchBytes without sending it", async () => {
    const receiver = await startReceiver(ok);
    const batch = entries(3);
    const big = transition({ EventId: "big", Description: "d".repeat(3000) });
    batch[1] = { seq: 2, record: big, json: JSON.stringify(big) };
    const result = await sink(receiver.url, { maxBatchBytes: 2048 }).send(batch, signal);
    expect(brief(result)).toEqual(["delivered", expect.stringMatching(/^rejected:record is \d+ bytes/), "delivered"]);
    expect(receiver.received.flatMap((r) => r.records.map((x) => x.RecordId))).toEqual([
      batch[0]!.record.RecordId,
      batch[2]!.record.RecordId,
    ]);
  });

  it("keeps a rejected record rejected when a later send fails", async () => {
    const receiver = await startReceiver(ok, status(500));
    const batch = entries(3);
    const big = transition({ EventId: "big", Description: "d".repeat(3000) });
    batch[1] = { seq: 2, record: big, json: JSON.stringify(big) };
    const result = await sink(receiver.url, { maxBatchBytes: 2048 }).send(batch, signal);
    expect(brief(result)).toEqual(["delivered", expect.stringMatching(/^rejected:/), "retry:HTTP 500"]);
  });

  it("never logs header values or the secret", async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString("utf8"));
        cb();
      },
    });
    const logger = createLogger({ level: "debug", destination });
    const receiver = await startReceiver(status(500, {}, "upstream down"), reset, ok);
    const env = { TOKEN: "tok-VERY-SECRET-1", SECRET: "hmac-VERY-SECRET-2" };
    const s = sink(
      receiver.url,
      { headers: { "X-Api-Key": { fromEnv: "TOKEN" } }, signature: { secretEnv: "SECRET" } },
      env,
      undefined,
      logger,
    );
    await s.send(entries(1), signal);
    await s.send(entries(1), signal);
    await s.send(entries(1), signal);
    const text = lines.join("");
    expect(text).toContain("webhook send failed");
    expect(text).not.toContain("VERY-SECRET");
    expect(text).not.toContain("sha256=");
  });

  it("fails to start, naming the variable but not values, when an env variable is missing", () => {
    const settings = webhookSettingsSchema.parse({
      url: "http://127.0.0.1:1/x",
      headers: { Authorization: { fromEnv: "NOPE" } },
    });
    expect(() =>
      createWebhookSink({ argument: undefined, settings, logger: silentLogger(), agentVersion: "0", env: {} }),
    ).toThrow(/header "Authorization": environment variable NOPE is not set/);
    const signed = webhookSettingsSchema.parse({ url: "http://127.0.0.1:1/x", signature: { secretEnv: "NOSECRET" } });
    expect(() =>
      createWebhookSink({ argument: undefined, settings: signed, logger: silentLogger(), agentVersion: "0", env: {} }),
    ).toThrow(/NOSECRET/);
    expect(() =>
      createWebhookSink({
        argument: undefined,
        settings: webhookSettingsSchema.parse({}),
        logger: silentLogger(),
        agentVersion: "0",
      }),
    ).toThrow(/needs a URL/);
  });

  it("is registered as --sink webhook[:URL] with defaults in its settings schema", async () => {
    expect(parseSinkSpec("webhook")).toEqual({ type: "webhook", argument: undefined });
    expect(parseSinkSpec("webhook:http://127.0.0.1:9/x")).toEqual({
      type: "webhook",
      argument: "http://127.0.0.1:9/x",
    });
    const factory = findSinkFactory("webhook");
    const settings = factory.settingsSchema.parse({ url: "http://127.0.0.1:9/x" });
    expect(settings).toEqual({
      url: "http://127.0.0.1:9/x",
      headers: {},
      timeoutMs: 10_000,
      maxBatchRecords: 500,
      maxBatchBytes: 1_048_576,
      lingerMs: 0,
      allowPlainHttp: false,
    });
    expect(factory.settingsSchema.safeParse({ url: "ftp://x/" }).success).toBe(false);
    expect(factory.settingsSchema.safeParse({ url: "http://x/", header: {} }).success).toBe(false);
    const receiver = await startReceiver(ok);
    const created = (await factory.create({
      argument: receiver.url,
      settings,
      context: { logger: silentLogger(), dataDir: "/tmp", agentVersion: "0" },
    })) as WebhookSink;
    sinks.push(created);
    expect(created.name).toBe("webhook");
    expect(await created.send(entries(1), signal)).toEqual([{ kind: "delivered" }]);
    expect(receiver.received).toHaveLength(1);
  });
});
