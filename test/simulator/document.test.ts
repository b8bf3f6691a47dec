// Document rendering per api-version, RFC 1123 NotBefore, and the broken bodies served by faults.
import { describe, expect, it } from "vitest";
import {
  formatRfc1123,
  hugeBody,
  malformedBody,
  malformedVariants,
  renderDocument,
} from "../../src/testbed/simulator/document.js";
import type { LiveEvent } from "../../src/testbed/simulator/timeline.js";

const notBeforeMs = Date.UTC(2022, 3, 11, 22, 26, 58, 700);
const scheduled: LiveEvent = {
  EventId: "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
  EventType: "Freeze",
  EventStatus: "Scheduled",
  ResourceType: "VirtualMachine",
  Resources: ["WestNO_0", "WestNO_1"],
  Description: "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
  EventSource: "Platform",
  DurationInSeconds: 5,
  notBeforeMs,
  startedAtMs: null,
  startedForMs: 1000,
  autoStart: true,
};

describe("renderDocument", () => {
  it("writes the documented 2020-07-01 shape with an RFC 1123 NotBefore", () => {
    expect(renderDocument({ incarnation: 2, events: [scheduled] }, "2020-07-01")).toEqual({
      DocumentIncarnation: 2,
      Events: [
        {
          EventId: "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
          EventStatus: "Scheduled",
          EventType: "Freeze",
          ResourceType: "VirtualMachine",
          Resources: ["WestNO_0", "WestNO_1"],
          NotBefore: "Mon, 11 Apr 2022 22:26:58 GMT",
          Description: "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
          EventSource: "Platform",
          DurationInSeconds: 5,
        },
      ],
    });
  });

  it("drops fields newer than the api-version and prefixes names before 2017-08-01", () => {
    const keys = (v: "2017-03-01" | "2017-08-01" | "2019-04-01" | "2019-08-01" | "2020-07-01"): string[] =>
      Object.keys(renderDocument({ incarnation: 1, events: [scheduled] }, v).Events[0] ?? {});
    const base = ["EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore"];
    expect(keys("2017-08-01")).toEqual(base);
    expect(keys("2019-04-01")).toEqual([...base, "Description"]);
    expect(keys("2019-08-01")).toEqual([...base, "Description", "EventSource"]);
    expect(keys("2020-07-01")).toEqual([...base, "Description", "EventSource", "DurationInSeconds"]);
    expect(renderDocument({ incarnation: 1, events: [scheduled] }, "2017-03-01").Events[0]?.Resources).toEqual([
      "_WestNO_0",
      "_WestNO_1",
    ]);
    expect(renderDocument({ incarnation: 1, events: [scheduled] }, "2017-08-01").Events[0]?.Resources).toEqual([
      "WestNO_0",
      "WestNO_1",
    ]);
  });

  it("writes NotBefore as an empty string once Started", () => {
    const started = { ...scheduled, EventStatus: "Started" as const, startedAtMs: notBeforeMs };
    expect(renderDocument({ incarnation: 3, events: [started] }, "2020-07-01").Events[0]?.NotBefore).toBe("");
    expect(formatRfc1123(Date.UTC(2024, 0, 5, 3, 4, 5))).toBe("Fri, 05 Jan 2024 03:04:05 GMT");
  });
});

describe("fault bodies", () => {
  const document = renderDocument({ incarnation: 4, events: [scheduled] }, "2020-07-01");

  it("malformed bodies never parse into a document with Events", () => {
    for (const variant of malformedVariants) {
      const body = malformedBody(document, variant);
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(body);
      } catch {
        continue;
      }
      expect(Array.isArray((parsed as { Events?: unknown }).Events), variant).toBe(false);
    }
  });

  it("the huge body is valid JSON of the requested size with the real events first", () => {
    const body = hugeBody(document, 3 * 1024 * 1024);
    expect(body.length).toBeGreaterThanOrEqual(3 * 1024 * 1024);
    expect(body.length).toBeLessThan(3 * 1024 * 1024 + 2048);
    const parsed = JSON.parse(body) as { DocumentIncarnation: number; Events: { EventId: string }[] };
    expect(parsed.DocumentIncarnation).toBe(4);
    expect(parsed.Events[0]?.EventId).toBe(scheduled.EventId);
    expect(parsed.Events[1]?.EventId).toBe("huge-body-junk-0");
    expect(JSON.parse(hugeBody({ DocumentIncarnation: 0, Events: [] }, 4096)).Events.length).toBeGreaterThan(1);
  });
});
