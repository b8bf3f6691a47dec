// The document-read signal (pure): which EventIds a document lists (unreadable events that keep an id included; a
// document with an event whose id cannot be read is not announced), and every follower hearing of each document.
import { describe, expect, it } from "vitest";
import { DocumentsRead, listedEventIds } from "../../src/agent/pipeline/documents-read.js";
import type { ScheduledEventsDocument } from "../../src/agent/imds/document.js";
import { event } from "../actions/fixtures.js";

const readable = (id: string) => ({ ...event({ EventId: id }), EventStatus: "Scheduled" as const });

describe("documents read", () => {
  it("lists every EventId, readable or not; an event without a readable id makes the list unknown", () => {
    const document: ScheduledEventsDocument = {
      DocumentIncarnation: 3,
      Events: [readable("A"), readable("B")],
      Malformed: [{ index: 2, eventId: "C", reason: "event_status", problem: 'EventStatus is "Done"', raw: {} }],
    };
    expect(listedEventIds(document)).toEqual(["A", "B", "C"]);
    expect(listedEventIds({ DocumentIncarnation: 4, Events: [] })).toEqual([]);
    expect(
      listedEventIds({
        ...document,
        Malformed: [{ index: 0, eventId: null, reason: "event_id", problem: "EventId is missing", raw: {} }],
      }),
    ).toBeUndefined();
  });

  it("each follower hears of each document, in the order they followed", () => {
    const signal = new DocumentsRead();
    const heard: string[] = [];
    signal.follow((ids) => heard.push(`first:${ids.join(",")}`));
    signal.follow((ids) => heard.push(`second:${ids.join(",")}`));
    signal.announce(["A"]);
    signal.announce([]);
    expect(heard).toEqual(["first:A", "second:A", "first:", "second:"]);
  });
});
