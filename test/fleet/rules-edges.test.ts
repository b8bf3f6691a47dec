// The fleet's rules and notification state judged on their own, at edges the service never produces today: an event
// no VM has reported yet (the service folds a record before it asks), and the empty state as the checkpoint saves it.
import { describe, expect, it } from "vitest";
import type { FleetEvent } from "../../src/fleet/fleet-event.js";
import { emptyNotificationState } from "../../src/fleet/notification-plan.js";
import { ruleMatches } from "../../src/fleet/rules.js";

const unreported: FleetEvent = {
  key: "e1",
  eventId: "E1",
  eventType: "Reboot",
  eventSource: "Platform",
  description: "",
  durationInSeconds: -1,
  notBefore: null,
  resources: ["web_0"],
  vms: {},
  firstSeen: "2026-11-23T10:00:00.000Z",
  lastSeen: "2026-11-23T10:00:00.000Z",
  status: "Scheduled",
};

describe("ruleMatches for an event no VM has reported", () => {
  it("passes a rule without resource-group or tag filters (absent or empty), and fails one that has them", () => {
    expect(ruleMatches({ name: "r", targets: ["ops"] }, unreported)).toBe(true);
    expect(ruleMatches({ name: "r", targets: ["ops"], resourceGroups: [], tags: {} }, unreported)).toBe(true);
    expect(ruleMatches({ name: "r", targets: ["ops"], resourceGroups: [] }, unreported)).toBe(true);
    expect(ruleMatches({ name: "r", targets: ["ops"], resourceGroups: ["rg"] }, unreported)).toBe(false);
    expect(ruleMatches({ name: "r", targets: ["ops"], tags: { env: "*" } }, unreported)).toBe(false);
  });
});

describe("the empty notification state", () => {
  it("is saved in the checkpoint as exactly these fields: nothing told, no status notified", () => {
    expect(JSON.parse(JSON.stringify(emptyNotificationState))).toEqual({
      triggeredAt: null,
      lastSentAt: null,
      notifiedVmCount: 0,
      notifiedStatus: "",
      resolvedAt: null,
      deadLettered: null,
      pending: null,
      sent: 0,
    });
  });
});
