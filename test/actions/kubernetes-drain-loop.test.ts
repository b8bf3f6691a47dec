// The drain loop (drain.ts) on the fake clock against an in-memory KubeApi of our own interface (no SDK involved): pods
// that come back, throttling waited out, failed evictions retried and named, stuck terminating pods, bare pods, and a
// drain resumed from its persisted progress. The same behaviour end to end: test/integration/kubernetes-pods.test.ts.
import { capturingLogger } from "../helpers/capturing-logger.js";
import { describe, expect, it } from "vitest";
import type { EvictionOutcome, KubeApi } from "../../src/agent/actions/kubernetes/client.js";
import {
  drainNode,
  inGroupsOf,
  type DrainOptions,
  type DrainProgress,
  type DrainResult,
} from "../../src/agent/actions/kubernetes/drain.js";
import type { EvictionMetricOutcome } from "../../src/agent/actions/kubernetes/metrics.js";
import { taintKeyFor } from "../../src/agent/actions/kubernetes/plan.js";
import { stuckTerminatingAllowanceMs, type PodView } from "../../src/agent/actions/kubernetes/pods.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { instantClock, type FakeClock } from "../helpers/fake-clock.js";
import { podView } from "./kubernetes-fixtures.js";

const eventId = "5DD55A71-95BE-4B7E-B8A2-9C4A2F7C8A11";
const taint = { key: taintKeyFor("Reboot"), value: eventId, effect: "NoSchedule" };

interface FakePod extends PodView {
  /** Wall ms at which the pod object disappears once its deletion began. */
  goneAtMs?: number;
  /** Its kubelet never confirms the deletion (the pod stays terminating). */
  neverStops?: boolean;
}

/** A node's pods in memory, served through the KubeApi interface the drain uses; evictions answer as scripted. */
class InMemoryNode {
  readonly pods: FakePod[] = [];
  /** Every eviction request: wall ms, pod name and uid, the grace asked for, and the answer. */
  readonly requests: Array<{ atMs: number; name: string; uid: string; kind: EvictionOutcome["kind"]; grace: number }> =
    [];
  /** Every DELETE: wall ms, pod name and the grace asked for. */
  readonly deletes: Array<{ atMs: number; name: string; grace: number }> = [];
  /** Answers to give before accepting, per pod name (consumed in order). */
  readonly script = new Map<string, EvictionOutcome[]>();
  /** Called when a pod object disappears (a controller may put one back). */
  onGone: (pod: FakePod) => void = () => undefined;
  private uids = 0;

  constructor(
    private readonly clock: FakeClock,
    private readonly stopsAfterMs = 500,
  ) {}

  add(name: string, over: Partial<FakePod> = {}): FakePod {
    const pod: FakePod = { ...podView(name, { uid: `uid-${++this.uids}` }), ...over };
    this.pods.push(pod);
    return pod;
  }

  private beginDeletion(pod: FakePod, graceSeconds: number): void {
    beginDeletionOf(pod, this.clock.now(), graceSeconds, this.stopsAfterMs);
  }

  api(): Pick<KubeApi, "listPods" | "evict" | "deletePod"> {
    return {
      listPods: async () => {
        const nowMs = this.clock.now();
        for (const pod of this.pods.filter((p) => p.goneAtMs !== undefined && p.goneAtMs <= nowMs)) {
          this.pods.splice(this.pods.indexOf(pod), 1);
          this.onGone(pod);
        }
        return this.pods.map(({ goneAtMs: _goneAtMs, neverStops: _neverStops, ...view }) => ({ ...view }));
      },
      evict: async (target, graceSeconds) => {
        const pod = this.pods.find((p) => p.namespace === target.namespace && p.name === target.name);
        const answer: EvictionOutcome =
          pod === undefined ? { kind: "gone" } : (this.script.get(target.name)?.shift() ?? { kind: "evicted" });
        const uid = pod?.uid ?? "";
        this.requests.push({ atMs: this.clock.now(), name: target.name, uid, kind: answer.kind, grace: graceSeconds });
        if (pod && answer.kind === "evicted") this.beginDeletion(pod, graceSeconds);
        return answer;
      },
      deletePod: async (target, graceSeconds) => {
        const pod = this.pods.find((p) => p.namespace === target.namespace && p.name === target.name);
        this.deletes.push({ atMs: this.clock.now(), name: target.name, grace: graceSeconds });
        if (pod === undefined || pod.uid !== target.uid) return false;
        this.beginDeletion(pod, graceSeconds);
        return true;
      },
    };
  }
}

/** A deletion begins, or a shorter grace shortens one under way (as the API server does; never a longer one). */
function beginDeletionOf(pod: FakePod, nowMs: number, graceSeconds: number, stopsAfterMs: number): void {
  const endMs = nowMs + graceSeconds * 1000;
  if (pod.deletionTimestampMs !== undefined && pod.deletionTimestampMs <= endMs) return;
  pod.deletionTimestampMs = endMs;
  if (pod.neverStops !== true)
    pod.goneAtMs = Math.min(
      pod.goneAtMs ?? Number.POSITIVE_INFINITY,
      nowMs + Math.min(graceSeconds * 1000, stopsAfterMs),
    );
}

interface Run {
  result: DrainResult;
  outcomes: EvictionMetricOutcome[];
  saved: DrainProgress[];
}

async function drain(node: InMemoryNode, clock: FakeClock, over: Partial<DrainOptions> = {}): Promise<Run> {
  const outcomes: EvictionMetricOutcome[] = [];
  const saved: DrainProgress[] = [];
  const result = await drainNode({
    api: node.api(),
    nodeName: "aks-np-0",
    self: undefined,
    evictEmptyDir: true,
    force: false,
    taint,
    deadlineMs: clock.now() + 120_000,
    endMs: clock.now() + 125_000,
    pdbRetryInitialMs: 1_000,
    pdbRetryMaxMs: 8_000,
    random: () => 1 - Number.EPSILON, // the jitter at its top: each backoff its full ceiling (1 s, then 2 s, …)
    podPollMs: 1_000,
    clock,
    logger: silentLogger(),
    stillWanted: () => true,
    onProgress: (progress) => saved.push(structuredClone(progress)),
    onEviction: (outcome) => outcomes.push(outcome),
    signal: new AbortController().signal,
    ...over,
  });
  return { result, outcomes, saved };
}

const tolerateAll = [{ operator: "Exists" }];

describe("drain loop against an in-memory node", () => {
  it("a pod that comes back tolerating sef's taint (new uid, same name) is not evicted again; one that does not is evicted once more", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-1");
    node.add("db-0", { controllerKinds: ["StatefulSet"] });
    let comebacks = 0;
    node.onGone = (gone) => {
      if (gone.name !== "db-0" || comebacks >= 2) return;
      comebacks++;
      // The first comeback does not tolerate the taint (bound by name, past the scheduler); the second tolerates everything.
      node.add("db-0", { controllerKinds: ["StatefulSet"], ...(comebacks === 2 ? { tolerations: tolerateAll } : {}) });
    };
    const { result } = await drain(node, clock);
    expect(result.outcome).toBe("drained");
    const dbRequests = node.requests.filter((r) => r.name === "db-0");
    expect(dbRequests.map((r) => `${r.uid}:${r.kind}`)).toEqual(["uid-2:evicted", "uid-3:evicted"]);
    expect(result).toMatchObject({
      evicted: ["apps/web-1", "apps/db-0", "apps/db-0"],
      podsArrivedTolerating: ["apps/db-0"],
    });
    expect(node.pods.map((p) => p.uid)).toEqual(["uid-4"]);
  });

  it("a pod that tolerates everything and was there at the start is evicted (kubectl drain does too)", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("agent", { tolerations: tolerateAll });
    const { result } = await drain(node, clock);
    expect(result).toMatchObject({ outcome: "drained", evicted: ["apps/agent"], podsArrivedTolerating: [] });
  });

  it("a throttled eviction (429 without a budget) pauses every eviction for its Retry-After, and is not a PDB refusal", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    for (let i = 0; i < 20; i++) node.add(`web-${i}`);
    node.script.set("web-0", [
      { kind: "throttled", retryAfterMs: 4_000, message: "Too many requests, please try again later." },
    ]);
    const startMs = clock.now();
    const { result, outcomes } = await drain(node, clock);
    expect(result).toMatchObject({ outcome: "drained", pdbBlocked: [], throttled: 1 });
    expect(result.evicted).toHaveLength(20);
    expect(outcomes.filter((o) => o === "throttled")).toHaveLength(1);
    expect(outcomes).not.toContain("pdb_refused");
    // The first group of 8 was in flight; the next group went only after the 4 s hint.
    const throttledAtMs = node.requests.find((r) => r.kind === "throttled")!.atMs;
    const later = node.requests.filter(
      (r) =>
        r.atMs > startMs &&
        r.name !== "web-0" &&
        !["web-1", "web-2", "web-3", "web-4", "web-5", "web-6", "web-7"].includes(r.name),
    );
    expect(Math.min(...later.map((r) => r.atMs)) - throttledAtMs).toBeGreaterThanOrEqual(4_000);
    expect(node.requests.filter((r) => r.name === "web-0").map((r) => r.atMs - throttledAtMs)).toEqual([
      0,
      expect.any(Number),
    ]);
    expect(node.requests.filter((r) => r.name === "web-0")[1]!.atMs - throttledAtMs).toBeGreaterThanOrEqual(4_000);
  });

  it("a Retry-After beyond the cap waits the cap (pdbRetryMaxMs), not the hint", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-0");
    node.script.set("web-0", [{ kind: "throttled", retryAfterMs: 3_600_000, message: "throttled" }]);
    await drain(node, clock, { pdbRetryMaxMs: 8_000 });
    const [first, second] = node.requests;
    expect(second!.atMs - first!.atMs).toBeGreaterThanOrEqual(8_000);
    expect(second!.atMs - first!.atMs).toBeLessThan(10_000);
  });

  it("403 and 500 are retried with backoff within the deadline, counted as errors, and named with their last status", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-0");
    node.add("db-0");
    node.script.set("web-0", [
      { kind: "error", status: 403, message: 'HTTP 403: pods "web-0" is forbidden' },
      { kind: "error", status: 500, message: "HTTP 500: This pod has more than one PodDisruptionBudget" },
    ]);
    node.script.set(
      "db-0",
      Array.from(
        { length: 1000 },
        () => ({ kind: "error", status: 500, message: "HTTP 500: always" }) as EvictionOutcome,
      ),
    );
    const deadlineMs = clock.now() + 30_000;
    const { result, outcomes } = await drain(node, clock, { deadlineMs });
    expect(result.outcome).toBe("incomplete");
    expect(result).toMatchObject({
      podsLeft: ["apps/db-0"],
      reason: "at its deadline",
      evicted: ["apps/web-0"],
      pdbBlocked: [],
      pdbHeldMs: 0, // failed evictions are retried, but no budget held a pod
    });
    expect(result.evictionErrors).toEqual([
      { pod: "apps/web-0", status: 500, message: "HTTP 500: This pod has more than one PodDisruptionBudget" },
      { pod: "apps/db-0", status: 500, message: "HTTP 500: always" },
    ]);
    const web = node.requests.filter((r) => r.name === "web-0");
    expect(web.map((r) => r.kind)).toEqual(["error", "error", "evicted"]);
    expect(web[2]!.atMs - web[1]!.atMs).toBeGreaterThanOrEqual(2_000); // 1 s, then 2 s
    const db = node.requests.filter((r) => r.name === "db-0");
    expect(db.length).toBeGreaterThan(3);
    expect(db.length).toBeLessThan(12); // backoff up to 8 s over 30 s, not a request per poll
    expect(Math.max(...db.map((r) => r.atMs))).toBeLessThanOrEqual(deadlineMs);
    expect(outcomes.filter((o) => o === "error")).toHaveLength(2 + db.length);
  });

  it("a pod stuck terminating past its grace is not waited for but leaves the drain incomplete, named; one within its grace is waited for", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    const startMs = clock.now();
    node.add("stuck", { deletionTimestampMs: startMs - stuckTerminatingAllowanceMs - 1_000 });
    node.add("finishing", { deletionTimestampMs: startMs + 20_000, goneAtMs: startMs + 15_000 });
    const { result } = await drain(node, clock);
    expect(result).toMatchObject({
      outcome: "incomplete",
      podsLeft: ["apps/stuck"],
      reason: "pods are stuck terminating",
      evicted: [],
      podsStuckTerminating: ["apps/stuck"],
    });
    expect(clock.now() - startMs).toBeGreaterThanOrEqual(15_000);
    expect(node.requests).toEqual([]);
  });

  it("a pod terminating within its grace at the start becomes stuck once its grace and the allowance pass", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    const startMs = clock.now();
    node.add("hangs", { deletionTimestampMs: startMs + 5_000 });
    const { result } = await drain(node, clock);
    expect(result).toMatchObject({ outcome: "incomplete", podsStuckTerminating: ["apps/hangs"] });
    expect(clock.now() - startMs).toBeGreaterThan(5_000 + stuckTerminatingAllowanceMs);
    expect(clock.now() - startMs).toBeLessThan(5_000 + stuckTerminatingAllowanceMs + 2_000);
  });

  it("bare pods are left and end the drain incomplete as soon as the rest is gone (not at the deadline); force evicts them", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-0");
    node.add("bare", { controllerKinds: [] });
    node.add("opted-out", { labels: { "sef.azure.com/drain": "skip" } });
    const startMs = clock.now();
    const { result } = await drain(node, clock);
    expect(result).toMatchObject({
      outcome: "incomplete",
      podsLeft: ["apps/bare"],
      podsWithoutController: ["apps/bare"],
      podsOptedOut: ["apps/opted-out"],
      evicted: ["apps/web-0"],
    });
    expect(clock.now() - startMs).toBeLessThan(5_000);

    const forced = new InMemoryNode(clock);
    forced.add("bare", { controllerKinds: [] });
    forced.add("opted-out", { labels: { "sef.azure.com/drain": "skip" } });
    expect((await drain(forced, clock, { force: true })).result).toMatchObject({
      outcome: "drained",
      evicted: ["apps/bare"],
      podsOptedOut: ["apps/opted-out"],
    });
  });

  it("resumed from its persisted progress (kill -9), the drain keeps the start's roster and never evicts a pod twice", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 60_000);
    node.add("slow-0"); // takes 60 s to stop
    node.add("web-1");
    const stop = new AbortController();
    const saved: DrainProgress[] = [];
    const first = drain(node, clock, {
      signal: stop.signal,
      onProgress: (progress) => saved.push(structuredClone(progress)),
    });
    for (let i = 0; i < 100 && !saved.some((p) => p.evicted.length === 2); i++)
      await new Promise((r) => setImmediate(r));
    stop.abort(new Error("killed"));
    const interrupted = await first;
    expect(interrupted.result.outcome).toBe("interrupted");
    const persisted = saved.at(-1)!;
    expect(persisted).toMatchObject({
      evicted: ["apps/slow-0", "apps/web-1"],
      evictedIds: ["uid-1", "uid-2"],
      roster: ["uid-1", "uid-2"],
    });
    // While the agent was down, a pod tolerating everything arrived.
    node.add("late-daemon", { tolerations: tolerateAll });
    const requestsBefore = node.requests.length;
    const resumed = await drain(node, clock, { resumeFrom: persisted });
    expect(resumed.result).toMatchObject({
      outcome: "drained",
      evicted: ["apps/slow-0", "apps/web-1"],
      podsArrivedTolerating: ["apps/late-daemon"],
    });
    expect(node.requests.length).toBe(requestsBefore);
  });

  it("pods with emptyDir volumes left (evictEmptyDir false) end the drain incomplete, named; with bare pods both are named", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-0");
    node.add("cache-0", { hasEmptyDir: true });
    node.add("bare", { controllerKinds: [] });
    const { result } = await drain(node, clock, { evictEmptyDir: false });
    expect(result).toMatchObject({
      outcome: "incomplete",
      podsLeft: ["apps/bare", "apps/cache-0"],
      reason:
        "pods without a controller are not evicted unless force is set; pods with emptyDir volumes are not evicted (evictEmptyDir is false)",
      podsWithEmptyDir: ["apps/cache-0"],
      evicted: ["apps/web-0"],
    });
  });

  it("lowest priority first; system-critical pods only once every other pod is gone", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 3_000);
    node.add("critical", { priorityClassName: "system-cluster-critical", priority: 2_000_000_000 });
    node.add("high", { priority: 1000 });
    node.add("node-critical", { priorityClassName: "system-node-critical" });
    node.add("low", { priority: -10 });
    node.add("by-value", { priority: 2_000_000_500 });
    const { result } = await drain(node, clock);
    expect(result.outcome).toBe("drained");
    expect(node.requests.map((r) => r.name)).toEqual(["low", "high", "node-critical", "critical", "by-value"]);
    const lastOther = node.requests.find((r) => r.name === "high")!.atMs;
    const firstCritical = node.requests.find((r) => r.name === "node-critical")!.atMs;
    expect(firstCritical - lastOther).toBeGreaterThanOrEqual(3_000); // after the others stopped
  });

  it("at the deadline under atDeadline delete: a pod still refused by its PDB and one still terminating are deleted with the time left as grace", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 600_000);
    node.add("db-0");
    node.add("slow", { terminationGracePeriodSeconds: 300, neverStops: true });
    node.script.set(
      "db-0",
      Array.from({ length: 1000 }, () => ({ kind: "pdb", message: "disruption budget" }) as EvictionOutcome),
    );
    const deadlineMs = clock.now() + 20_000;
    const { result } = await drain(node, clock, { deadlineMs, endMs: deadlineMs + 7_000, atDeadline: "delete" });
    expect(result).toMatchObject({
      outcome: "incomplete",
      reason: "at its deadline",
      podsLeft: ["apps/db-0", "apps/slow"],
      deleted: { podsDeleted: ["apps/db-0", "apps/slow"], graceSeconds: 7 },
    });
    expect(node.deletes.map((d) => [d.name, d.grace]).sort()).toEqual([
      ["db-0", 7],
      ["slow", 7],
    ]);
    expect(Math.min(...node.deletes.map((d) => d.atMs))).toBeGreaterThanOrEqual(deadlineMs);
    // Held by its budget from the first refusal to the last look, at the deadline (never evicted).
    expect(result.pdbHeldMs).toBe(20_000);
    // The slow pod's eviction had the grace the deadline allowed (20 s), not its own 300 s.
    expect(node.requests.find((r) => r.name === "slow")!.grace).toBe(20);

    const left = new InMemoryNode(clock, 600_000);
    left.add("db-0");
    left.script.set("db-0", [...(node.script.get("db-0") ?? [])]);
    const leave = await drain(left, clock, { deadlineMs: clock.now() + 5_000, endMs: clock.now() + 7_000 });
    expect(leave.result).toMatchObject({ outcome: "incomplete", podsLeft: ["apps/db-0"] });
    expect("deleted" in leave.result).toBe(false);
    expect(left.deletes).toEqual([]);
  });

  it("a sooner deadline of another event caps every grace, and a pod already terminating is asked again with the shorter one", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 600_000);
    const startMs = clock.now();
    node.add("old", { terminationGracePeriodSeconds: 600, deletionTimestampMs: startMs + 500_000 });
    node.add("web-0", { terminationGracePeriodSeconds: 600 });
    // A Preempt acts on the node too: its deadline is 25 s away, this drain's 15 min.
    const { result } = await drain(node, clock, {
      deadlineMs: startMs + 900_000,
      endMs: startMs + 905_000,
      graceDeadlineMs: () => startMs + 25_000,
    });
    expect(result.outcome).toBe("drained");
    expect(clock.now() - startMs).toBeLessThan(30_000);
    const web = node.requests.filter((r) => r.name === "web-0");
    const old = node.requests.filter((r) => r.name === "old");
    expect(web.map((r) => r.grace)).toEqual([25]);
    expect(old.map((r) => r.grace)).toEqual([25]); // asked once again, with the grace the sooner deadline leaves
    expect(result).toMatchObject({ evicted: ["apps/web-0"], graceShortened: ["apps/old"] });
  });

  it("says once what holds a pod: the first PDB refusal and the first throttle at info, repeats at debug, a new status at warn", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("db-0");
    node.add("web-0");
    node.add("api-0");
    const pdb = { kind: "pdb", message: "Cannot evict pod as it would violate the pod's disruption budget." } as const;
    node.script.set("db-0", [pdb, pdb, pdb]);
    const throttled = { kind: "throttled", retryAfterMs: 1_000, message: "Too many requests" } as const;
    node.script.set("web-0", [throttled, throttled]);
    const long = `HTTP 500: ${"x".repeat(300)}`;
    node.script.set("api-0", [
      { kind: "error", status: 500, message: long },
      { kind: "error", status: 500, message: long },
      { kind: "error", status: 403, message: "HTTP 403: forbidden" },
    ]);
    const { logger, lines } = capturingLogger();
    const { result } = await drain(node, clock, { logger });
    expect(result.outcome).toBe("drained");
    const said = lines.map((l) => [l.level, l.msg, l.pod]);
    const pdbLines = said.filter(
      ([, msg]) => msg === "a PodDisruptionBudget holds the pod; retrying until the deadline",
    );
    expect(pdbLines).toEqual([[30, pdbLines[0]![1], "apps/db-0"]]);
    expect(lines.find((l) => l.pod === "apps/db-0")).toMatchObject({ detail: pdb.message });
    const throttleMsg = "the API server throttled an eviction (429, no disruption budget); evictions wait";
    expect(lines.filter((l) => l.msg === throttleMsg).map((l) => [l.level, l.pod, l.retryAfterMs])).toEqual([
      [30, "apps/web-0", 1_000],
      [20, "apps/web-0", 1_000],
    ]);
    expect(lines.find((l) => l.msg === throttleMsg)).toMatchObject({ detail: "Too many requests" });
    const failed = lines.filter((l) => l.msg === "eviction failed; retrying until the deadline");
    expect(failed.map((l) => [l.level, l.pod, l.status])).toEqual([
      [40, "apps/api-0", 500],
      [20, "apps/api-0", 500],
      [40, "apps/api-0", 403],
    ]);
    expect(failed[0]).toMatchObject({ err: long });
    // What the progress names: the refused pod, its hold (first refusal to the accepted eviction), the last error cut.
    expect(result.pdbBlocked).toEqual(["apps/db-0"]);
    const db = node.requests.filter((r) => r.name === "db-0");
    expect(result.pdbHeldMs).toBe(db.at(-1)!.atMs - db[0]!.atMs);
    expect(result.pdbHeldMs).toBeGreaterThan(0);
    expect(result.evictionErrors).toEqual([{ pod: "apps/api-0", status: 403, message: "HTTP 403: forbidden" }]);
    expect(result.throttled).toBe(2);
  });

  it("an error message kept in the progress is cut at 200 characters", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("api-0");
    const long = `HTTP 500: ${"y".repeat(300)}`;
    node.script.set("api-0", [{ kind: "error", status: 500, message: long }]);
    const { result } = await drain(node, clock);
    expect(result.evictionErrors).toEqual([{ pod: "apps/api-0", status: 500, message: long.slice(0, 200) }]);
  });

  it("at the deadline under delete: more pods than one group (8), deleted in groups, named sorted; a refused deletion is left and said", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 600_000);
    const names = ["z-9", "b-1", "y-8", "c-2", "x-7", "d-3", "w-6", "e-4", "v-5", "a-0"];
    for (const name of names) node.add(name);
    const refusals = Array.from({ length: 1000 }, () => ({ kind: "pdb", message: "budget" }) as EvictionOutcome);
    for (const name of names) node.script.set(name, [...refusals]);
    const api = node.api();
    const deletePod: typeof api.deletePod = async (target, grace) => {
      if (target.name === "x-7") throw new Error("HTTP 403: forbidden");
      return api.deletePod(target, grace);
    };
    const { logger, lines } = capturingLogger();
    const deadlineMs = clock.now() + 10_000;
    const { result } = await drain(node, clock, {
      api: { ...api, deletePod },
      deadlineMs,
      endMs: deadlineMs + 4_000,
      atDeadline: "delete",
      logger,
    });
    const deleted = names.filter((n) => n !== "x-7").map((n) => `apps/${n}`);
    expect(result).toMatchObject({
      outcome: "incomplete",
      deleted: { podsDeleted: [...deleted].sort(), graceSeconds: 4 },
    });
    expect(node.deletes.map((d) => d.name).sort()).toEqual(names.filter((n) => n !== "x-7").sort());
    expect(lines.filter((l) => l.msg === "could not delete a pod at the drain's deadline; it is left")).toEqual([
      expect.objectContaining({ level: 40, pod: "apps/x-7" }),
    ]);
    expect(lines.filter((l) => l.msg === "the drain's deadline: pods still there deleted with the time left")).toEqual([
      expect.objectContaining({ level: 40, podsDeleted: [...deleted].sort(), graceSeconds: 4 }),
    ]);

    // Every deletion refused: nothing deleted, nothing said of deletions.
    const refused = new InMemoryNode(clock, 600_000);
    refused.add("db-0");
    refused.script.set("db-0", [...refusals]);
    const quiet = capturingLogger();
    const none = await drain(refused, clock, {
      api: { ...refused.api(), deletePod: async () => Promise.reject(new Error("HTTP 500")) },
      deadlineMs: clock.now() + 5_000,
      endMs: clock.now() + 8_000,
      atDeadline: "delete",
      logger: quiet.logger,
    });
    expect(none.result).toMatchObject({ outcome: "incomplete", deleted: { podsDeleted: [] } });
    expect(quiet.lines.map((l) => l.msg)).not.toContain(
      "the drain's deadline: pods still there deleted with the time left",
    );
  });

  it("under delete, a drain incomplete for another reason than its deadline (a bare pod) deletes nothing", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-0");
    node.add("bare", { controllerKinds: [] });
    const { result } = await drain(node, clock, { atDeadline: "delete" });
    expect(result).toMatchObject({ outcome: "incomplete", podsLeft: ["apps/bare"] });
    expect("deleted" in result).toBe(false);
    expect(node.deletes).toEqual([]);
  });

  it("more terminating pods than one group asked for a shorter grace: every one asked once; one refused is not named", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 600_000);
    const startMs = clock.now();
    for (let i = 0; i < 10; i++)
      node.add(`old-${i}`, { terminationGracePeriodSeconds: 600, deletionTimestampMs: startMs + 500_000 });
    node.script.set(
      "old-3",
      Array.from({ length: 2000 }, () => ({ kind: "error", status: 500, message: "HTTP 500" }) as EvictionOutcome),
    );
    const { result } = await drain(node, clock, {
      deadlineMs: startMs + 900_000,
      endMs: startMs + 905_000,
      graceDeadlineMs: () => startMs + 25_000,
    });
    const asked = node.requests.filter((r) => r.atMs === startMs).map((r) => r.name);
    expect(asked.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `old-${i}`).sort());
    expect(result.graceShortened).toHaveLength(9);
    expect(result.graceShortened).not.toContain("apps/old-3");
  });

  it("looks again at the poll interval, at a retry or the end of a pause when sooner, at the deadline when sooner still", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 600_000);
    node.add("web-0", { neverStops: true });
    node.add("db-0", { neverStops: true });
    node.script.set("db-0", [{ kind: "pdb", message: "budget" }]);
    node.script.set("web-0", [{ kind: "throttled", retryAfterMs: 3_000, message: "throttled" }]);
    const api = node.api();
    const looks: number[] = [];
    const selectors: Array<string | undefined> = [];
    const startMs = clock.now();
    const listPods: typeof api.listPods = async (nodeName, selector) => {
      looks.push(clock.now() - startMs);
      selectors.push(selector);
      return api.listPods(nodeName, selector);
    };
    // random 0.5: the throttle pause 3.75 s (the hint with sef's jitter); the PDB retry 1 s at most; the pods never stop.
    await drain(node, clock, {
      api: { ...api, listPods },
      podPollMs: 10_000,
      deadlineMs: startMs + 14_000,
      endMs: startMs + 20_000,
      random: () => 0.5,
    });
    // 0: both refused (web-0 throttled pauses all for 3.75 s, db-0's retry due within 1 s waits for the pause);
    // 3.75 s: both evicted; then the poll interval (10 s); then the deadline (14 s), sooner than another interval.
    expect(looks).toEqual([0, 3_750, 13_750, 14_000]);
    expect(selectors.every((s) => s === "")).toBe(true);
  });

  it("resumed from a progress that names PDB refusals and shortened graces: they stay named", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-0");
    node.add("db-1"); // refused once, evicted a second later: a hold shorter than the one resumed
    node.script.set("db-1", [{ kind: "pdb", message: "budget" }]);
    const resumeFrom: DrainProgress = {
      evicted: ["apps/db-0"],
      evictedIds: ["uid-db"],
      pdbBlocked: ["apps/db-0"],
      pdbHeldMs: 4_000,
      graceShortened: ["apps/old-0"],
      roster: [],
    };
    const { result } = await drain(node, clock, { resumeFrom, podSelector: "app=web" });
    expect(result).toMatchObject({
      outcome: "drained",
      evicted: ["apps/db-0", "apps/web-0", "apps/db-1"],
      evictedIds: ["uid-db", expect.any(String), expect.any(String)],
      pdbBlocked: ["apps/db-0", "apps/db-1"],
      pdbHeldMs: 4_000,
      graceShortened: ["apps/old-0"],
    });
  });
});

describe("drain loop: requests, saves and looks", () => {
  it("ten pods: each asked once, in groups of 8; the progress saved at the roster and after each group", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    for (let i = 0; i < 10; i++) node.add(`web-${i}`);
    const { result, saved } = await drain(node, clock);
    expect(result.outcome).toBe("drained");
    expect(node.requests.map((r) => r.name).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `web-${i}`).sort());
    expect(saved.map((p) => p.evicted.length)).toEqual([0, 8, 10]);
    expect(saved[0]!.roster).toHaveLength(10);
  });

  it("an eviction answered 'gone' saves nothing; the pod, still listed, is asked again at the next look", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    node.add("web-0");
    node.script.set("web-0", [{ kind: "gone" }]);
    const { result, saved, outcomes } = await drain(node, clock);
    expect(result).toMatchObject({ outcome: "drained", evicted: ["apps/web-0"] });
    expect(outcomes).toEqual(["gone", "evicted"]);
    expect(saved.map((p) => p.evicted.length)).toEqual([0, 1]);
  });

  it("a refused pod's retry, due before the next poll, is the next look", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 100);
    node.add("db-0");
    node.script.set("db-0", [{ kind: "pdb", message: "budget" }]);
    const api = node.api();
    const looks: number[] = [];
    const startMs = clock.now();
    const listPods: typeof api.listPods = async (nodeName, selector) => {
      looks.push(clock.now() - startMs);
      return api.listPods(nodeName, selector);
    };
    await drain(node, clock, { api: { ...api, listPods }, podPollMs: 10_000, random: () => 0 });
    // random 0: the first retry after 500 ms (equal jitter: half of 1 s); the pod then stops within 100 ms.
    expect(looks.slice(0, 2)).toEqual([0, 500]);
    expect(node.requests.map((r) => [r.kind, r.atMs - startMs])).toEqual([
      ["pdb", 0],
      ["evicted", 500],
    ]);
  });

  it("a refused pod deleted by someone else: its hold ends at the look that misses it, and its retry sets no look", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock, 10_000);
    const startMs = clock.now();
    node.add("web-0"); // evicted at once, stops 10 s later
    node.add("db-0", { goneAtMs: startMs + 1_500 }); // refused by its budget, then deleted by another hand
    node.script.set(
      "db-0",
      Array.from({ length: 100 }, () => ({ kind: "pdb", message: "budget" }) as EvictionOutcome),
    );
    const api = node.api();
    const looks: number[] = [];
    const listPods: typeof api.listPods = async (nodeName, selector) => {
      looks.push(clock.now() - startMs);
      return api.listPods(nodeName, selector);
    };
    const { result } = await drain(node, clock, { api: { ...api, listPods }, random: () => 0 });
    // random 0: the retries after 500 ms, then 1 s (at 1.5 s, when the pod is gone); then the poll interval.
    expect(looks).toEqual([0, 500, 1_500, 2_500, 3_500, 4_500, 5_500, 6_500, 7_500, 8_500, 9_500, 10_500]);
    expect(result).toMatchObject({ outcome: "drained", evicted: ["apps/web-0"], pdbBlocked: ["apps/db-0"] });
    expect(result.pdbHeldMs).toBe(1_500);
  });

  it("pods stuck terminating are named sorted", async () => {
    const clock = instantClock();
    const node = new InMemoryNode(clock);
    const longAgoMs = clock.now() - stuckTerminatingAllowanceMs - 1_000;
    node.add("zz-stuck", { deletionTimestampMs: longAgoMs });
    node.add("aa-stuck", { deletionTimestampMs: longAgoMs });
    const { result } = await drain(node, clock);
    expect(result).toMatchObject({ outcome: "incomplete", podsStuckTerminating: ["apps/aa-stuck", "apps/zz-stuck"] });
  });
});

describe("inGroupsOf: the rounds of requests sent at once", () => {
  it("groups of the size in order, the last one shorter, no empty group", () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => i);
    expect(inGroupsOf([], 8)).toEqual([]);
    expect(inGroupsOf(items(1), 8)).toEqual([[0]]);
    expect(inGroupsOf(items(8), 8)).toEqual([items(8)]);
    expect(inGroupsOf(items(9), 8)).toEqual([items(8), [8]]);
    expect(inGroupsOf(items(16), 8)).toEqual([items(8), [8, 9, 10, 11, 12, 13, 14, 15]]);
    expect(inGroupsOf(items(5), 2)).toEqual([[0, 1], [2, 3], [4]]);
  });
});
