// The local Logs Ingestion peer answers like the service: 1 MB before and after gzip (413), token, rule and stream
// errors, silent drops counted for tests, and per-rule limits (429 + Retry-After) over a sliding minute.
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { mintLocalToken } from "../../src/testbed/peers/local-tokens.js";
import {
  azureRuleLimits,
  keepDeclaredColumns,
  RuleWindow,
  startLogsIngestionEmulator,
  type LogsIngestionEmulator,
  type LogsIngestionEmulatorOptions,
} from "../../src/testbed/peers/logs-ingestion/index.js";
import { transitionRecord } from "./helpers.js";

const peers: LogsIngestionEmulator[] = [];
afterEach(async () => {
  await Promise.all(peers.splice(0).map((p) => p.close()));
});

async function peer(options: LogsIngestionEmulatorOptions = {}): Promise<LogsIngestionEmulator> {
  const started = await startLogsIngestionEmulator(options);
  peers.push(started);
  return started;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  error?: { code: string; message: string };
}

async function post(
  to: LogsIngestionEmulator,
  body: Buffer | string,
  options: {
    gzip?: boolean;
    token?: string | null;
    ruleId?: string;
    stream?: string;
    path?: string;
    method?: string;
  } = {},
): Promise<Answer> {
  const token = options.token === undefined ? mintLocalToken("https://monitor.azure.com").token : options.token;
  const path =
    options.path ??
    `/dataCollectionRules/${options.ruleId ?? to.ruleId}/streams/${options.stream ?? to.streamName}?api-version=2023-01-01`;
  const payload = options.gzip ? gzipSync(body) : Buffer.from(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${to.endpoint}${path}`,
      {
        method: options.method ?? "POST",
        ca: readFileSync(to.caCertPath),
        timeout: 10_000,
        headers: {
          "content-type": "application/json",
          ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
          ...(options.gzip ? { "content-encoding": "gzip" } : {}),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            ...(text ? (JSON.parse(text) as { error?: Answer["error"] }) : {}),
          }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(payload);
  });
}

const rows = (count: number): string => JSON.stringify(Array.from({ length: count }, (_, i) => transitionRecord(i)));

describe("logs ingestion peer: 1 MB before and after gzip", () => {
  it("answers 413 ContentLengthLimitExceeded to a body over 1 MiB as sent, and to a small gzip body over 1 MiB once decompressed", async () => {
    const p = await peer();
    const big = JSON.stringify([{ ...transitionRecord(1), Description: "x".repeat(1024 * 1024) }]);
    const plain = await post(p, big);
    expect(plain.status).toBe(413);
    expect(plain.error).toEqual({
      code: "ContentLengthLimitExceeded",
      message: expect.stringMatching(/^Maximum allowed content length: 1048576 bytes \(1 MB\)\./),
    });
    const zipped = await post(p, big, { gzip: true });
    expect(gzipSync(big).length).toBeLessThan(20_000);
    expect(zipped.status).toBe(413);
    expect(zipped.error?.message).toContain("once decompressed");
    expect(p.rows()).toHaveLength(0);
    expect((await post(p, rows(3), { gzip: true })).status).toBe(204);
    expect(p.rows()).toHaveLength(3);
  });
});

describe("logs ingestion peer: token, rule and stream errors", () => {
  it("401 without a token or with another audience, 404 for an unknown rule, 403 for an identity without access, 404 for an undeclared stream", async () => {
    const p = await peer({ authorizedClientIds: ["system"] });
    expect(await post(p, rows(1), { token: null })).toMatchObject({
      status: 401,
      error: { code: "InvalidAuthenticationToken" },
    });
    expect(await post(p, rows(1), { token: "not.a.jwt" })).toMatchObject({
      status: 401,
      error: { code: "InvalidAuthenticationToken" },
    });
    expect(await post(p, rows(1), { token: mintLocalToken("https://eventhubs.azure.net").token })).toMatchObject({
      status: 401,
      error: { code: "InvalidAuthenticationTokenAudience" },
    });
    expect(await post(p, rows(1), { ruleId: "dcr-ffffffffffffffffffffffffffffffff" })).toMatchObject({
      status: 404,
      error: {
        code: "NotFound",
        message: "Data collection rule with immutable Id 'dcr-ffffffffffffffffffffffffffffffff' not found.",
      },
    });
    expect(
      await post(p, rows(1), { token: mintLocalToken("https://monitor.azure.com", { clientId: "other-app" }).token }),
    ).toMatchObject({
      status: 403,
      error: { code: "OperationFailed", message: expect.stringContaining("does not have access to ingest data") },
    });
    expect(await post(p, rows(1), { stream: "Custom-Other" })).toMatchObject({
      status: 404,
      error: { code: "InvalidStream" },
    });
    expect(await post(p, rows(1))).toMatchObject({ status: 204 });
    expect(p.rows()).toHaveLength(1);
  });

  it("exposes silent drops at GET /__peer/stats", async () => {
    const p = await peer();
    await post(p, JSON.stringify([{ ...transitionRecord(1), Extra: 1 }, 42]));
    const stats = await new Promise<{ dropped: unknown; rowsKept: number }>((resolve, reject) => {
      request(`${p.endpoint}/__peer/stats`, { ca: readFileSync(p.caCertPath), timeout: 10_000 }, (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve(JSON.parse(text) as { dropped: unknown; rowsKept: number }));
      })
        .on("error", reject)
        .end();
    });
    expect(stats).toMatchObject({
      rowsKept: 1,
      dropped: { undeclaredColumns: { Extra: 1 }, mistypedColumns: {}, nonObjectRows: 1, total: 2 },
    });
  });
});

describe("logs ingestion peer: what a stream declaration keeps of a row", () => {
  it("keeps declared columns whose values fit their types, and names what it drops", () => {
    const columns = [
      { name: "TimeGenerated", type: "datetime" },
      { name: "Count", type: "int" },
      { name: "Big", type: "long" },
      { name: "Ratio", type: "real" },
      { name: "Flag", type: "boolean" },
      { name: "Payload", type: "dynamic" },
      { name: "Name", type: "string" },
    ];
    const row = {
      TimeGenerated: "2026-01-01T00:00:00Z",
      Count: 2 ** 31,
      Big: 2 ** 40,
      Ratio: 0.5,
      Flag: "yes",
      Payload: { a: [1] },
      Name: null,
      Extra: 1,
    };
    expect(keepDeclaredColumns(row, columns)).toEqual({
      row: { TimeGenerated: "2026-01-01T00:00:00Z", Big: 2 ** 40, Ratio: 0.5, Payload: { a: [1] }, Name: null },
      undeclaredColumns: ["Extra"],
      mistypedColumns: ["Count", "Flag"],
    });
    expect(keepDeclaredColumns({ TimeGenerated: "yesterday" }, columns).mistypedColumns).toEqual(["TimeGenerated"]);
  });
});

describe("logs ingestion peer: per-rule limits", () => {
  it("answers 429 with Retry-After beyond the requests per minute of a rule, and admits again once the minute slides", async () => {
    let nowMs = 1_000_000;
    const p = await peer({ limits: { requestsPerMinute: 3 }, monotonicNowMs: () => nowMs });
    for (let i = 0; i < 3; i++) {
      expect((await post(p, rows(1))).status).toBe(204);
      nowMs += 10_000;
    }
    const throttled = await post(p, rows(1));
    expect(throttled).toMatchObject({ status: 429, error: { code: "TooManyRequests" } });
    expect(throttled.headers["retry-after"]).toBe("30"); // the first request leaves the window 60 s after it came
    nowMs += 30_000;
    expect((await post(p, rows(1))).status).toBe(204);
    expect(p.rows()).toHaveLength(4);
  });

  it("counts bytes per minute after gunzip", () => {
    const window = new RuleWindow({ requestsPerMinute: 100, bytesPerMinute: 1000 });
    const first = window.admit(0);
    expect(first.admitted).toBe(true);
    first.entry!.addBytes(600);
    window.admit(20_000).entry!.addBytes(600);
    expect(window.admit(30_000)).toEqual({
      admitted: false,
      retryAfterSeconds: 30,
      reason: "more than 1000 bytes per minute",
    });
    expect(window.admit(60_000).admitted).toBe(true);
    expect(window.requestsInWindow(60_000)).toBe(2);
  });

  it("defaults to Azure's limits: 12,000 requests and 2 GB per minute per rule", () => {
    expect(azureRuleLimits).toEqual({ requestsPerMinute: 12_000, bytesPerMinute: 2 * 1024 ** 3 });
    const window = new RuleWindow(azureRuleLimits);
    for (let i = 0; i < 12_000; i++) expect(window.admit(i * 4).admitted).toBe(true);
    expect(window.admit(48_000)).toMatchObject({ admitted: false, retryAfterSeconds: 12 });
  });
});
