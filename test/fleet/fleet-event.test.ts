// The fold of one EventId's records into a fleet event (fleet-event.ts), directly: each field a record sets, what a late
// or repeated report never moves back, what a paged event keeps, and the overall status over every reporting VM.
import { describe, expect, it } from "vitest";
import {
  affectedVms,
  eventKeyOf,
  foldRecord,
  isEnded,
  overallStatus,
  reporterOf,
  type FleetEvent,
  type PagedField,
  type VmStatus,
} from "../../src/fleet/fleet-event.js";
import type { FleetTransition } from "../../src/fleet/record-input.js";
import type { EventStatus } from "../../src/contract/record.js";
import { transitionRecord } from "../helpers/records.js";

const eventId = "ABCDEF00-0000-4000-8000-000000000001";
const at = (minute: number) => new Date(Date.UTC(2026, 11, 7, 10, minute)).toISOString();

function record(overrides: Partial<FleetTransition> = {}): FleetTransition {
  return transitionRecord({ EventId: eventId, TimeGenerated: at(10), ...overrides }) as FleetTransition;
}

function vmStatus(status: EventStatus, overrides: Partial<VmStatus> = {}): VmStatus {
  return {
    vmName: "vm",
    vmId: "id",
    zone: "",
    vmScaleSetName: "",
    resourceGroup: "rg",
    affectsThisVm: true,
    status,
    lastSeen: at(0),
    ...overrides,
  };
}

describe("reporterOf", () => {
  it("keys a VM by its AgentId, else its VmId, else its VmName, else the RecordId", () => {
    const r = record({ AgentId: "agent", VmId: "vmid", VmName: "name", RecordId: "rid" });
    expect(reporterOf(r)).toBe("agent");
    expect(reporterOf({ ...r, AgentId: "" })).toBe("vmid");
    expect(reporterOf({ ...r, AgentId: "", VmId: "" })).toBe("name");
    expect(reporterOf({ ...r, AgentId: "", VmId: "", VmName: "" })).toBe("rid");
  });
});

describe("foldRecord", () => {
  it("opens an event from its first record, every field from the record", () => {
    const r = record({
      EventType: "Freeze",
      EventSource: "User",
      Description: "Host update",
      DurationInSeconds: 9,
      NotBefore: at(30),
      Resources: ["vm-b", "vm-a", "vm-b"],
      VmName: "vm-a",
      VmId: "id-a",
      Zone: "2",
      VmScaleSetName: "ss",
      ResourceGroup: "rg-a",
      Tags: { env: "prod" },
      AffectsThisVm: false,
      AgentId: "agent-a",
      EventStatus: "Started",
    });
    const event = foldRecord(undefined, r);
    expect(event).toEqual({
      key: eventId.toLowerCase(),
      eventId,
      eventType: "Freeze",
      eventSource: "User",
      description: "Host update",
      durationInSeconds: 9,
      notBefore: at(30),
      resources: ["vm-a", "vm-b"],
      vms: {
        "agent-a": {
          vmName: "vm-a",
          vmId: "id-a",
          zone: "2",
          vmScaleSetName: "ss",
          resourceGroup: "rg-a",
          tags: { env: "prod" },
          affectsThisVm: false,
          status: "Started",
          lastSeen: at(10),
        },
      },
      firstSeen: at(10),
      lastSeen: at(10),
      status: "Started",
    });
    expect(Object.getPrototypeOf(event.vms)).toBeNull();
    expect(Object.getPrototypeOf(event.vms["agent-a"]!.tags)).toBeNull();
    expect(eventKeyOf("AbC")).toBe("abc");
  });

  it("opens an event with empty type, description and source when its first record has none", () => {
    const event = foldRecord(undefined, record({ EventType: "", Description: "", EventSource: "" }));
    expect([event.eventType, event.description, event.eventSource]).toEqual(["", "", ""]);
  });

  it("keeps type, description and source when a record leaves them empty, and a NotBefore when it says null", () => {
    const first = foldRecord(undefined, record({ EventType: "Reboot", Description: "d", NotBefore: at(30) }));
    const next = foldRecord(
      first,
      record({ EventType: "", Description: "", EventSource: "", NotBefore: null, DurationInSeconds: 5 }),
    );
    expect(next).toMatchObject({
      eventType: "Reboot",
      description: "d",
      eventSource: "Platform",
      notBefore: at(30),
      durationInSeconds: 5,
    });
  });

  it("takes a new type, description and NotBefore while unpaged; once paged keeps them and says what was offered", () => {
    const first = foldRecord(undefined, record({ EventType: "Reboot", Description: "d", NotBefore: at(30) }));
    const changed = foldRecord(
      { ...first, vms: { ...first.vms } },
      record({ EventType: "Freeze", Description: "e", NotBefore: at(40) }),
    );
    expect(changed).toMatchObject({ eventType: "Freeze", description: "e", notBefore: at(40) });
    const kept: Array<[PagedField, string | null, string | null]> = [];
    const onKept = (field: PagedField, k: string | null, offered: string | null) => kept.push([field, k, offered]);
    const paged = foldRecord(first, record({ EventType: "Freeze", Description: "e", NotBefore: at(40) }), {
      paged: true,
      onKept,
    });
    expect(paged).toMatchObject({ eventType: "Reboot", description: "d", notBefore: at(30) });
    expect(kept).toEqual([
      ["eventType", "Reboot", "Freeze"],
      ["description", "d", "e"],
      ["notBefore", at(30), at(40)],
    ]);
    // The same values again, or empty ones, change nothing and note nothing.
    kept.length = 0;
    foldRecord(paged, record({ EventType: "Reboot", Description: "", NotBefore: null }), { paged: true, onKept });
    foldRecord(paged, record({ EventType: "Reboot", Description: "d", NotBefore: at(30) }), { paged: true, onKept });
    expect(kept).toEqual([]);
    // Unpaged, a change is applied without a note.
    foldRecord(paged, record({ EventType: "Redeploy" }), { paged: false, onKept });
    expect(kept).toEqual([]);
    expect(paged.eventType).toBe("Redeploy");
  });

  it("never moves a VM back: an older status is ignored, the same or a later one replaces its report", () => {
    let event = foldRecord(undefined, record({ EventStatus: "Started", TimeGenerated: at(10), Zone: "1" }));
    event = foldRecord(event, record({ EventStatus: "Scheduled", TimeGenerated: at(11), Zone: "2" }));
    expect(Object.values(event.vms).map((v) => [v.status, v.zone, v.lastSeen])).toEqual([["Started", "1", at(10)]]);
    event = foldRecord(event, record({ EventStatus: "Started", TimeGenerated: at(12), Zone: "3" }));
    expect(Object.values(event.vms).map((v) => [v.status, v.zone])).toEqual([["Started", "3"]]);
    event = foldRecord(event, record({ EventStatus: "Canceled", TimeGenerated: at(13) }));
    event = foldRecord(event, record({ EventStatus: "Completed", TimeGenerated: at(14) }));
    expect(Object.values(event.vms).map((v) => v.status)).toEqual(["Completed"]);
    expect(event.status).toBe("Completed");
    event = foldRecord(event, record({ EventStatus: "Started", TimeGenerated: at(15) }));
    expect(event.status).toBe("Completed");
  });

  it("unites Resources in order without repeats, and stretches first and last seen both ways", () => {
    let event = foldRecord(undefined, record({ Resources: ["vm-c", "vm-a"], TimeGenerated: at(10) }));
    event = foldRecord(event, record({ Resources: ["vm-b", "vm-a", "vm-b"], TimeGenerated: at(5), AgentId: "x" }));
    event = foldRecord(event, record({ Resources: [], TimeGenerated: at(20), AgentId: "y" }));
    event = foldRecord(event, record({ Resources: ["vm-a"], TimeGenerated: at(12), AgentId: "z" }));
    expect(event.resources).toEqual(["vm-a", "vm-b", "vm-c"]);
    expect([event.firstSeen, event.lastSeen]).toEqual([at(5), at(20)]);
  });

  it("recomputes the overall status as each VM reports: ended only when every reporting VM ended", () => {
    let event = foldRecord(undefined, record({ AgentId: "a", EventStatus: "Scheduled" }));
    event = foldRecord(event, record({ AgentId: "b", EventStatus: "Started" }));
    expect(event.status).toBe("Started");
    event = foldRecord(event, record({ AgentId: "b", EventStatus: "Completed" }));
    expect(event.status).toBe("Scheduled");
    expect(isEnded(event)).toBe(false);
    event = foldRecord(event, record({ AgentId: "a", EventStatus: "Canceled" }));
    expect(event.status).toBe("Completed");
    expect(isEnded(event)).toBe(true);
    // A repeated report (same status) leaves the status as it is.
    event = foldRecord(event, record({ AgentId: "a", EventStatus: "Canceled" }));
    expect(event.status).toBe("Completed");
  });

  it("looks at every VM's status only when the reporting VM's status changed", () => {
    // An event whose overall status no longer follows its VMs (as an older state may hold it): a report that changes
    // nothing leaves it; one that moves its VM recomputes it from every VM.
    const stale = {
      ...foldRecord(undefined, record({ AgentId: "a", EventStatus: "Scheduled" })),
      status: "Canceled" as const,
    };
    expect(foldRecord(stale, record({ AgentId: "a", EventStatus: "Scheduled" })).status).toBe("Canceled");
    expect(foldRecord(stale, record({ AgentId: "a", EventStatus: "Started" })).status).toBe("Started");
  });
});

describe("overallStatus", () => {
  it("is Started while any VM is, else Scheduled while any is, else Completed if any completed, else Canceled", () => {
    expect(overallStatus([vmStatus("Completed"), vmStatus("Started"), vmStatus("Scheduled")])).toBe("Started");
    expect(overallStatus([vmStatus("Completed"), vmStatus("Scheduled")])).toBe("Scheduled");
    expect(overallStatus([vmStatus("Canceled"), vmStatus("Completed")])).toBe("Completed");
    expect(overallStatus([vmStatus("Canceled")])).toBe("Canceled");
  });
});

describe("isEnded and affectedVms", () => {
  const event = (status: FleetEvent["status"], vms: VmStatus[] = []): FleetEvent => ({
    ...foldRecord(undefined, record()),
    status,
    vms: Object.fromEntries(vms.map((v, i) => [String(i), v])),
  });

  it("ends on Completed or Canceled only", () => {
    expect(["Scheduled", "Started", "Completed", "Canceled"].map((s) => isEnded(event(s as never)))).toEqual([
      false,
      false,
      true,
      true,
    ]);
  });

  it("lists the VMs that reported the event about themselves, by name", () => {
    const vms = [
      vmStatus("Scheduled", { vmName: "web-2" }),
      vmStatus("Scheduled", { vmName: "web-1" }),
      vmStatus("Scheduled", { vmName: "db-1", affectsThisVm: false }),
    ];
    expect(affectedVms(event("Scheduled", vms)).map((v) => v.vmName)).toEqual(["web-1", "web-2"]);
  });
});
