// Each notification target's request body (pure): Teams (Adaptive Card for an incoming webhook / Workflows), Slack
// (incoming webhook, Block Kit), PagerDuty Events API v2 (dedup_key = EventId), and a generic signed webhook.
import { createHmac } from "node:crypto";
import type { FleetEvent } from "../fleet-event.js";
import type { NotificationAction } from "../notification-plan.js";
import { slackText, teamsText, truncateSlackText } from "./escape.js";
import { describeEvent } from "./message.js";

export type TargetType = "teams" | "slack" | "pagerduty" | "webhook";

export interface TargetRequest {
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** PagerDuty severities by EventType: a freeze is informational, anything that reboots or removes a VM is not. */
export function pagerDutySeverity(eventType: string): "critical" | "error" | "warning" | "info" {
  if (eventType === "Freeze") return "info";
  if (eventType === "Preempt" || eventType === "Terminate") return "error";
  return "warning";
}

export function teamsBody(event: FleetEvent, action: NotificationAction, nowMs: number): unknown {
  const m = describeEvent(event, action, nowMs);
  return {
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        contentUrl: null,
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: "1.4",
          body: [
            { type: "TextBlock", size: "Medium", weight: "Bolder", wrap: true, text: teamsText(m.title) },
            { type: "FactSet", facts: m.facts.map(([title, value]) => ({ title, value: teamsText(value) })) },
          ],
        },
      },
    ],
  };
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export function slackBody(event: FleetEvent, action: NotificationAction, nowMs: number): unknown {
  const m = describeEvent(event, action, nowMs);
  return {
    text: truncateSlackText(slackText(m.summary), 3000),
    blocks: [
      { type: "header", text: { type: "plain_text", text: truncate(m.title, 150) } },
      {
        type: "section",
        fields: m.facts
          .slice(0, 10)
          .map(([k, v]) => ({ type: "mrkdwn", text: truncateSlackText(`*${k}*\n${slackText(v)}`, 2000) })),
      },
    ],
  };
}

export function pagerDutyBody(
  event: FleetEvent,
  action: NotificationAction,
  nowMs: number,
  routingKey: string,
): unknown {
  const m = describeEvent(event, action, nowMs);
  const base = { routing_key: routingKey, dedup_key: event.eventId };
  if (action === "resolve") return { ...base, event_action: "resolve" };
  return {
    ...base,
    event_action: "trigger",
    payload: {
      summary: truncate(m.summary, 1024),
      source: event.resources[0] ?? "azure-scheduled-events",
      severity: pagerDutySeverity(event.eventType),
      timestamp: new Date(nowMs).toISOString(),
      component: event.eventType,
      group:
        [
          ...new Set(
            Object.values(event.vms)
              .map((v) => v.vmScaleSetName)
              .filter((s) => s !== ""),
          ),
        ].join(",") || undefined,
      class: "azure-scheduled-event",
      custom_details: Object.fromEntries(m.facts),
    },
  };
}

export function webhookBody(
  event: FleetEvent,
  action: NotificationAction,
  nowMs: number,
  notificationId: string,
): unknown {
  const m = describeEvent(event, action, nowMs);
  return { notificationId, action, title: m.title, event, sentAt: new Date(nowMs).toISOString() };
}

/**
 * The `Idempotency-Key` header value (IETF httpapi draft: a structured-field string, so quoted) for a notification id.
 * The id is a UUID: nothing in it needs escaping.
 */
export function idempotencyKeyHeader(notificationId: string): string {
  return `"${notificationId}"`;
}

/** Signature header of the generic webhook: `sha256=` HMAC of the body with the shared secret. */
export function webhookSignature(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export interface TargetSecrets {
  /** PagerDuty integration (routing) key. */
  readonly routingKey?: string;
  /** Shared secret that signs the generic webhook's body. */
  readonly hmacSecret?: string;
}

/** Which notification a request carries: its action and the id every attempt and re-send of it shares. */
export interface NotificationRef {
  readonly action: NotificationAction;
  readonly idempotencyKey: string;
}

/** The request one target gets for one notification. */
export function buildTargetRequest(
  type: TargetType,
  event: FleetEvent,
  notification: NotificationRef,
  nowMs: number,
  secrets: TargetSecrets,
): TargetRequest {
  const { action, idempotencyKey } = notification;
  const json = { "content-type": "application/json" };
  switch (type) {
    case "teams":
      return { body: JSON.stringify(teamsBody(event, action, nowMs)), headers: json };
    case "slack":
      return { body: JSON.stringify(slackBody(event, action, nowMs)), headers: json };
    case "pagerduty":
      return { body: JSON.stringify(pagerDutyBody(event, action, nowMs, secrets.routingKey ?? "")), headers: json };
    case "webhook": {
      const body = JSON.stringify(webhookBody(event, action, nowMs, idempotencyKey));
      const headers: Record<string, string> = {
        ...json,
        "idempotency-key": idempotencyKeyHeader(idempotencyKey),
        "x-sef-fleet-event": event.key,
        "x-sef-fleet-action": action,
      };
      if (secrets.hmacSecret) headers["x-sef-signature-256"] = webhookSignature(body, secrets.hmacSecret);
      return { body, headers };
    }
  }
}
