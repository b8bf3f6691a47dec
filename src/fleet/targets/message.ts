// The words of a fleet notification, shared by every target's payload (pure): one summary line and the facts.
import { affectedVms, type FleetEvent } from "../fleet-event.js";
import type { NotificationAction } from "../notification-plan.js";

export interface MessageFacts {
  readonly title: string;
  readonly summary: string;
  readonly facts: ReadonlyArray<readonly [string, string]>;
}

const maxNamesListed = 20;

function listNames(names: readonly string[]): string {
  if (names.length <= maxNamesListed) return names.join(", ");
  return `${names.slice(0, maxNamesListed).join(", ")} and ${names.length - maxNamesListed} more`;
}

function noticeLeft(notBefore: string | null, nowMs: number): string {
  if (notBefore === null) return "now";
  const seconds = Math.round((Date.parse(notBefore) - nowMs) / 1000);
  if (seconds <= 0) return "now";
  if (seconds < 120) return `in ${seconds} s`;
  if (seconds < 7200) return `in ${Math.round(seconds / 60)} min`;
  return `in ${Math.round(seconds / 3600)} h`;
}

export function describeEvent(event: FleetEvent, action: NotificationAction, nowMs: number): MessageFacts {
  const vms = affectedVms(event);
  const names = vms.length > 0 ? vms.map((v) => v.vmName || v.vmId) : [...event.resources];
  const zones = [...new Set(vms.map((v) => v.zone).filter((z) => z !== ""))].sort();
  const scaleSets = [...new Set(vms.map((v) => v.vmScaleSetName).filter((s) => s !== ""))].sort();
  const verb =
    action === "resolve"
      ? event.status === "Canceled"
        ? "canceled"
        : "completed"
      : event.status === "Started"
        ? "started"
        : `scheduled ${noticeLeft(event.notBefore, nowMs)}`;
  const prefix = action === "update" ? "Update: " : action === "resolve" ? "Resolved: " : "";
  const title = `${prefix}${event.eventType || "Maintenance"} ${verb} on ${names.length} VM${names.length === 1 ? "" : "s"}`;
  const facts: Array<readonly [string, string]> = [
    ["EventId", event.eventId],
    ["Type", event.eventType],
    ["Status", event.status],
    ["NotBefore", event.notBefore ?? "(started)"],
    ["VMs", listNames(names)],
  ];
  if (zones.length > 0) facts.push(["Zones", zones.join(", ")]);
  if (scaleSets.length > 0) facts.push(["Scale sets", scaleSets.join(", ")]);
  if (event.eventSource) facts.push(["Source", event.eventSource]);
  if (event.durationInSeconds >= 0) facts.push(["Expected impact", `${event.durationInSeconds} s`]);
  if (event.description) facts.push(["Description", event.description]);
  return { title, summary: `${title}: ${listNames(names)} (EventId ${event.eventId})`, facts };
}
