// Decides what each target is owed for one fleet event (pure): one trigger, updates (not repeats) when more VMs join
// or the event starts, one resolve when it ends. The state it reads and returns is checkpointed with the partition.
import { deterministicUuid } from "@sef/contract/record-id.js";
import { affectedVms, isEnded, type FleetEvent } from "./fleet-event.js";
import type { TargetSelection } from "./rules.js";
import { own } from "./safe-dict.js";

export type NotificationAction = "trigger" | "update" | "resolve";

/** What one target has been told about one fleet event. */
export interface NotificationState {
  readonly triggeredAt: string | null;
  readonly lastSentAt: string | null;
  /** Affected VMs and overall status in the last message sent. */
  readonly notifiedVmCount: number;
  readonly notifiedStatus: string;
  readonly resolvedAt: string | null;
  /** Set when delivery was given up on (dead-lettered); nothing more is sent for this event to this target. */
  readonly deadLettered: string | null;
  /**
   * A send claimed by the partition's owner and saved before the request left (a fence: a second instance that
   * briefly holds the same partition sees the claim and does not send it too). Cleared when the outcome is saved.
   * A claim older than `staleClaimMs` was left by an instance that died mid-send: it is sent again.
   */
  readonly pending: { readonly action: NotificationAction; readonly claimedAtMs: number } | null;
  /** Notifications delivered to this target for this event (absent in states saved before it was kept: 0). */
  readonly sent?: number;
}

export const emptyNotificationState: NotificationState = {
  triggeredAt: null,
  lastSentAt: null,
  notifiedVmCount: 0,
  notifiedStatus: "",
  resolvedAt: null,
  deadLettered: null,
  pending: null,
  sent: 0,
};

/** Sequence number of the next notification to a target (1 for the first): unchanged until it is delivered. */
export function nextSequence(state: NotificationState): number {
  return (state.sent ?? 0) + 1;
}

/**
 * The idempotency key of one notification: a name-based UUID of (fleet event key, target, action, sequence). Every
 * attempt and every re-send of the same claim carries the same key (the sequence moves only on delivery), so a
 * receiver that remembers keys can drop a repeat; the next update of the same event gets a new key.
 */
export function notificationIdempotencyKey(
  eventKey: string,
  target: string,
  action: NotificationAction,
  sequence: number,
): string {
  return deterministicUuid("FleetNotification", eventKey, target, action, String(sequence));
}

export interface PlannedNotification {
  readonly target: string;
  readonly action: NotificationAction;
}

export interface PlanOptions {
  /** Shortest time between two updates of one event to one target, in milliseconds. */
  readonly updateIntervalMs: number;
  /** Age after which another instance's unfinished claim is taken over, in milliseconds. */
  readonly staleClaimMs: number;
  /**
   * An event that ended before any notification went out (all its records arrived together, e.g. after a partition
   * moved) is still reported — trigger, then resolve — if it ended at most this long ago; older history is not.
   */
  readonly lateNoticeMs: number;
}

/** The notifications due now for one event, given what each selected target was already told. */
export function planNotifications(
  event: FleetEvent,
  selections: readonly TargetSelection[],
  states: Readonly<Record<string, NotificationState>>,
  nowMs: number,
  options: PlanOptions,
): PlannedNotification[] {
  const planned: PlannedNotification[] = [];
  const vmCount = Math.max(affectedVms(event).length, 1);
  for (const { target, canNotifyNow } of selections) {
    const state = own(states, target) ?? emptyNotificationState;
    if (state.deadLettered !== null || state.resolvedAt !== null) continue;
    if (state.pending !== null) {
      if (nowMs - state.pending.claimedAtMs >= options.staleClaimMs)
        planned.push({ target, action: state.pending.action });
      continue;
    }
    if (isEnded(event)) {
      if (state.triggeredAt !== null) planned.push({ target, action: "resolve" });
      else if (canNotifyNow && nowMs - Date.parse(event.lastSeen) <= options.lateNoticeMs)
        planned.push({ target, action: "trigger" });
      continue;
    }
    if (!canNotifyNow) continue;
    if (state.triggeredAt === null) {
      planned.push({ target, action: "trigger" });
      continue;
    }
    const changed = vmCount > state.notifiedVmCount || event.status !== state.notifiedStatus;
    const lastSentMs = state.lastSentAt === null ? 0 : Date.parse(state.lastSentAt);
    if (changed && nowMs - lastSentMs >= options.updateIntervalMs) planned.push({ target, action: "update" });
  }
  return planned;
}

/** The state after a notification was delivered. */
export function afterDelivery(
  state: NotificationState,
  action: NotificationAction,
  event: FleetEvent,
  nowIso: string,
): NotificationState {
  return {
    ...state,
    triggeredAt: state.triggeredAt ?? nowIso,
    lastSentAt: nowIso,
    notifiedVmCount: Math.max(affectedVms(event).length, 1),
    notifiedStatus: event.status,
    resolvedAt: action === "resolve" ? nowIso : state.resolvedAt,
    pending: null,
    sent: (state.sent ?? 0) + 1,
  };
}
