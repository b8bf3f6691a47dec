// Waiting on an agent's polls as the simulator saw them, instead of sleeping "a few polls": the agent sends its next
// Scheduled Events request only after it has collected and committed the previous answer, so once `count` more
// requests have arrived, every answer before the last of them is in its store.
import type { Simulator } from "../../src/testbed/simulator/server.js";
import { waitFor } from "./wait.js";

const scheduledEventsPath = "/metadata/scheduledevents";

/** Scheduled Events requests the simulator has answered so far, whatever their status. */
export function scheduledEventsRequests(sim: Pick<Simulator, "status">): number {
  return Object.values(sim.status().requests[scheduledEventsPath] ?? {}).reduce((n, k) => n + k, 0);
}

/** Waits until the agent has polled `count` more times than it had when called (default: three). */
export async function waitForMorePolls(
  sim: Pick<Simulator, "status">,
  count = 3,
  options: { timeoutMs?: number; detail?: () => string } = {},
): Promise<void> {
  const target = scheduledEventsRequests(sim) + count;
  await waitFor(`${count} more Scheduled Events polls`, () => scheduledEventsRequests(sim) >= target, {
    timeoutMs: options.timeoutMs ?? 15_000,
    ...(options.detail ? { detail: options.detail } : {}),
  });
}
