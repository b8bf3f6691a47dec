// Pure pieces of the Log Analytics sink: Retry-After parsing, answer classification, request planning,
// rule pauses, the stale-record warning and the peer's fault specs.
import { retryAfterFromHeaders, maxHonouredRetryAfterMs } from "../../src/retry/retry-after.js";
import { RestError, createHttpHeaders } from "@azure/core-rest-pipeline";
import { AggregateLogsUploadError } from "@azure/monitor-ingestion";
import { describe, expect, it } from "vitest";
import { parseFaultSpec } from "../../src/testbed/peers/logs-ingestion/faults.js";
import { classifyUploadError, oldestUndeliveredAgeWarning } from "../../src/agent/sinks/loganalytics/classify.js";
import {
  jsonArrayBytes,
  jsonArrayOf,
  planRequests,
  rowFitsRequest,
} from "../../src/agent/sinks/loganalytics/encode.js";
import { PreEncodedBodies } from "../../src/agent/sinks/loganalytics/pre-encoded-body.js";
import { RulePauses } from "../../src/agent/sinks/loganalytics/rule-pauses.js";

const nowMs = Date.parse("2024-05-01T12:00:00.000Z");
const headers = (h: Record<string, string>) => (name: string) => h[name.toLowerCase()];

function restError(
  status: number,
  h: Record<string, string> = {},
  code?: string,
  message = `status ${status}`,
): RestError {
  const pipelineHeaders = createHttpHeaders(h);
  return new RestError(message, {
    statusCode: status,
    ...(code ? { code } : {}),
    response: { status, headers: pipelineHeaders, request: undefined as never },
  });
}

describe("retryAfterFromHeaders", () => {
  it("reads milliseconds headers first, then Retry-After seconds or HTTP date", () => {
    expect(retryAfterFromHeaders(headers({ "retry-after-ms": "250", "retry-after": "9" }), nowMs)).toBe(250);
    expect(retryAfterFromHeaders(headers({ "x-ms-retry-after-ms": "1500" }), nowMs)).toBe(1500);
    expect(retryAfterFromHeaders(headers({ "retry-after": "3" }), nowMs)).toBe(3000);
    expect(retryAfterFromHeaders(headers({ "retry-after": "0.5" }), nowMs)).toBe(500);
    expect(retryAfterFromHeaders(headers({ "retry-after": new Date(nowMs + 7000).toUTCString() }), nowMs)).toBe(7000);
    expect(retryAfterFromHeaders(headers({ "retry-after": new Date(nowMs - 7000).toUTCString() }), nowMs)).toBe(0);
  });
  it("ignores garbage and caps absurd values", () => {
    expect(retryAfterFromHeaders(headers({}), nowMs)).toBeUndefined();
    expect(retryAfterFromHeaders(headers({ "retry-after": "soon" }), nowMs)).toBeUndefined();
    expect(retryAfterFromHeaders(headers({ "retry-after-ms": "-5" }), nowMs)).toBeUndefined();
    expect(retryAfterFromHeaders(headers({ "retry-after": "864000" }), nowMs)).toBe(maxHonouredRetryAfterMs);
  });
});

describe("classifyUploadError", () => {
  it("rejects the request's rows on 400/413 with the service's message", () => {
    for (const status of [400, 413]) {
      const failure = classifyUploadError(restError(status, {}, "InvalidStream", "row 3 is bad"), nowMs);
      expect(failure).toEqual({
        kind: "rejected",
        statusCode: status,
        reason: `HTTP ${status} InvalidStream: row 3 is bad`,
      });
    }
  });
  it("retries 401/403/404 (Azure-side changes clear them) and marks them as needing an operator", () => {
    for (const status of [401, 403, 404]) {
      const failure = classifyUploadError(restError(status, {}, "Forbidden", "no role"), nowMs);
      expect(failure).toMatchObject({ kind: "retry", statusCode: status, needsOperator: true });
      expect(failure.reason).toMatch(
        new RegExp(`^HTTP ${status} Forbidden: no role \\(.+; records stay in the outbox\\)$`),
      );
    }
  });
  it("retries 429/503 with the server's hint, and without one when absent", () => {
    expect(classifyUploadError(restError(429, { "retry-after": "2" }), nowMs)).toMatchObject({
      kind: "retry",
      afterMs: 2000,
      statusCode: 429,
    });
    expect(classifyUploadError(restError(503, { "retry-after-ms": "40" }), nowMs)).toMatchObject({
      kind: "retry",
      afterMs: 40,
    });
    const bare = classifyUploadError(restError(429), nowMs);
    expect(bare.kind).toBe("retry");
    expect("afterMs" in bare).toBe(false);
  });
  it("retries 408, 5xx, network and credential errors, and unwraps AggregateLogsUploadError", () => {
    expect(classifyUploadError(restError(408), nowMs).kind).toBe("retry");
    expect(classifyUploadError(restError(500), nowMs).kind).toBe("retry");
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(classifyUploadError(reset, nowMs)).toMatchObject({
      kind: "retry",
      reason: "Error (ECONNRESET): socket hang up",
    });
    const aggregate = new AggregateLogsUploadError([
      { failedLogs: [], cause: restError(403, {}, "Forbidden", "no role") },
    ]);
    expect(classifyUploadError(aggregate, nowMs)).toMatchObject({ kind: "retry", statusCode: 403 });
  });
  it("never puts a bearer token in a reason", () => {
    const failure = classifyUploadError(new Error("failed with Authorization: Bearer eyJabc.def.ghi"), nowMs);
    expect(failure.reason).not.toContain("eyJabc");
  });
});

describe("planRequests", () => {
  const rows = (sizes: number[]) => sizes.map((bytes, i) => ({ bytes, i }));
  it("packs rows in order so that every JSON array body stays within the limit", () => {
    const plan = planRequests(rows([40, 40, 40, 10, 97]), 100);
    for (const request of plan) expect(jsonArrayBytes(request.map((r) => r.bytes))).toBeLessThanOrEqual(100);
    expect(plan.map((r) => r.map((x) => x.i))).toEqual([[0, 1], [2, 3], [4]]);
  });
  it("fills a request exactly up to the limit", () => {
    // [a,b] = 2 + 48 + 1 + 49 = 100
    expect(planRequests(rows([48, 49]), 100)).toHaveLength(1);
    expect(planRequests(rows([48, 50]), 100)).toHaveLength(2);
  });
  it("knows which rows can never fit", () => {
    expect(rowFitsRequest(98, 100)).toBe(true);
    expect(rowFitsRequest(99, 100)).toBe(false);
    expect(() => planRequests(rows([99]), 100)).toThrow(RangeError);
  });
});

describe("RulePauses", () => {
  it("pauses a rule until the latest requested end", () => {
    const pauses = new RulePauses();
    pauses.pauseUntil("dcr-a", 5000);
    pauses.pauseUntil("dcr-a", 3000);
    expect(pauses.remainingMs("dcr-a", 1000)).toBe(4000);
    expect(pauses.remainingMs("dcr-b", 1000)).toBe(0);
    expect(pauses.remainingMs("dcr-a", 5000)).toBe(0);
  });
});

describe("oldestUndeliveredAgeWarning", () => {
  const hoursAgo = (h: number) => new Date(nowMs - h * 3_600_000).toISOString();
  it("stays quiet for young records and warns past the threshold (default 36 h)", () => {
    expect(oldestUndeliveredAgeWarning(nowMs, undefined)).toBeUndefined();
    expect(oldestUndeliveredAgeWarning(nowMs, hoursAgo(35))).toBeUndefined();
    expect(oldestUndeliveredAgeWarning(nowMs, hoursAgo(37))?.message).toMatch(/37\.0 h old: past 48 h/);
    expect(oldestUndeliveredAgeWarning(nowMs, hoursAgo(50))?.message).toMatch(
      /replaces a TimeGenerated older than 48 h/,
    );
    expect(oldestUndeliveredAgeWarning(nowMs, hoursAgo(2), 3_600_000)?.ageMs).toBe(2 * 3_600_000);
  });
});

describe("parseFaultSpec", () => {
  it("parses statuses, headers, resets and slow answers", () => {
    expect(parseFaultSpec("2*429:retry-after=1")).toEqual({
      count: 2,
      fault: { status: 429, headers: { "Retry-After": "1" } },
    });
    expect(parseFaultSpec("1*503:x-ms-retry-after-ms=20,delay-ms=5")).toEqual({
      count: 1,
      fault: { status: 503, headers: { "x-ms-retry-after-ms": "20" }, delayMs: 5 },
    });
    expect(parseFaultSpec("1*reset")).toEqual({ count: 1, fault: { reset: true } });
    expect(parseFaultSpec("3*slow:2000")).toEqual({ count: 3, fault: { delayMs: 2000 } });
    expect(() => parseFaultSpec("429")).toThrow(/N\*KIND/);
    expect(() => parseFaultSpec("1*teapot")).toThrow(/unknown fault kind/);
    expect(() => parseFaultSpec("1*429:colour=red")).toThrow(/unknown fault option/);
  });
});

describe("PreEncodedBodies (encoding once)", () => {
  it("the policy swaps the SDK's serialized placeholder row for the prepared body", async () => {
    const bodies = new PreEncodedBodies();
    let sent: unknown;
    await bodies.upload('[{"a":1},{"b":"é"}]', async (placeholder) => {
      const request = { body: JSON.stringify([placeholder]) } as Parameters<typeof bodies.policy.sendRequest>[0];
      await bodies.policy.sendRequest(request, async (r) => {
        sent = r.body;
        return {} as Awaited<ReturnType<typeof bodies.policy.sendRequest>>;
      });
    });
    expect(sent).toBe('[{"a":1},{"b":"é"}]');
  });

  it("a request that never met the policy is an error, so its records are not counted as delivered", async () => {
    const bodies = new PreEncodedBodies();
    await expect(bodies.upload("[]", async () => {})).rejects.toThrow(/without its prepared body/);
  });

  it("jsonArrayOf is JSON.stringify of the parsed rows", () => {
    const rows = [{ a: 1, b: [1, "x"] }, { c: "ü\n" }];
    expect(jsonArrayOf(rows.map((r) => JSON.stringify(r)))).toBe(JSON.stringify(rows));
    expect(jsonArrayBytes(rows.map((r) => Buffer.byteLength(JSON.stringify(r))))).toBe(
      Buffer.byteLength(JSON.stringify(rows)),
    );
  });
});
