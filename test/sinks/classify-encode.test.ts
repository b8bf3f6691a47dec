// Each sink's pure classify and encode steps at their edges: the exact reasons operators read, the Retry-After hints
// kept or dropped, the boundaries of every size limit, and inputs no happy path sends (non-Error throws, empty
// batches, empty keys). The mutation gate's sink group runs this file (test/mutation/stryker.config.ts).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MessagingError } from "@azure/event-hubs";
import { RestError, createHttpHeaders } from "@azure/core-rest-pipeline";
import { AggregateLogsUploadError } from "@azure/monitor-ingestion";
import { classifySendError, serverBusyRetryAfterMs } from "../../src/agent/sinks/eventhubs/classify.js";
import {
  groupByPartitionKey,
  partitionForKey,
  partitionKeyOf,
  toEventData,
} from "../../src/agent/sinks/eventhubs/encode.js";
import { classifyAppendError } from "../../src/agent/sinks/jsonl/classify.js";
import { jsonLines as jsonlLines } from "../../src/agent/sinks/jsonl/encode.js";
import { classifyWriteError } from "../../src/agent/sinks/stdout/classify.js";
import { jsonLines as stdoutLines } from "../../src/agent/sinks/stdout/encode.js";
import { classifyUploadError, oldestUndeliveredAgeWarning } from "../../src/agent/sinks/loganalytics/classify.js";
import { jsonArrayBytes, planRequests } from "../../src/agent/sinks/loganalytics/encode.js";
import { classifyResponse, clipBody, redirectTarget } from "../../src/agent/sinks/webhook/classify.js";
import { encodeBody, planChunks } from "../../src/agent/sinks/webhook/encode.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { entries, heartbeat, transition } from "../eventhubs/fixtures.js";
import { propertyParams } from "../helpers/seed.js";

const nowMs = Date.parse("2024-05-01T12:00:00.000Z");

function messagingError(code: string, message = "boom"): MessagingError {
  const err = new MessagingError(message);
  err.code = code;
  return err;
}

describe("Event Hubs: classifySendError", () => {
  it("asks for the service's server-busy pause, and gives no hint for anything else", () => {
    expect(classifySendError(messagingError("ServerBusyError", "busy"))).toEqual({
      kind: "retry",
      reason: "ServerBusyError: busy",
      afterMs: serverBusyRetryAfterMs,
    });
    expect(classifySendError(messagingError("OperationTimeoutError", "slow"))).toEqual({
      kind: "retry",
      reason: "OperationTimeoutError: slow",
    });
    expect(classifySendError(messagingError("MessageTooLargeError", "big"))).toEqual({
      kind: "rejected",
      reason: "MessageTooLargeError: big",
    });
  });

  it("says what to check when not authorized", () => {
    expect(classifySendError(messagingError("UnauthorizedError", "no claim"))).toEqual({
      kind: "retry",
      reason:
        'not authorized to send (check the credential and its "Azure Event Hubs Data Sender" role): UnauthorizedError: no claim',
    });
  });

  it("takes only the SDK's MessagingErrors by their code; anything else thrown is retried, described as it is", () => {
    const plain = Object.assign(new Error("not the SDK's"), { code: "MessageTooLargeError" });
    expect(classifySendError(plain)).toEqual({ kind: "retry", reason: "MessageTooLargeError: not the SDK's" });
    expect(classifySendError(Object.assign(new Error("odd"), { code: 7 }))).toEqual({
      kind: "retry",
      reason: "Error: odd",
    });
    expect(classifySendError(null)).toEqual({ kind: "retry", reason: "null" });
    expect(classifySendError(undefined)).toEqual({ kind: "retry", reason: "undefined" });
    expect(classifySendError("socket closed")).toEqual({ kind: "retry", reason: "socket closed" });
    expect(classifySendError(new AggregateError([], "every attempt failed"))).toEqual({
      kind: "retry",
      reason: "AggregateError: every attempt failed",
    });
  });
});

describe("Event Hubs: encode", () => {
  it("gives a record without EventStatus or EventType empty properties, never the field names of another record", () => {
    const record = heartbeat(0);
    expect(toEventData(entries([record])[0]!).properties).toEqual({
      RecordType: "Heartbeat",
      EventStatus: "",
      EventType: "",
      VmId: record.VmId,
    });
  });

  it("keys a record by VmId when the configured field is empty, and leaves it unkeyed when VmId is empty too", () => {
    const noScaleSet = { ...transition("EV-1", "Scheduled", 0), EventId: "" };
    expect(partitionKeyOf(noScaleSet, "EventId")).toBe(noScaleSet.VmId);
    expect(partitionKeyOf({ ...heartbeat(0), VmId: "" }, "EventId")).toBeUndefined();
  });

  it("keeps the unkeyed records apart from a record whose key reads 'undefined'", () => {
    const batch = entries([transition("undefined", "Scheduled", 0), { ...heartbeat(1), VmId: "" }]);
    expect(groupByPartitionKey(batch, "EventId").map((g) => [g.partitionKey, g.indexes])).toEqual([
      ["undefined", [0]],
      [undefined, [1]],
    ]);
  });

  it("with hash routing, sends every record of one partition in one group, whatever its key", () => {
    const ids = ["0", "1"];
    // K0, K1 and K4 go to partition 0; K2 to partition 1.
    expect(["K0", "K1", "K2", "K4"].map((k) => partitionForKey(k, ids))).toEqual(["0", "0", "1", "0"]);
    const groups = groupByPartitionKey(
      entries(["K0", "K2", "K1", "K4"].map((k, i) => transition(k, "Scheduled", i))),
      "EventId",
      ids,
    );
    expect(groups.map((g) => [g.partitionId, g.partitionKey, g.indexes])).toEqual([
      ["0", undefined, [0, 2, 3]],
      ["1", undefined, [1]],
    ]);
  });
});

describe("jsonl and stdout sinks", () => {
  const batch: OutboxEntry[] = [
    { seq: 1, record: heartbeat(0), json: '{"a":1}' },
    { seq: 2, record: heartbeat(1), json: '{"b":"é"}' },
  ];
  it("write one JSON record per line, and nothing for an empty batch", () => {
    for (const lines of [jsonlLines, stdoutLines]) {
      expect(lines(batch)).toBe('{"a":1}\n{"b":"é"}\n');
      expect(lines([])).toBe("");
    }
  });
  it("retry a failed write, saying what failed", () => {
    expect(classifyAppendError("/data/records.jsonl", new Error("ENOSPC: no space left on device"))).toEqual({
      kind: "retry",
      reason: "cannot append to /data/records.jsonl: ENOSPC: no space left on device",
    });
    expect(classifyWriteError(new Error("EPIPE"))).toEqual({ kind: "retry", reason: "stdout write failed: EPIPE" });
  });
});

function restError(
  status: number,
  h: Record<string, string> = {},
  code?: string,
  message = `status ${status}`,
): RestError {
  return new RestError(message, {
    statusCode: status,
    ...(code ? { code } : {}),
    response: { status, headers: createHttpHeaders(h), request: undefined as never },
  });
}

describe("Log Analytics: classifyUploadError", () => {
  it("describes what it got: the status and the service's code when there are, the error's name or a plain value otherwise", () => {
    expect(classifyUploadError(restError(500, {}, undefined, "oops"), nowMs)).toEqual({
      kind: "retry",
      reason: "HTTP 500: oops",
      statusCode: 500,
    });
    expect(classifyUploadError(new Error("reset"), nowMs)).toEqual({ kind: "retry", reason: "Error: reset" });
    expect(classifyUploadError(Object.assign(new Error("odd"), { code: 5 }), nowMs)).toEqual({
      kind: "retry",
      reason: "Error: odd",
    });
    expect(classifyUploadError({ message: "no name" }, nowMs)).toEqual({ kind: "retry", reason: "Error: no name" });
    expect(classifyUploadError("just text", nowMs)).toEqual({ kind: "retry", reason: "Error: just text" });
    expect(
      classifyUploadError(Object.assign(restError(502, {}, undefined, "bad gateway"), { code: 12 }), nowMs),
    ).toEqual({ kind: "retry", reason: "HTTP 502: bad gateway", statusCode: 502 });
  });

  it("takes a hint only from 429 and 503", () => {
    expect(classifyUploadError(restError(500, { "retry-after": "2" }), nowMs)).toEqual({
      kind: "retry",
      reason: "HTTP 500: status 500",
      statusCode: 500,
    });
    expect(classifyUploadError(restError(503, { "retry-after": "2" }), nowMs)).toMatchObject({ afterMs: 2000 });
  });

  it("unwraps only the SDK's AggregateLogsUploadError, and one with no errors is still an answer", () => {
    const outer = new AggregateError([{ cause: restError(400) }], "several");
    expect(classifyUploadError(outer, nowMs)).toEqual({ kind: "retry", reason: "AggregateError: several" });
    expect(classifyUploadError(new AggregateLogsUploadError([]), nowMs)).toMatchObject({ kind: "retry" });
  });

  it("puts reasons on one line and clips them at 2000 characters", () => {
    expect(classifyUploadError(new Error("  two\n\n  lines  "), nowMs).reason).toBe("Error: two lines");
    const exact = classifyUploadError(new Error("x".repeat(2000 - "Error: ".length)), nowMs).reason;
    expect(exact).toBe(`Error: ${"x".repeat(1993)}`);
    const long = classifyUploadError(new Error("y".repeat(3000)), nowMs).reason;
    expect(long).toBe(`Error: ${"y".repeat(1993)}…`);
  });
});

describe("Log Analytics: the stale-record warning", () => {
  const ago = (ms: number) => new Date(nowMs - ms).toISOString();
  const hour = 3_600_000;
  it("says nothing at the threshold exactly, or for a TimeGenerated it cannot read", () => {
    expect(oldestUndeliveredAgeWarning(nowMs, ago(36 * hour))).toBeUndefined();
    expect(oldestUndeliveredAgeWarning(nowMs, ago(36 * hour + 1))).toBeDefined();
    expect(oldestUndeliveredAgeWarning(nowMs, "yesterday-ish")).toBeUndefined();
  });
  it("says the time will be replaced up to 48 h exactly, and has been past it", () => {
    expect(oldestUndeliveredAgeWarning(nowMs, ago(48 * hour))?.message).toMatch(/past 48 h Log Analytics will replace/);
    expect(oldestUndeliveredAgeWarning(nowMs, ago(48 * hour + 1))?.message).toMatch(
      /replaces a TimeGenerated older than 48 h/,
    );
  });
});

describe("Log Analytics: request planning", () => {
  const rows = (sizes: number[]) => sizes.map((bytes, i) => ({ bytes, i }));
  it("counts an empty array as its two brackets, plans nothing for no rows, and names the row that cannot fit", () => {
    expect(jsonArrayBytes([])).toBe(2);
    expect(planRequests([], 100)).toEqual([]);
    expect(() => planRequests(rows([10, 99]), 100)).toThrow(/^a row of 99 bytes cannot fit a request$/);
  });
  it("counts one comma between rows: three rows of 30, 30 and 37 bytes make 101 bytes, two requests", () => {
    expect(planRequests(rows([30, 30, 36]), 100).map((r) => r.map((x) => x.i))).toEqual([[0, 1, 2]]);
    expect(planRequests(rows([30, 30, 37]), 100).map((r) => r.map((x) => x.i))).toEqual([[0, 1], [2]]);
  });
});

describe("webhook: classifyResponse", () => {
  it("takes 2xx only as delivered", () => {
    expect(classifyResponse(200, undefined, "", nowMs)).toEqual({ kind: "delivered" });
    expect(classifyResponse(299, undefined, "", nowMs)).toEqual({ kind: "delivered" });
    expect(classifyResponse(199, undefined, "", nowMs)).toEqual({ kind: "rejected", reason: "HTTP 199" });
    expect(classifyResponse(300, undefined, "", nowMs).kind).toBe("retry");
  });
  it("retries 408, 429 and 5xx with the hint when given (and no hint property otherwise), reasons with the body on one line", () => {
    expect(classifyResponse(503, "3", "  down \n for now ", nowMs)).toEqual({
      kind: "retry",
      reason: "HTTP 503: down for now",
      afterMs: 3000,
    });
    const bare = classifyResponse(429, undefined, "   ", nowMs);
    expect(bare).toEqual({ kind: "retry", reason: "HTTP 429" });
    expect("afterMs" in bare).toBe(false);
  });
  it("keeps records for an operator on 401/403 and on a redirect it did not follow (3xx), splits on 413, dead-letters other 4xx", () => {
    expect(classifyResponse(401, undefined, "", nowMs)).toEqual({
      kind: "retry",
      reason: "HTTP 401 (check the webhook headers/credentials)",
      needsOperator: true,
    });
    for (const status of [300, 302, 399]) {
      expect(classifyResponse(status, undefined, "", nowMs)).toEqual({
        kind: "retry",
        reason: `HTTP ${status} (redirect not followed: only 307/308 to the same origin are; fix webhook.url — records stay in the outbox)`,
        needsOperator: true,
      });
    }
    expect(classifyResponse(413, undefined, "", nowMs)).toEqual({
      kind: "rejected",
      reason: "HTTP 413",
      tooLarge: true,
    });
    expect(classifyResponse(400, undefined, "bad", nowMs)).toEqual({ kind: "rejected", reason: "HTTP 400: bad" });
    expect(classifyResponse(404, undefined, "", nowMs)).toEqual({ kind: "rejected", reason: "HTTP 404" });
  });
  it("clips a body to 300 characters on one line", () => {
    expect(clipBody("a \t\n  b")).toBe("a b");
    expect(clipBody("x".repeat(300))).toBe("x".repeat(300));
    expect(clipBody("x".repeat(301))).toBe(`${"x".repeat(300)}…`);
  });
});

describe("webhook: redirectTarget", () => {
  it("follows only a 307 or 308 to the same origin", () => {
    expect(redirectTarget(307, "/next", "http://127.0.0.1:8080/hook")?.href).toBe("http://127.0.0.1:8080/next");
    expect(redirectTarget(308, "http://127.0.0.1:8080/other", "http://127.0.0.1:8080/hook")?.href).toBe(
      "http://127.0.0.1:8080/other",
    );
    expect(redirectTarget(301, "/next", "http://127.0.0.1:8080/hook")).toBeUndefined();
    expect(redirectTarget(302, "/next", "http://127.0.0.1:8080/hook")).toBeUndefined();
    expect(redirectTarget(307, "http://127.0.0.1:8081/hook", "http://127.0.0.1:8080/hook")).toBeUndefined();
    expect(redirectTarget(308, "https://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook")).toBeUndefined();
    expect(redirectTarget(307, undefined, "http://127.0.0.1:8080/hook")).toBeUndefined();
    expect(redirectTarget(307, "http://[bad", "http://127.0.0.1:8080/hook")).toBeUndefined();
  });
});

describe("webhook: planChunks", () => {
  const entryOf = (json: string, seq: number): OutboxEntry => ({ seq, record: heartbeat(seq), json });
  const bytes = (s: string) => Buffer.byteLength(s, "utf8");

  it("splits in order into the fullest bodies within both limits; a record too large alone is set apart", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: fc.constantFrom("a", "é", "€"), maxLength: 30 }), { maxLength: 12 }),
        fc.integer({ min: 3, max: 60 }),
        fc.integer({ min: 1, max: 4 }),
        (jsons, maxBytes, maxRecords) => {
          const batch = jsons.map(entryOf);
          const chunks = planChunks(batch, maxBytes, maxRecords);
          // Every record once, in order.
          expect(
            chunks.flatMap((c) =>
              c.kind === "body" ? Array.from({ length: c.end - c.start }, (_, k) => c.start + k) : [c.index],
            ),
          ).toEqual(batch.map((_, i) => i));
          chunks.forEach((c, n) => {
            if (c.kind === "oversize") {
              expect(c.bytes).toBe(bytes(jsons[c.index]!) + 2);
              expect(c.bytes).toBeGreaterThan(maxBytes);
              return;
            }
            const body = encodeBody(batch.slice(c.start, c.end));
            expect(c.body.equals(body)).toBe(true);
            expect(c.end - c.start).toBeGreaterThanOrEqual(1);
            expect(c.end - c.start).toBeLessThanOrEqual(maxRecords);
            expect(body.length).toBeLessThanOrEqual(maxBytes);
            // The fullest: the next record, when it is sent at all, would not have fit this body.
            const next = chunks[n + 1];
            if (next?.kind === "body") {
              const grown = encodeBody(batch.slice(c.start, c.end + 1));
              expect(grown.length > maxBytes || c.end + 1 - c.start > maxRecords).toBe(true);
            }
          });
          // A record alone fits exactly when its body does.
          for (const [i, json] of jsons.entries()) {
            const setApart = chunks.some((c) => c.kind === "oversize" && c.index === i);
            expect(setApart).toBe(bytes(json) + 2 > maxBytes);
          }
        },
      ),
      propertyParams(3601, 300),
    );
  });

  it("fills a body to the byte exactly", () => {
    // [aaaa,bbb] is 10 bytes.
    const batch = [entryOf("aaaa", 1), entryOf("bbb", 2)];
    expect(planChunks(batch, 10, 5).map((c) => (c.kind === "body" ? [c.start, c.end] : c.index))).toEqual([[0, 2]]);
    expect(planChunks(batch, 9, 5).map((c) => (c.kind === "body" ? [c.start, c.end] : c.index))).toEqual([
      [0, 1],
      [1, 2],
    ]);
    expect(planChunks([entryOf("12345678", 1)], 10, 5).map((c) => c.kind)).toEqual(["body"]);
    expect(planChunks([entryOf("123456789", 1)], 10, 5).map((c) => c.kind)).toEqual(["oversize"]);
  });
});
