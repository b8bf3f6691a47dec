// Three `sef fleet` processes share a hub; one is killed with SIGKILL mid-wave while it holds claims: its requests went
// to a receiver that never answers, so each is a claim saved as pending and never settled. Its partitions move to the
// others within the ownership expiry, and a survivor re-sends each of those claims, logged and counted as in doubt
// (claim_taken_over). Every maintenance event is paged once and resolved: none lost, and a repeat at the targets can
// only be a re-send in doubt — the victim itself delivered nothing, so none of its claims may show up twice.
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  inDoubtCounted,
  inDoubtResends,
  maintenanceWave,
  startCluster,
  startSilentReceiver,
  tally,
  type Cluster,
  type SilentReceiver,
} from "./cluster.js";
import { waitUntil } from "../helpers/wait.js";

let cluster: Cluster;
let silent: SilentReceiver;
const events = 60;
const victim = 0;

beforeAll(async () => {
  silent = await startSilentReceiver();
  cluster = await startCluster({
    instances: 3,
    partitions: 8,
    ownershipExpirationMs: 3000,
    targetsOf: (i) =>
      i === victim
        ? { pagerDutyUrl: `${silent.url}/v2/enqueue`, slackUrl: `${silent.url}/slack/services/T0/B0/X` }
        : undefined,
  });
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
  await silent?.close();
}, 60_000);

const until = (what: string, probe: () => boolean, timeoutMs: number): Promise<void> =>
  waitUntil(probe, timeoutMs, `${what}: ${JSON.stringify(tally(cluster.peer, events))}`);

/** The claims the victim had in flight, as `target|action|eventId`, from what its silent receiver got. */
function victimClaims(): Set<string> {
  return new Set(
    silent.received.map(({ path, body }) => {
      const text = JSON.stringify(body);
      const eventId = /00000000-0000-4000-8000-\d{12}/.exec(text)?.[0] ?? "?";
      if (path.startsWith("/v2/enqueue")) return `oncall|${(body as { event_action: string }).event_action}|${eventId}`;
      return `chat|${text.includes("Resolved") ? "resolve" : "trigger"}|${eventId}`;
    }),
  );
}

it("re-sends, in doubt, the claims of an instance killed with SIGKILL mid-send, and keeps one page per event and target", async () => {
  const t0 = Date.now();
  const scheduled = maintenanceWave(events, 4, 200, "Scheduled", t0);
  await cluster.send(scheduled.slice(0, scheduled.length / 2));
  // Kill only once the victim holds a pending claim: its first request has reached the receiver that never answers.
  await until("the victim's first request", () => silent.received.length > 0, 30_000);
  const exited = new Promise((resolve) => cluster.instances[victim]!.child.once("exit", resolve));
  cluster.kill(victim);
  await exited;
  const inFlight = victimClaims();
  await cluster.send(scheduled.slice(scheduled.length / 2));
  await until("every event paged", () => tally(cluster.peer, events).pagerDutyIncidents >= events, 60_000);
  await cluster.send(maintenanceWave(events, 4, 200, "Completed", t0 + 1000));
  await until(
    "every event resolved",
    () =>
      tally(cluster.peer, events).pagerDutyResolved === events && tally(cluster.peer, events).slackResolves >= events,
    60_000,
  );
  const result = tally(cluster.peer, events);
  expect(result).toMatchObject({ pagerDutyIncidents: events, pagerDutyResolved: events, slackResolves: events });
  expect(result.pagerDuty).toMatchObject({ triggersMissing: 0, resolvesMissing: 0, repeatedTriggers: 0 });
  expect(result.slack).toMatchObject({ triggersMissing: 0, resolvesMissing: 0 });

  // Each claim the victim left pending was taken over by a survivor, which logged it and counted it.
  const inDoubt = inDoubtResends(cluster);
  const takenOver = inDoubt.filter((d) => d.cause === "claim_taken_over");
  const takenOverKeys = new Set(takenOver.map((d) => `${d.target}|${d.action}|${d.eventId}`));
  expect(inFlight.size, "the victim's claims in flight").toBeGreaterThan(0);
  for (const claim of inFlight)
    expect(takenOverKeys.has(claim), `${claim} left by the victim, not re-sent in doubt`).toBe(true);
  const survivors = cluster.instances.filter((_, i) => i !== victim);
  const counted = (await Promise.all(survivors.map((s) => inDoubtCounted(s, "claim_taken_over")))).reduce(
    (a, b) => a + b,
    0,
  );
  expect(counted, "claim_taken_over counted as logged").toBe(takenOver.length);

  // A repeat at the targets can only be a re-send in doubt of a claim the victim did not hold (it delivered nothing):
  // one that a live instance handed over mid-send. So the repeats are bounded by those re-sends, and each is explained.
  const othersInDoubt = inDoubt.filter((d) => !inFlight.has(`${d.target}|${d.action}|${d.eventId}`));
  const explained = (target: string, action: string, id: string) =>
    othersInDoubt.some((d) => d.target === target && d.action === action && d.eventId === id);
  for (const id of result.slack.repeatedTriggerEvents)
    expect(explained("chat", "trigger", id), `Slack trigger of ${id} repeated without an in-doubt re-send`).toBe(true);
  for (const id of result.slack.repeatedResolveEvents)
    expect(explained("chat", "resolve", id), `Slack resolve of ${id} repeated without an in-doubt re-send`).toBe(true);
  for (const id of result.pagerDuty.repeatedTriggerRequestEvents)
    expect(explained("oncall", "trigger", id), `PagerDuty trigger of ${id} repeated without an in-doubt re-send`).toBe(
      true,
    );
  expect(
    result.slack.repeatedTriggers + result.slack.repeatedResolves + result.pagerDuty.repeatedTriggerRequests,
  ).toBeLessThanOrEqual(othersInDoubt.length);
}, 150_000);
