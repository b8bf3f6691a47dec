// The Scheduled Events and compute documents read field by field (imds/document.ts, pure): each bad field named in its
// exact message, a bad event set apart with its place and id while the others are read, a bad document refused whole,
// the VM identity and tags as both tag spellings give them. The mutation gate's `imds-document` group runs this file.
import { describe, expect, it } from "vitest";
import {
  MalformedDocumentError,
  MalformedEventError,
  maxTags,
  normalizeResourceName,
  parseCompute,
  parseEvent,
  parseNotBefore,
  parseScheduledEventsDocument,
  parseTags,
} from "../../src/agent/imds/document.js";

/** What parseEvent throws for `raw`: its reason and message. */
function eventProblem(raw: unknown): { reason: string; message: string } {
  try {
    parseEvent(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedEventError);
    expect(err).toMatchObject({ name: "MalformedEventError", code: "SEF_ERR_IMDS_MALFORMED_EVENT" });
    const { reason, message } = err as MalformedEventError;
    return { reason, message };
  }
  throw new Error("parseEvent accepted the event");
}

/** What parseScheduledEventsDocument (or parseCompute) throws for `body`: a MalformedDocumentError's message. */
function documentProblem(parse: (body: string) => unknown, body: string): string {
  try {
    parse(body);
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedDocumentError);
    expect(err).toMatchObject({ name: "MalformedDocumentError", code: "SEF_ERR_IMDS_MALFORMED_DOCUMENT" });
    return (err as Error).message;
  }
  throw new Error("the document was accepted");
}

const scheduled = { EventId: "E1", EventStatus: "Scheduled", NotBefore: "" };

describe("parseNotBefore", () => {
  it("reads absent, null and blank as no start time, and a date of either spelling as ISO 8601 UTC", () => {
    expect(parseNotBefore(undefined)).toBeNull();
    expect(parseNotBefore(null)).toBeNull();
    expect(parseNotBefore("")).toBeNull();
    expect(parseNotBefore("   ")).toBeNull();
    expect(parseNotBefore(" Mon, 11 Apr 2022 22:26:58 GMT ")).toBe("2022-04-11T22:26:58.000Z");
    expect(parseNotBefore("2022-04-11T22:26:58+02:00")).toBe("2022-04-11T20:26:58.000Z");
  });

  it("names a value that is not a string or not a date, quoting it", () => {
    const problem = (value: unknown) => eventProblem({ ...scheduled, NotBefore: value });
    expect(problem(5)).toEqual({ reason: "not_before", message: "NotBefore is not a string: 5" });
    expect(problem(false)).toEqual({ reason: "not_before", message: "NotBefore is not a string: false" });
    expect(problem("soon")).toEqual({ reason: "not_before", message: 'NotBefore is not a date: "soon"' });
    expect(() => parseNotBefore({})).toThrow("NotBefore is not a string: {}");
  });
});

describe("normalizeResourceName", () => {
  it("drops one leading underscore (pre-2017 api-versions) and nothing else", () => {
    expect(normalizeResourceName("_vm1")).toBe("vm1");
    expect(normalizeResourceName("__vm1")).toBe("_vm1");
    expect(normalizeResourceName("vm_1")).toBe("vm_1");
    expect(normalizeResourceName("")).toBe("");
  });
});

describe("parseEvent", () => {
  it("reads a full event, keeping strings as sent and normalizing names and times", () => {
    expect(
      parseEvent({
        EventId: " E1 ",
        EventStatus: "Started",
        EventType: "Freeze",
        ResourceType: "VirtualMachine",
        Resources: ["_vm1", "vm2"],
        NotBefore: "Mon, 11 Apr 2022 22:26:58 GMT",
        Description: "host update",
        EventSource: "Platform",
        DurationInSeconds: 9,
      }),
    ).toEqual({
      EventId: " E1 ",
      EventStatus: "Started",
      EventType: "Freeze",
      ResourceType: "VirtualMachine",
      Resources: ["vm1", "vm2"],
      NotBefore: "2022-04-11T22:26:58.000Z",
      Description: "host update",
      EventSource: "Platform",
      DurationInSeconds: 9,
    });
  });

  it("fills what IMDS may leave out: empty strings, no resources, duration -1", () => {
    const minimal = {
      EventId: "E1",
      EventStatus: "Scheduled",
      EventType: "",
      ResourceType: "",
      Resources: [],
      NotBefore: null,
      Description: "",
      EventSource: "",
      DurationInSeconds: -1,
    };
    expect(parseEvent({ EventId: "E1", EventStatus: "Scheduled", NotBefore: null })).toEqual(minimal);
    expect(
      parseEvent({
        EventId: "E1",
        EventStatus: "Scheduled",
        NotBefore: "",
        EventType: null,
        Resources: null,
        DurationInSeconds: null,
      }),
    ).toEqual(minimal);
    expect(parseEvent({ EventId: "E1", EventStatus: "Started" }).NotBefore).toBeNull();
  });

  it("reads a duration sent as an integer or as its text", () => {
    const duration = (value: unknown) => parseEvent({ ...scheduled, DurationInSeconds: value }).DurationInSeconds;
    expect(duration(0)).toBe(0);
    expect(duration(-1)).toBe(-1);
    expect(duration("30")).toBe(30);
    expect(duration(" 30 ")).toBe(30);
  });

  it.each([
    ["a string", "Reboot", "not_an_object", "event is not a JSON object"],
    ["null", null, "not_an_object", "event is not a JSON object"],
    ["an array", [scheduled], "not_an_object", "event is not a JSON object"],
    ["no EventId", { EventStatus: "Scheduled" }, "event_id", "EventId is missing or not a string"],
    ["a blank EventId", { ...scheduled, EventId: "  " }, "event_id", "EventId is missing or not a string"],
    ["a numeric EventId", { ...scheduled, EventId: 7 }, "event_id", "EventId is missing or not a string"],
    [
      "an unknown status",
      { EventId: "E1", EventStatus: "Done" },
      "event_status",
      'EventStatus is "Done", expected Scheduled or Started',
    ],
    ["no status", { EventId: "E1" }, "event_status", "EventStatus is undefined, expected Scheduled or Started"],
    [
      "Resources as a string",
      { ...scheduled, Resources: "vm" },
      "resources",
      'Resources is not an array of strings: "vm"',
    ],
    [
      "a resource that is not a string",
      { ...scheduled, Resources: ["vm", 2] },
      "resources",
      'Resources is not an array of strings: ["vm",2]',
    ],
    [
      "a Scheduled event without NotBefore",
      { EventId: "E1", EventStatus: "Scheduled" },
      "not_before",
      "NotBefore is missing",
    ],
    ["EventType as a number", { ...scheduled, EventType: 7 }, "field_type", "EventType is not a string: 7"],
    ["ResourceType as a list", { ...scheduled, ResourceType: [] }, "field_type", "ResourceType is not a string: []"],
    ["Description as true", { ...scheduled, Description: true }, "field_type", "Description is not a string: true"],
    ["EventSource as an object", { ...scheduled, EventSource: {} }, "field_type", "EventSource is not a string: {}"],
    [
      "a fractional duration",
      { ...scheduled, DurationInSeconds: 1.5 },
      "duration",
      "DurationInSeconds is not an integer: 1.5",
    ],
    [
      "a duration in words",
      { ...scheduled, DurationInSeconds: "long" },
      "duration",
      'DurationInSeconds is not an integer: "long"',
    ],
    [
      "a blank duration",
      { ...scheduled, DurationInSeconds: " " },
      "duration",
      'DurationInSeconds is not an integer: " "',
    ],
    [
      "a boolean duration",
      { ...scheduled, DurationInSeconds: true },
      "duration",
      "DurationInSeconds is not an integer: true",
    ],
  ])("names the first bad field of an event (%s)", (_name, raw, reason, message) => {
    expect(eventProblem(raw)).toEqual({ reason, message });
  });
});

describe("parseScheduledEventsDocument", () => {
  it("reads a document with no events without a Malformed list", () => {
    const parsed = parseScheduledEventsDocument('{"DocumentIncarnation":0,"Events":[]}');
    expect(parsed).toEqual({ DocumentIncarnation: 0, Events: [] });
    expect(Object.keys(parsed)).toEqual(["DocumentIncarnation", "Events"]);
  });

  it.each([
    ["not JSON", "{", /^body is not JSON: /],
    ["a JSON string", '"events"', /^body is not a JSON object$/],
    ["null", "null", /^body is not a JSON object$/],
    ["an array", "[]", /^body is not a JSON object$/],
    ["no incarnation", '{"Events":[]}', /^DocumentIncarnation is missing or not a non-negative integer$/],
    ["a text incarnation", '{"DocumentIncarnation":"1","Events":[]}', /^DocumentIncarnation is missing/],
    ["a fractional incarnation", '{"DocumentIncarnation":1.5,"Events":[]}', /^DocumentIncarnation is missing/],
    ["a negative incarnation", '{"DocumentIncarnation":-1,"Events":[]}', /^DocumentIncarnation is missing/],
    ["no Events", '{"DocumentIncarnation":1}', /^Events is missing or not an array$/],
    ["Events as an object", '{"DocumentIncarnation":1,"Events":{}}', /^Events is missing or not an array$/],
  ])("refuses a whole document that is not one (%s)", (_name, body, message) => {
    expect(documentProblem(parseScheduledEventsDocument, body)).toMatch(message);
  });

  it("sets each unreadable event apart with its place, id and raw form; the others are read in order", () => {
    const events = [
      { ...scheduled, EventId: "a" },
      { EventId: "b", EventStatus: "Gone" },
      "not an event",
      { ...scheduled, EventId: "c" },
      { ...scheduled, EventId: "A", EventStatus: "Started" },
      { EventId: " ", EventStatus: "Started" },
      null,
    ];
    const parsed = parseScheduledEventsDocument(JSON.stringify({ DocumentIncarnation: 4, Events: events }));
    expect(parsed.DocumentIncarnation).toBe(4);
    expect(parsed.Events.map((e) => e.EventId)).toEqual(["a", "c"]);
    expect(parsed.Malformed).toEqual([
      {
        index: 1,
        eventId: "b",
        reason: "event_status",
        problem: 'Events[1]: EventStatus is "Gone", expected Scheduled or Started',
        raw: events[1],
      },
      {
        index: 2,
        eventId: null,
        reason: "not_an_object",
        problem: "Events[2]: event is not a JSON object",
        raw: "not an event",
      },
      {
        index: 4,
        eventId: "A",
        reason: "duplicate_event_id",
        problem: "Events[4]: EventId A appears twice",
        raw: events[4],
      },
      {
        index: 5,
        eventId: null,
        reason: "event_id",
        problem: "Events[5]: EventId is missing or not a string",
        raw: events[5],
      },
      { index: 6, eventId: null, reason: "not_an_object", problem: "Events[6]: event is not a JSON object", raw: null },
    ]);
  });

  it("takes an event set apart as no claim on its id: a later event of that id is read", () => {
    const events = [
      { EventId: "a", EventStatus: "Gone" },
      { ...scheduled, EventId: "a" },
    ];
    const parsed = parseScheduledEventsDocument(JSON.stringify({ DocumentIncarnation: 1, Events: events }));
    expect(parsed.Events.map((e) => e.EventId)).toEqual(["a"]);
    expect(parsed.Malformed?.map((m) => m.index)).toEqual([0]);
  });

  it("keys EventIds by lower case as the collector does: the Kelvin sign's K is k's duplicate, ß is not SS", () => {
    const events = [
      { ...scheduled, EventId: "k1" },
      { ...scheduled, EventId: "\u212A1" },
      { ...scheduled, EventId: "ß1" },
      { ...scheduled, EventId: "SS1" },
    ];
    const parsed = parseScheduledEventsDocument(JSON.stringify({ DocumentIncarnation: 1, Events: events }));
    expect(parsed.Events.map((e) => e.EventId)).toEqual(["k1", "ß1", "SS1"]);
    expect(parsed.Malformed?.map((m) => [m.index, m.reason])).toEqual([[1, "duplicate_event_id"]]);
  });

  it("lets an error that is not about one event through (no event hides a fault of the parser)", () => {
    const events = [{ ...scheduled }];
    const bomb = JSON.stringify({ DocumentIncarnation: 1, Events: events });
    const original = Array.prototype.map;
    // Resources' mapping fails as a programming error would; it must not be filed as a malformed event.
    Array.prototype.map = function (this: unknown[]) {
      throw new TypeError("boom");
    } as typeof Array.prototype.map;
    try {
      expect(() => parseScheduledEventsDocument(bomb)).toThrow(TypeError);
    } finally {
      Array.prototype.map = original;
    }
  });
});

describe("parseCompute", () => {
  it("reads the VM identity, leaving a missing or non-string field empty", () => {
    const identity = parseCompute(
      JSON.stringify({
        name: "vm1",
        vmId: "id1",
        resourceId: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1",
        subscriptionId: "s",
        resourceGroupName: "rg",
        location: "westeurope",
        vmScaleSetName: "web-vmss",
        zone: "2",
        tags: "env:prod",
      }),
    );
    expect(identity).toEqual({
      VmName: "vm1",
      VmId: "id1",
      VmResourceId: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1",
      SubscriptionId: "s",
      ResourceGroup: "rg",
      Location: "westeurope",
      VmScaleSetName: "web-vmss",
      Zone: "2",
      Tags: { env: "prod" },
    });
    expect(parseCompute("{}")).toEqual({
      VmName: "",
      VmId: "",
      VmResourceId: "",
      SubscriptionId: "",
      ResourceGroup: "",
      Location: "",
      VmScaleSetName: "",
      Zone: "",
      Tags: {},
    });
    const nonStrings = parseCompute(JSON.stringify({ name: 7, vmScaleSetName: 5, zone: null, tags: ["env:prod"] }));
    expect(nonStrings).toMatchObject({ VmName: "", VmScaleSetName: "", Zone: "", Tags: {} });
  });

  it("refuses a body that is not JSON or not an object", () => {
    expect(documentProblem(parseCompute, "<html>")).toMatch(/^compute body is not JSON: /);
    expect(documentProblem(parseCompute, "null")).toBe("compute body is not a JSON object");
    expect(documentProblem(parseCompute, "3")).toBe("compute body is not a JSON object");
  });
});

describe("parseTags", () => {
  it("reads tagsList, skipping entries that are not name/value strings, first value of a name kept", () => {
    expect(
      parseTags(
        [
          { name: "env", value: "prod;a:b" },
          null,
          "x:y",
          { name: "n", value: 1 },
          { name: 2, value: "v" },
          { name: "", value: "empty name" },
          { name: "env", value: "second" },
          { name: "owner", value: "" },
        ],
        "ignored:yes",
      ),
    ).toEqual({ env: "prod;a:b", owner: "" });
    expect(parseTags([], "ignored:yes")).toEqual({});
  });

  it("reads the tags string: split at ';' and at each pair's first ':', a pair without ':' an empty value", () => {
    expect(parseTags(undefined, "env:prod;url:http://x;;flag;env:again;:nameless")).toEqual({
      env: "prod",
      url: "http://x",
      flag: "",
    });
    expect(parseTags(null, 5)).toEqual({});
    expect(parseTags("env:prod", undefined)).toEqual({});
  });

  it("keeps at most maxTags tags, the first ones", () => {
    const list = Array.from({ length: maxTags + 5 }, (_, i) => ({ name: `t${i}`, value: String(i) }));
    const tags = parseTags(list, undefined);
    expect(maxTags).toBe(50);
    expect(Object.keys(tags)).toHaveLength(maxTags);
    expect(tags[`t${maxTags - 1}`]).toBe(String(maxTags - 1));
    expect(tags).not.toHaveProperty(`t${maxTags}`);
    const text = Array.from({ length: maxTags + 1 }, (_, i) => `k${i}:v`).join(";");
    expect(Object.keys(parseTags(undefined, text))).toHaveLength(maxTags);
  });

  it("does not take a name that only an object's prototype has as already given", () => {
    expect(parseTags(undefined, "toString:yes;constructor:no")).toEqual({ toString: "yes", constructor: "no" });
  });
});
