// Three `sef fleet` processes share a hub; one is killed with SIGKILL mid-wave. Its partitions move to the others
// within the ownership expiry, and every maintenance event is paged once and resolved: none lost; a repeat can only
// be a notification the killed instance sent but could not record, re-sent (logged and counted as in doubt) by the
// new owner — and on PagerDuty such a repeat is merged by dedup_key, so it pages no one twice.
import { afterAll, beforeAll, expect, it } from "vitest";
import { inDoubtResends, maintenanceWave, startCluster, tally, type Cluster } from "./cluster.js";

let cluster: Cluster;
const events = 60;

beforeAll(async () => {
  cluster = await startCluster({ instances: 3, partitions: 8, ownershipExpirationMs: 3000 });
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

async function until(what: string, probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!probe()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(tally(cluster.peer, events))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it("keeps one page per event and target when an instance is killed with SIGKILL", async () => {
  const t0 = Date.now();
  const scheduled = maintenanceWave(events, 4, 200, "Scheduled", t0);
  await cluster.send(scheduled.slice(0, scheduled.length / 2));
  cluster.kill(0);
  await cluster.send(scheduled.slice(scheduled.length / 2));
  await until("every event paged", () => tally(cluster.peer, events).pagerDutyIncidents >= events, 60_000);
  await cluster.send(maintenanceWave(events, 4, 200, "Completed", t0 + 1000));
  await until("every event resolved", () => tally(cluster.peer, events).pagerDutyResolved === events && tally(cluster.peer, events).slackResolves >= events, 60_000);
  const result = tally(cluster.peer, events);
  // Pages are incidents: a repeated trigger for an open incident is merged by dedup_key and pages no one.
  expect(result).toMatchObject({ pagerDutyIncidents: events, pagerDutyResolved: events, slackResolves: events });
  expect(result.pagerDuty).toMatchObject({ triggersMissing: 0, resolvesMissing: 0, repeatedTriggers: 0 });
  expect(result.slack).toMatchObject({ triggersMissing: 0, resolvesMissing: 0 });
  // A repeat can only come from a request the killed instance sent but could not record: the new owner re-sent its
  // claim and said so. The claim fence keeps the live instances from doubling each other's sends.
  const inDoubt = inDoubtResends(cluster);
  const explained = (target: string, action: string, id: string) => inDoubt.some((d) => d.target === target && d.action === action && d.eventId === id);
  for (const id of result.slack.repeatedTriggerEvents) expect(explained("chat", "trigger", id), `Slack trigger of ${id} repeated without an in-doubt re-send`).toBe(true);
  for (const id of result.slack.repeatedResolveEvents) expect(explained("chat", "resolve", id), `Slack resolve of ${id} repeated without an in-doubt re-send`).toBe(true);
  expect(result.slack.repeatedTriggers + result.slack.repeatedResolves + result.pagerDuty.repeatedTriggerRequests).toBeLessThanOrEqual(2);
}, 150_000);
