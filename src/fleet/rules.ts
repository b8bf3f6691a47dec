// Which notification targets a fleet event goes to (pure): rules match on EventType, EventSource, VM and scale-set
// name patterns, resource group, resource tags, the notice left before NotBefore, and hold back during quiet hours.
import type { FleetEvent } from "./fleet-event.js";

export interface QuietHours {
  /** Local time of day the quiet period starts, `HH:MM`. */
  readonly start: string;
  /** Local time of day it ends, `HH:MM` (may be earlier than start: the period crosses midnight). */
  readonly end: string;
  /** IANA time zone of start/end (default UTC). */
  readonly timeZone: string;
}

export interface Rule {
  readonly name: string;
  /** Target names this rule sends to. */
  readonly targets: readonly string[];
  /** EventType values (any when absent or empty). */
  readonly eventTypes?: readonly string[];
  /** EventSource values (any when absent or empty). */
  readonly eventSources?: readonly string[];
  /** Glob patterns (`*`, `?`, case-insensitive) on the affected VM names. */
  readonly vmNamePatterns?: readonly string[];
  /** Glob patterns on the reporting VMs' scale-set names. */
  readonly scaleSetPatterns?: readonly string[];
  /** Resource groups of the reporting VMs (case-insensitive). */
  readonly resourceGroups?: readonly string[];
  /**
   * Resource tags from the records: `{name: glob}`. Matches when one reporting VM carries every listed tag (name
   * case-insensitive, as Azure treats tag names) with a value matching its glob (`*`, `?`, case-insensitive).
   */
  readonly tags?: Readonly<Record<string, string>>;
  /** Notify only once NotBefore is at most this many seconds away (events already Started always qualify). */
  readonly noticeWithinSeconds?: number;
  readonly quietHours?: QuietHours;
}

export function globToRegExp(pattern: string): RegExp {
  const escaped = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${escaped}$`, "i");
}

function anyMatch(patterns: readonly string[] | undefined, values: readonly string[]): boolean {
  if (!patterns || patterns.length === 0) return true;
  const regexps = patterns.map(globToRegExp);
  return values.some((v) => regexps.some((r) => r.test(v)));
}

function inList(list: readonly string[] | undefined, value: string): boolean {
  return !list || list.length === 0 || list.some((x) => x.toLowerCase() === value.toLowerCase());
}

/** Whether a VM's tags satisfy every `{name: glob}` of a rule (none listed: any VM does). */
export function tagsMatch(
  wanted: Readonly<Record<string, string>> | undefined,
  tags: Readonly<Record<string, string>> | undefined,
): boolean {
  const entries = Object.entries(wanted ?? {});
  if (entries.length === 0) return true;
  const byName = new Map(Object.entries(tags ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  return entries.every(([name, pattern]) => {
    const value = byName.get(name.toLowerCase());
    return value !== undefined && globToRegExp(pattern).test(value);
  });
}

/** Whether the rule selects this event at all (what it is and where), ignoring timing. */
export function ruleMatches(rule: Rule, event: FleetEvent): boolean {
  const reporters = Object.values(event.vms);
  const vmNames = [...event.resources, ...reporters.map((v) => v.vmName)].filter((n) => n !== "");
  return (
    inList(rule.eventTypes, event.eventType) &&
    inList(rule.eventSources, event.eventSource) &&
    anyMatch(rule.vmNamePatterns, vmNames) &&
    anyMatch(
      rule.scaleSetPatterns,
      reporters.map((v) => v.vmScaleSetName),
    ) &&
    (!rule.resourceGroups ||
      rule.resourceGroups.length === 0 ||
      reporters.some((v) => inList(rule.resourceGroups, v.resourceGroup))) &&
    (Object.keys(rule.tags ?? {}).length === 0 || reporters.some((v) => tagsMatch(rule.tags, v.tags)))
  );
}

/** Minutes after local midnight in `timeZone` at `nowMs`. */
export function minuteOfDay(nowMs: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(new Date(nowMs));
  const hour = Number(parts.find((p) => p.type === "hour")?.value ?? 0);
  const minute = Number(parts.find((p) => p.type === "minute")?.value ?? 0);
  return hour * 60 + minute;
}

function parseClock(hhmm: string): number {
  const [h, m] = hhmm.split(":").map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
}

export function inQuietHours(quiet: QuietHours | undefined, nowMs: number): boolean {
  if (!quiet) return false;
  const now = minuteOfDay(nowMs, quiet.timeZone);
  const start = parseClock(quiet.start);
  const end = parseClock(quiet.end);
  return start <= end ? now >= start && now < end : now >= start || now < end;
}

/** Whether the notice window lets the rule notify now. */
export function noticeAllows(rule: Rule, event: FleetEvent, nowMs: number): boolean {
  if (rule.noticeWithinSeconds === undefined || event.status !== "Scheduled" || event.notBefore === null) return true;
  return Date.parse(event.notBefore) - nowMs <= rule.noticeWithinSeconds * 1000;
}

export interface TargetSelection {
  readonly target: string;
  /** The rule may notify now (notice window reached, outside quiet hours). */
  readonly canNotifyNow: boolean;
}

/** Targets selected by any matching rule; a target may notify now if any of its matching rules allows it. */
export function selectTargets(rules: readonly Rule[], event: FleetEvent, nowMs: number): TargetSelection[] {
  const byTarget = new Map<string, boolean>();
  for (const rule of rules) {
    if (!ruleMatches(rule, event)) continue;
    const now = noticeAllows(rule, event, nowMs) && !inQuietHours(rule.quietHours, nowMs);
    for (const target of rule.targets) byTarget.set(target, (byTarget.get(target) ?? false) || now);
  }
  return [...byTarget].map(([target, canNotifyNow]) => ({ target, canNotifyNow }));
}
