// The fleet consumer's pure logic: reading records, folding many VMs' reports into one fleet event, rules (patterns,
// notice window, quiet hours), the notification plan (one trigger, updates, one resolve, claims), and each target's
// payload checked by the testbed peer's validators.
import { describe, expect, it } from "vitest";
import { foldRecord, type FleetEvent } from "../../src/fleet/fleet-event.js";
import {
  afterDelivery,
  emptyNotificationState,
  nextSequence,
  notificationIdempotencyKey,
  planNotifications,
  type NotificationAction,
  type NotificationState,
} from "../../src/fleet/notification-plan.js";
import { notificationRetryPolicy } from "../../src/fleet/partition-processor.js";
import { retryDelayMs } from "../../src/retry/policy.js";
import { readRecord, type FleetTransition } from "../../src/fleet/record-input.js";
import { globToRegExp, inQuietHours, selectTargets, tagsMatch, type Rule } from "../../src/fleet/rules.js";
import { buildTargetRequest, webhookSignature } from "../../src/fleet/targets/payloads.js";
import { slackText, truncateSlackText } from "../../src/fleet/targets/escape.js";
import { deadLetterBlobName } from "../../src/fleet/blob-storage.js";
import { pagerDutyProblems, slackProblems, teamsProblems } from "../../src/testbed/peers/notify/server.js";
import { fleetTransition, vm } from "./records.js";

const t0 = Date.parse("2026-11-23T10:00:00Z");
const vms = [vm(0), vm(1), vm(2)];
/** EventIds as IMDS writes them (GUIDs: the fleet reads nothing else). */
const [E1, E2, E3, E4, E5, E6, E7, E8, E9] = Array.from(
  { length: 9 },
  (_, i) => `5e0e0000-0000-4000-8000-00000000000${i + 1}`,
) as [string, string, string, string, string, string, string, string, string];

function fold(records: FleetTransition[]): FleetEvent {
  let event: FleetEvent | undefined;
  for (const r of records) event = foldRecord(event, r);
  return event!;
}

const ref = (action: NotificationAction) => ({
  action,
  idempotencyKey: notificationIdempotencyKey("e1", "t", action, 1),
});

function read(record: object): FleetTransition {
  const input = readRecord(Buffer.from(JSON.stringify(record)));
  if (input.kind !== "transition") throw new Error(`not a transition: ${JSON.stringify(input)}`);
  return input.record;
}

describe("readRecord", () => {
  it("names malformed JSON, unknown versions, contract failures; other record types are not errors", () => {
    expect(readRecord(Buffer.from("{not json"))).toMatchObject({ kind: "rejected", reason: "malformed-json" });
    expect(readRecord(Buffer.from("[1]"))).toMatchObject({ kind: "rejected", reason: "not-a-record" });
    const good = fleetTransition(E1, "Scheduled", vms[0]!, vms, { timeMs: t0 });
    expect(readRecord({ ...good, ContractVersion: 2 })).toMatchObject({ kind: "rejected", reason: "unknown-version" });
    expect(readRecord({ ...good, Resources: "web-vmss_0" })).toMatchObject({
      kind: "rejected",
      reason: "contract",
      detail: expect.stringContaining("Resources"),
    });
    expect(readRecord({ ...good, RecordType: "Heartbeat" })).toEqual({ kind: "other", recordType: "Heartbeat" });
    expect(readRecord(JSON.stringify(good))).toMatchObject({ kind: "transition" });
  });
  it("reads the VM's tags when the record has them; records of older agents (no Tags) and unreadable Tags are still folded", () => {
    const tagged = fleetTransition(E1, "Scheduled", { ...vms[0]!, tags: { env: "prod" } }, vms, { timeMs: t0 });
    expect(read(tagged).Tags).toEqual({ env: "prod" });
    const { Tags: _omitted, ...older } = tagged;
    expect(read(older).Tags).toBeUndefined();
    expect(read({ ...tagged, Tags: "env:prod" }).Tags).toBeUndefined();
    expect(fold([read(older)]).vms[older.AgentId]!.tags).toEqual({});
  });
});

describe("foldRecord", () => {
  it("folds many VMs' copies of one EventId into one event whose status ends only when every VM ended", () => {
    const scheduled = vms.map((v) => read(fleetTransition(E1, "Scheduled", v, vms, { timeMs: t0 })));
    let event = fold(scheduled);
    expect(event.status).toBe("Scheduled");
    expect(Object.keys(event.vms)).toHaveLength(3);
    expect(event.resources).toEqual(vms.map((v) => v.name).sort());
    event = foldRecord(event, read(fleetTransition(E1, "Started", vms[0]!, vms, { timeMs: t0 + 1000 })));
    expect(event.status).toBe("Started");
    for (const v of vms)
      event = foldRecord(event, read(fleetTransition(E1, "Completed", v, vms, { timeMs: t0 + 2000 })));
    expect(event.status).toBe("Completed");
    // A late, repeated Scheduled report never moves a VM back.
    event = foldRecord(event, read(fleetTransition(E1, "Scheduled", vms[1]!, vms, { timeMs: t0 + 3000 })));
    expect(event.status).toBe("Completed");
    expect(event.firstSeen).toBe(new Date(t0).toISOString());
  });
});

describe("rules", () => {
  const event = fold(
    vms.map((v) =>
      read(
        fleetTransition(E1, "Scheduled", v, vms, { timeMs: t0, notBefore: new Date(t0 + 30 * 60_000).toISOString() }),
      ),
    ),
  );
  it("match on type, source, VM and scale-set patterns and resource group", () => {
    const rules: Rule[] = [
      { name: "reboots", targets: ["pd"], eventTypes: ["Reboot"] },
      { name: "freezes", targets: ["slack"], eventTypes: ["Freeze"] },
      { name: "web", targets: ["teams"], vmNamePatterns: ["WEB-VMSS_*"], resourceGroups: ["RG-WEB"] },
      { name: "db", targets: ["hook"], scaleSetPatterns: ["db-*"] },
    ];
    expect(
      selectTargets(rules, event, t0)
        .map((s) => s.target)
        .sort(),
    ).toEqual(["pd", "teams"]);
  });
  it("match on resource tags from the records: every listed tag on one reporting VM, names case-insensitive, values as globs", () => {
    const prod = { ...vm(0), tags: { Env: "prod-eu", Team: "web" } };
    const dev = { ...vm(1), tags: { env: "dev" } };
    const affected = [prod, dev];
    const tagged = fold(affected.map((v) => read(fleetTransition(E2, "Scheduled", v, affected, { timeMs: t0 }))));
    const targetsOf = (tags: Record<string, string>) =>
      selectTargets([{ name: "t", targets: ["pd"], tags }], tagged, t0).map((s) => s.target);
    expect(targetsOf({ env: "prod*" })).toEqual(["pd"]);
    expect(targetsOf({ env: "PROD-??" })).toEqual(["pd"]);
    expect(targetsOf({ env: "prod*", team: "web" })).toEqual(["pd"]);
    expect(targetsOf({ env: "dev", team: "web" })).toEqual([]); // not on one VM together
    expect(targetsOf({ env: "staging" })).toEqual([]);
    expect(targetsOf({ owner: "*" })).toEqual([]); // a tag no VM carries
    expect(targetsOf({})).toEqual(["pd"]);
    // Events folded from records without tags match no tag rule, and every rule without one.
    expect(selectTargets([{ name: "t", targets: ["pd"], tags: { env: "*" } }], event, t0)).toEqual([]);
    expect(tagsMatch({ env: "prod" }, undefined)).toBe(false);
    expect(tagsMatch(undefined, undefined)).toBe(true);
  });
  it("hold a notification until the notice window is reached, and during quiet hours", () => {
    const rule: Rule = { name: "late", targets: ["pd"], noticeWithinSeconds: 600 };
    expect(selectTargets([rule], event, t0)).toEqual([{ target: "pd", canNotifyNow: false }]);
    expect(selectTargets([rule], event, t0 + 21 * 60_000)).toEqual([{ target: "pd", canNotifyNow: true }]);
    const quiet = { start: "22:00", end: "07:00", timeZone: "Europe/Berlin" };
    expect(inQuietHours(quiet, Date.parse("2026-11-23T21:30:00Z"))).toBe(true); // 22:30 in Berlin
    expect(inQuietHours(quiet, Date.parse("2026-11-23T06:30:00Z"))).toBe(false); // 07:30
    expect(
      selectTargets([{ name: "q", targets: ["pd"], quietHours: quiet }], event, Date.parse("2026-11-23T23:00:00Z"))[0]!
        .canNotifyNow,
    ).toBe(false);
  });
});

describe("rules: what each filter stops", () => {
  const inRg = (index: number, resourceGroup: string) => ({ ...vm(index), resourceGroup });
  const mixed = [inRg(0, "rg-web"), inRg(1, "rg-ops")];
  const event = fold(
    mixed.map((v) =>
      read(
        fleetTransition(E7, "Scheduled", v, mixed, {
          timeMs: t0,
          notBefore: new Date(t0 + 30 * 60_000).toISOString(),
        }),
      ),
    ),
  );
  const targetsOf = (rule: Omit<Rule, "name" | "targets">, e: FleetEvent = event) =>
    selectTargets([{ name: "r", targets: ["pd"], ...rule }], e, t0).map((s) => s.target);

  it("a resource-group list passes an event one of whose reporting VMs is in a listed group, and no other; an empty list passes any", () => {
    expect(targetsOf({ resourceGroups: ["RG-OPS"] })).toEqual(["pd"]);
    expect(targetsOf({ resourceGroups: ["rg-db", "rg-web"] })).toEqual(["pd"]);
    expect(targetsOf({ resourceGroups: ["rg-db"] })).toEqual([]);
    expect(targetsOf({ resourceGroups: [] })).toEqual(["pd"]);
  });

  it("VM-name patterns: a rule passes an event when any name matches any pattern; an empty list passes any, names left empty match none", () => {
    expect(targetsOf({ vmNamePatterns: ["web-vmss_1"] })).toEqual(["pd"]); // one of the names
    expect(targetsOf({ vmNamePatterns: ["nope-*", "*_0"] })).toEqual(["pd"]); // one of the patterns
    expect(targetsOf({ vmNamePatterns: ["db-*"] })).toEqual([]);
    expect(targetsOf({ vmNamePatterns: [] })).toEqual(["pd"]);
    const nameless = { ...vm(5), name: "" };
    const unnamed = fold([read({ ...fleetTransition(E8, "Scheduled", nameless, []), Resources: [], VmName: "" })]);
    expect(targetsOf({ vmNamePatterns: ["*"] }, unnamed)).toEqual([]);
    expect(targetsOf({}, unnamed)).toEqual(["pd"]);
  });

  it("glob patterns take every other character literally", () => {
    expect(globToRegExp("web.vmss_?").test("web.vmss_1")).toBe(true);
    expect(globToRegExp("web.vmss_?").test("webXvmss_1")).toBe(false);
    expect(globToRegExp("(a)+[b]").test("(A)+[B]")).toBe(true);
  });

  it("a notice window holds a Scheduled event until NotBefore is that close (inclusive), and never holds a Started one", () => {
    const rule: Rule = { name: "late", targets: ["pd"], noticeWithinSeconds: 600 };
    expect(selectTargets([rule], event, t0 + 20 * 60_000 - 1)).toEqual([{ target: "pd", canNotifyNow: false }]);
    expect(selectTargets([rule], event, t0 + 20 * 60_000)).toEqual([{ target: "pd", canNotifyNow: true }]);
    // Started records carry no NotBefore: the event keeps the one it was scheduled with, still half an hour away.
    let started = fold(
      mixed.map((v) =>
        read(
          fleetTransition(E9, "Scheduled", v, mixed, {
            timeMs: t0,
            notBefore: new Date(t0 + 30 * 60_000).toISOString(),
          }),
        ),
      ),
    );
    started = foldRecord(
      started,
      read(fleetTransition(E9, "Started", mixed[0]!, mixed, { timeMs: t0, notBefore: null })),
    );
    expect(started.status).toBe("Started");
    expect(started.notBefore).toBe(new Date(t0 + 30 * 60_000).toISOString());
    expect(selectTargets([rule], started, t0)).toEqual([{ target: "pd", canNotifyNow: true }]);
  });

  it("a target several matching rules send to may notify now when any one of them allows it, whatever their order", () => {
    const now: Rule = { name: "now", targets: ["pd"] };
    const held: Rule = { name: "held", targets: ["pd"], noticeWithinSeconds: 60 };
    expect(selectTargets([now, held], event, t0)).toEqual([{ target: "pd", canNotifyNow: true }]);
    expect(selectTargets([held, now], event, t0)).toEqual([{ target: "pd", canNotifyNow: true }]);
    expect(selectTargets([held, held], event, t0)).toEqual([{ target: "pd", canNotifyNow: false }]);
  });

  it.each([
    // minutes count: 12:30-14:00 UTC
    ["12:30-14:00 UTC, 12:15", "12:30", "14:00", "2026-11-23T12:15:00Z", false],
    ["12:30-14:00 UTC, 12:45", "12:30", "14:00", "2026-11-23T12:45:00Z", true],
    ["10:00-12:30 UTC, 12:15", "10:00", "12:30", "2026-11-23T12:15:00Z", true],
    ["10:00-12:30 UTC, 12:45", "10:00", "12:30", "2026-11-23T12:45:00Z", false],
    // a period that ends when it starts is empty, not the whole day
    ["12:00-12:00 UTC, 12:00", "12:00", "12:00", "2026-11-23T12:00:00Z", false],
    ["12:00-12:00 UTC, 18:00", "12:00", "12:00", "2026-11-23T18:00:00Z", false],
  ])("quiet hours %s", (_name, start, end, iso, expected) => {
    expect(
      inQuietHours({ start: start as string, end: end as string, timeZone: "UTC" }, Date.parse(iso as string)),
    ).toBe(expected);
  });
});

describe("rules: event sources and quiet hours", () => {
  const event = fold(
    vms.map((v) => read(fleetTransition(E3, "Scheduled", v, vms, { timeMs: t0, eventSource: "Platform" }))),
  );
  const at = (iso: string): number => Date.parse(iso);

  it("match on EventSource, case-insensitively; an empty list matches any", () => {
    const targetsOf = (eventSources: string[]) =>
      selectTargets([{ name: "s", targets: ["pd"], eventSources }], event, t0).map((s) => s.target);
    expect(targetsOf(["User"])).toEqual([]);
    expect(targetsOf(["platform"])).toEqual(["pd"]);
    expect(targetsOf(["User", "Platform"])).toEqual(["pd"]);
    expect(targetsOf([])).toEqual(["pd"]);
  });

  it.each([
    // quiet hours inside one day (start before end): start inclusive, end exclusive
    ["12:00-14:00 UTC, 11:59", { start: "12:00", end: "14:00", timeZone: "UTC" }, "2026-11-23T11:59:00Z", false],
    ["12:00-14:00 UTC, 12:00", { start: "12:00", end: "14:00", timeZone: "UTC" }, "2026-11-23T12:00:00Z", true],
    ["12:00-14:00 UTC, 13:59", { start: "12:00", end: "14:00", timeZone: "UTC" }, "2026-11-23T13:59:00Z", true],
    ["12:00-14:00 UTC, 14:00", { start: "12:00", end: "14:00", timeZone: "UTC" }, "2026-11-23T14:00:00Z", false],
    // across midnight, in a time zone (Berlin is UTC+1 in November)
    [
      "22:00-07:00 Berlin, 21:59",
      { start: "22:00", end: "07:00", timeZone: "Europe/Berlin" },
      "2026-11-23T20:59:00Z",
      false,
    ],
    [
      "22:00-07:00 Berlin, 22:00",
      { start: "22:00", end: "07:00", timeZone: "Europe/Berlin" },
      "2026-11-23T21:00:00Z",
      true,
    ],
    [
      "22:00-07:00 Berlin, 00:00",
      { start: "22:00", end: "07:00", timeZone: "Europe/Berlin" },
      "2026-11-23T23:00:00Z",
      true,
    ],
    [
      "22:00-07:00 Berlin, 06:59",
      { start: "22:00", end: "07:00", timeZone: "Europe/Berlin" },
      "2026-11-24T05:59:00Z",
      true,
    ],
    [
      "22:00-07:00 Berlin, 07:00",
      { start: "22:00", end: "07:00", timeZone: "Europe/Berlin" },
      "2026-11-24T06:00:00Z",
      false,
    ],
  ])("quiet hours %s", (_name, quiet, iso, expected) => {
    expect(inQuietHours(quiet, at(iso as string))).toBe(expected);
  });

  const options = { updateIntervalMs: 30_000, staleClaimMs: 60_000, lateNoticeMs: 3_600_000 };
  const quietRule: Rule = { name: "q", targets: ["pd"], quietHours: { start: "12:00", end: "14:00", timeZone: "UTC" } };
  const plan = (e: FleetEvent, states: Record<string, NotificationState>, iso: string) =>
    planNotifications(e, selectTargets([quietRule], e, at(iso)), states, at(iso), options);

  it("holds a trigger during quiet hours and sends it when they end", () => {
    const scheduled = fold([
      read(fleetTransition(E4, "Scheduled", vms[0]!, vms, { timeMs: at("2026-11-23T12:30:00Z") })),
    ]);
    expect(plan(scheduled, {}, "2026-11-23T12:30:00Z")).toEqual([]);
    expect(plan(scheduled, {}, "2026-11-23T13:59:00Z")).toEqual([]);
    expect(plan(scheduled, {}, "2026-11-23T14:00:00Z")).toEqual([{ target: "pd", action: "trigger" }]);
  });

  it("sends a resolve during quiet hours for an event already notified; one that began and ended inside them is told when they end", () => {
    let notified = fold([read(fleetTransition(E5, "Scheduled", vms[0]!, vms, { timeMs: at("2026-11-23T11:00:00Z") }))]);
    const told = afterDelivery(emptyNotificationState, "trigger", notified, "2026-11-23T11:00:00.000Z");
    notified = foldRecord(
      notified,
      read(fleetTransition(E5, "Canceled", vms[0]!, vms, { timeMs: at("2026-11-23T12:30:00Z") })),
    );
    expect(plan(notified, { pd: told }, "2026-11-23T12:30:00Z")).toEqual([{ target: "pd", action: "resolve" }]);

    // (within lateNoticeMs of the end of the quiet hours: an event that ended longer before is old history, not told)
    let unseen = fold([read(fleetTransition(E6, "Scheduled", vms[0]!, vms, { timeMs: at("2026-11-23T13:10:00Z") }))]);
    unseen = foldRecord(
      unseen,
      read(fleetTransition(E6, "Canceled", vms[0]!, vms, { timeMs: at("2026-11-23T13:40:00Z") })),
    );
    expect(plan(unseen, {}, "2026-11-23T13:40:00Z")).toEqual([]);
    expect(plan(unseen, {}, "2026-11-23T14:00:00Z")).toEqual([{ target: "pd", action: "trigger" }]);
    const toldAfter = afterDelivery(emptyNotificationState, "trigger", unseen, "2026-11-23T14:00:00.000Z");
    expect(plan(unseen, { pd: toldAfter }, "2026-11-23T14:00:01Z")).toEqual([{ target: "pd", action: "resolve" }]);
  });
});

describe("planNotifications", () => {
  const options = { updateIntervalMs: 30_000, staleClaimMs: 60_000, lateNoticeMs: 3_600_000 };
  const sel = [{ target: "pd", canNotifyNow: true }];
  // foldRecord updates the event in place: each fixture folds its own copy.
  const one = fold([read(fleetTransition(E1, "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
  const two = fold([0, 1].map((i) => read(fleetTransition(E1, "Scheduled", vms[i]!, vms, { timeMs: t0 }))));

  it("triggers once, updates when more VMs join (not sooner than the interval), resolves once", () => {
    expect(planNotifications(one, sel, {}, t0, options)).toEqual([{ target: "pd", action: "trigger" }]);
    const told: NotificationState = afterDelivery(emptyNotificationState, "trigger", one, new Date(t0).toISOString());
    expect(planNotifications(one, sel, { pd: told }, t0 + 60_000, options)).toEqual([]);
    expect(planNotifications(two, sel, { pd: told }, t0 + 10_000, options)).toEqual([]);
    expect(planNotifications(two, sel, { pd: told }, t0 + 30_000, options)).toEqual([
      { target: "pd", action: "update" },
    ]);
    let ended = fold([0, 1].map((i) => read(fleetTransition(E1, "Scheduled", vms[i]!, vms, { timeMs: t0 }))));
    for (const v of [vms[0]!, vms[1]!])
      ended = foldRecord(ended, read(fleetTransition(E1, "Canceled", v, vms, { timeMs: t0 })));
    expect(planNotifications(ended, sel, { pd: told }, t0, options)).toEqual([{ target: "pd", action: "resolve" }]);
    const resolved = afterDelivery(told, "resolve", ended, new Date(t0).toISOString());
    expect(planNotifications(ended, sel, { pd: resolved }, t0, options)).toEqual([]);
    // An event that ended before anyone was told is still reported (trigger, then resolve), unless it is old history.
    expect(planNotifications(ended, sel, {}, t0, options)).toEqual([{ target: "pd", action: "trigger" }]);
    const toldLate = afterDelivery(emptyNotificationState, "trigger", ended, new Date(t0).toISOString());
    expect(planNotifications(ended, sel, { pd: toldLate }, t0, options)).toEqual([{ target: "pd", action: "resolve" }]);
    expect(planNotifications(ended, sel, {}, t0 + 3_600_001, options)).toEqual([]);
  });

  it("tells a target nothing more once its notification was dead-lettered", () => {
    const gaveUp: NotificationState = { ...emptyNotificationState, deadLettered: new Date(t0).toISOString() };
    expect(planNotifications(one, sel, { pd: gaveUp }, t0, options)).toEqual([]);
  });

  it("updates when the event's status moves on, with the same VMs", () => {
    const told = afterDelivery(emptyNotificationState, "trigger", one, new Date(t0).toISOString());
    const started = foldRecord(
      fold([read(fleetTransition(E1, "Scheduled", vms[0]!, vms, { timeMs: t0 }))]),
      read(fleetTransition(E1, "Started", vms[0]!, vms, { timeMs: t0, notBefore: null })),
    );
    expect(planNotifications(started, sel, { pd: told }, t0 + 30_000, options)).toEqual([
      { target: "pd", action: "update" },
    ]);
  });

  it("remembers what it told: every affected VM, and one more notification sent (the next one's sequence)", () => {
    const told = afterDelivery(emptyNotificationState, "trigger", two, new Date(t0).toISOString());
    expect(told).toMatchObject({ notifiedVmCount: 2, notifiedStatus: "Scheduled", sent: 1 });
    expect(nextSequence(told)).toBe(2);
    expect(nextSequence(afterDelivery(told, "update", two, new Date(t0).toISOString()))).toBe(3);
    expect(planNotifications(two, sel, { pd: told }, t0 + 60_000, options)).toEqual([]);
  });

  it("tells of an event that ended before anyone was told up to lateNoticeMs after its last record, inclusive", () => {
    let ended = fold([read(fleetTransition(E1, "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    ended = foldRecord(ended, read(fleetTransition(E1, "Canceled", vms[0]!, vms, { timeMs: t0 })));
    expect(planNotifications(ended, sel, {}, t0 + 3_600_000, options)).toEqual([{ target: "pd", action: "trigger" }]);
    expect(planNotifications(ended, sel, {}, t0 + 3_600_001, options)).toEqual([]);
  });

  it("keys each notification by a name-based UUID that stays the same from release to release (a re-send after an upgrade is recognised)", () => {
    expect(notificationIdempotencyKey("e1", "t", "trigger", 1)).toBe("c9cf2ed8-bfb0-8b40-92e7-5037d7876549");
  });

  it("leaves another instance's fresh claim alone and takes over a stale one", () => {
    const claimed: NotificationState = { ...emptyNotificationState, pending: { action: "trigger", claimedAtMs: t0 } };
    expect(planNotifications(one, sel, { pd: claimed }, t0 + 59_000, options)).toEqual([]);
    expect(planNotifications(one, sel, { pd: claimed }, t0 + 60_000, options)).toEqual([
      { target: "pd", action: "trigger" },
    ]);
  });
});

describe("retry delays", () => {
  it("clamp a server's Retry-After into [min, max] (0 is not a licence to hammer)", () => {
    const policy = notificationRetryPolicy({ minDelayMs: 500, maxDelayMs: 60_000, giveUpAfterMs: 1 });
    expect(retryDelayMs(policy, 1, 0, 0)).toBe(500);
    expect(retryDelayMs(policy, 1, 0, 0.5)).toBe(625); // a hint is spread over up to half again
    expect(retryDelayMs(policy, 1, 3_600_000, 0.5)).toBe(60_000);
    expect(retryDelayMs(policy, 20, undefined, 1)).toBe(60_000);
  });
});

describe("payloads", () => {
  const event = fold(vms.map((v) => read(fleetTransition(E1, "Scheduled", v, vms, { timeMs: t0 }))));
  it("are what each target's API accepts, for every action", () => {
    for (const action of ["trigger", "update", "resolve"] as const) {
      expect(teamsProblems(JSON.parse(buildTargetRequest("teams", event, ref(action), t0, {}).body))).toEqual([]);
      expect(slackProblems(JSON.parse(buildTargetRequest("slack", event, ref(action), t0, {}).body))).toEqual([]);
      const pd = JSON.parse(
        buildTargetRequest("pagerduty", event, ref(action), t0, { routingKey: "R".repeat(32) }).body,
      );
      expect(pagerDutyProblems(pd)).toEqual([]);
      expect(pd.dedup_key).toBe(E1);
      expect(pd.event_action).toBe(action === "resolve" ? "resolve" : "trigger");
    }
  });
  it("stay within Slack's and Teams' limits with hundreds of VMs, and sign the generic webhook", () => {
    const many = Array.from({ length: 500 }, (_, i) => vm(i));
    let big: FleetEvent | undefined;
    for (const v of many) big = foldRecord(big, read(fleetTransition(E2, "Scheduled", v, many, { timeMs: t0 })));
    expect(slackProblems(JSON.parse(buildTargetRequest("slack", big!, ref("trigger"), t0, {}).body))).toEqual([]);
    expect(Buffer.byteLength(buildTargetRequest("teams", big!, ref("trigger"), t0, {}).body)).toBeLessThan(28 * 1024);
    const req = buildTargetRequest("webhook", event, ref("trigger"), t0, { hmacSecret: "s3cret" });
    expect(req.headers["x-sef-signature-256"]).toBe(webhookSignature(req.body, "s3cret"));
  });
  it("show a description's mentions and links as text: Slack mrkdwn escaped (<!channel>, <url|text>, &), Teams markdown escaped", () => {
    const hostile =
      "<!channel> Approve now: <https://evil.example/approve|Approve> & [Approve](https://evil.example) **now**";
    const forged = fold([
      read({ ...fleetTransition(E3, "Scheduled", vms[0]!, vms, { timeMs: t0 }), Description: hostile }),
    ]);
    const slack = JSON.parse(buildTargetRequest("slack", forged, ref("trigger"), t0, {}).body) as {
      text: string;
      blocks: Array<{ fields?: Array<{ text: string }> }>;
    };
    const mrkdwn = [slack.text, ...slack.blocks.flatMap((b) => (b.fields ?? []).map((f) => f.text))];
    expect(mrkdwn.join("\n")).not.toMatch(/[<>]/); // no mention, link or date token can open
    expect(
      mrkdwn.some((t) =>
        t.includes("&lt;!channel&gt; Approve now: &lt;https://evil.example/approve|Approve&gt; &amp;"),
      ),
    ).toBe(true);
    expect(slackProblems(slack)).toEqual([]);
    const teams = JSON.parse(buildTargetRequest("teams", forged, ref("trigger"), t0, {}).body);
    const facts = teams.attachments[0].content.body[1].facts as Array<{ title: string; value: string }>;
    expect(facts.find((f) => f.title === "Description")!.value).toBe(
      "\\<!channel\\> Approve now: \\<https://evil.example/approve|Approve\\> & \\[Approve\\]\\(https://evil.example\\) \\*\\*now\\*\\*",
    );
    expect(teamsProblems(teams)).toEqual([]);
    // A cut never leaves half an entity behind.
    expect(truncateSlackText(slackText("a<b"), 4)).toBe("a…");
  });
  it("name a dead letter inside dead-letter/<target>/ whatever the key: a ../ key is hashed, a GUID key kept", () => {
    expect(deadLetterBlobName("oncall", E1, "trigger")).toBe(`dead-letter/oncall/${E1}-trigger.json`);
    for (const [target, key] of [
      ["oncall", "../../other-container/x"],
      ["../..", "e1"],
      ["oncall", "a%2F..%2Fb"],
    ] as const) {
      const name = deadLetterBlobName(target, key, "resolve");
      expect(name).toMatch(/^dead-letter\/[A-Za-z0-9_-]+\/[A-Za-z0-9_-]+-resolve\.json$/);
      expect(name.split("/")).toHaveLength(3);
    }
    expect(deadLetterBlobName("oncall", "../x", "trigger")).not.toBe(deadLetterBlobName("oncall", "../y", "trigger"));
  });
  it("give the generic webhook one Idempotency-Key per event, target, action and sequence, the same on every re-send", () => {
    const key = notificationIdempotencyKey(
      "e1",
      "hook",
      "update",
      nextSequence({ ...emptyNotificationState, sent: 1 }),
    );
    expect(key).toBe(notificationIdempotencyKey("e1", "hook", "update", 2));
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const others = [
      notificationIdempotencyKey("e1", "hook", "update", 3),
      notificationIdempotencyKey("e1", "hook", "trigger", 2),
      notificationIdempotencyKey("e1", "other", "update", 2),
      notificationIdempotencyKey("e2", "hook", "update", 2),
    ];
    expect(new Set([key, ...others]).size).toBe(5);
    const first = buildTargetRequest("webhook", event, { action: "update", idempotencyKey: key }, t0, {});
    const again = buildTargetRequest("webhook", event, { action: "update", idempotencyKey: key }, t0 + 20_000, {});
    expect(first.headers["idempotency-key"]).toBe(`"${key}"`); // a structured-field string, as the IETF draft defines it
    expect(again.headers["idempotency-key"]).toBe(first.headers["idempotency-key"]);
    expect(JSON.parse(first.body)).toMatchObject({ notificationId: key, action: "update" });
    // Targets without idempotency get no such header.
    expect(
      buildTargetRequest("slack", event, { action: "update", idempotencyKey: key }, t0, {}).headers["idempotency-key"],
    ).toBeUndefined();
  });
});

describe("the example config", () => {
  it("is valid and is the one the fleet's docs show", async () => {
    const { readFileSync } = await import("node:fs");
    const { fleetSettingsSchema } = await import("../../src/fleet/settings.js");
    const text = readFileSync(new URL("../../infra/fleet/fleet.json", import.meta.url), "utf8");
    expect(fleetSettingsSchema.safeParse(JSON.parse(text)).success).toBe(true);
    const doc = readFileSync(new URL("../../src/fleet/README.md", import.meta.url), "utf8");
    const block = /An example config is `infra\/fleet\/fleet.json`[^\n]*\n\n```json\n([\s\S]*?)\n```/.exec(doc)?.[1];
    expect(JSON.parse(block ?? "null")).toEqual(JSON.parse(text));
  });
  it("takes rules on tags as {name: glob}", async () => {
    const { fleetSettingsSchema } = await import("../../src/fleet/settings.js");
    const base = {
      eventHubs: {
        connection: { connectionString: "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b;EntityPath=h" },
      },
      targets: [{ name: "a", type: "slack", urlEnv: "A" }],
    };
    const parsed = fleetSettingsSchema.parse({
      ...base,
      rules: [{ name: "prod", targets: ["a"], tags: { env: "prod*" } }],
    });
    expect(parsed.rules[0]!.tags).toEqual({ env: "prod*" });
    expect(
      fleetSettingsSchema.safeParse({ ...base, rules: [{ name: "bad", targets: ["a"], tags: { env: 1 } }] }).success,
    ).toBe(false);
  });
  it("refuses a rule naming a target that does not exist, naming the field", async () => {
    const { fleetSettingsSchema } = await import("../../src/fleet/settings.js");
    const parsed = fleetSettingsSchema.safeParse({
      eventHubs: {
        connection: { connectionString: "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b;EntityPath=h" },
      },
      targets: [{ name: "a", type: "slack", urlEnv: "A" }],
      rules: [{ name: "r", targets: ["b"] }],
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`)).toContain(
      'rules.0.targets.0: no target named "b"',
    );
  });
});

describe("the PagerDuty peer", () => {
  it("deduplicates as PagerDuty documents: a trigger for an open incident is merged, a resolve with none open is dropped, a trigger after the resolve pages again", async () => {
    const { startNotifyPeer } = await import("../../src/testbed/peers/notify/server.js");
    const peer = await startNotifyPeer();
    try {
      const post = (body: object) =>
        fetch(`${peer.url}/v2/enqueue`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const trigger = {
        routing_key: "R".repeat(32),
        event_action: "trigger",
        dedup_key: "E1",
        payload: { summary: "reboot", source: "vm", severity: "warning" },
      };
      for (const body of [
        trigger,
        trigger,
        { ...trigger, event_action: "resolve" },
        { ...trigger, event_action: "resolve" },
      ])
        expect((await post(body)).status).toBe(202);
      expect(peer.incidents()).toEqual([{ dedupKey: "E1", status: "resolved", triggers: 2, resolves: 1 }]);
      expect(peer.pagerDutyResolvesDropped()).toBe(1);
      await post(trigger);
      expect(peer.incidents().map((i) => i.status)).toEqual(["resolved", "triggered"]);
      expect(peer.requests("pagerduty")).toHaveLength(5);
    } finally {
      await peer.close();
    }
  });
});

describe("deliver", () => {
  it("marks a timed-out request as in doubt (the target may have it) and a refused connection as not", async () => {
    const { createServer } = await import("node:http");
    const { deliver } = await import("../../src/fleet/targets/deliver.js");
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", () => r()));
    const port = (silent.address() as { port: number }).port;
    try {
      const req = { body: "{}", headers: { "content-type": "application/json" } };
      expect(await deliver(`http://127.0.0.1:${port}/`, req, { timeoutMs: 200 })).toMatchObject({
        kind: "retry",
        inDoubt: true,
      });
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
      expect(await deliver(`http://127.0.0.1:${port}/`, req, { timeoutMs: 2000 })).toMatchObject({
        kind: "retry",
        reason: "network: ECONNREFUSED",
        inDoubt: false,
      });
    } finally {
      silent.close();
    }
  });
});
