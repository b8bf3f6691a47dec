// `npm run bench`: detection latency, idle footprint (and beside a Python loop), churn, sink drain rates, the Event Hubs connection budget of a fleet and
// `sef fleet` (notification latency end to end; three instances with one killed);
// prints a table and writes bench-results.json.
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { benchDetectionLatency } from "./agent-latency.js";
import { benchIdleFootprint } from "./idle-footprint.js";
import { benchEventHubsBareSdkKeyed, benchEventHubsDrain } from "./eventhubs-drain.js";
import { benchLogAnalyticsDrain } from "./loganalytics-drain.js";
import { benchEventHubsFleet, fleetOptionsFromEnv } from "./eventhubs-fleet.js";
import { benchLogAnalyticsWave, waveOptionsFromEnv } from "./loganalytics-wave.js";
import { benchFleetEndToEnd, benchFleetScale } from "./fleet.js";
import { benchFleetFlood } from "./fleet-flood.js";
import { benchStoreLookups } from "./store-lookups.js";
import { benchArtifact } from "./artifact.js";
import { benchIdleVsPython, idleOptionsFromEnv } from "./idle-vs-python.js";
import { benchChurnSoak, benchCommitTime } from "./churn-soak.js";
import { benchKubernetesClientOptions } from "./kubernetes-client-options.js";
import { benchKubernetesCordonLatency, benchKubernetesDrain, benchKubernetesIdleRss } from "./kubernetes-drain.js";
import { benchKubernetesClusterApproval } from "./kubernetes-cluster.js";

const idleSeconds = Number(process.env.SEF_BENCH_IDLE_SECONDS ?? 60);
/** Changes per poll interval: p99 needs enough of them to be more than the maximum. */
const samplesFor = (intervalMs: number): number =>
  Number(process.env.SEF_BENCH_LATENCY_SAMPLES ?? (intervalMs >= 1000 ? 60 : 150));
const drainRecords = Number(process.env.SEF_BENCH_DRAIN_RECORDS ?? 100_000);

const results: Record<string, unknown> = {
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  },
  at: new Date().toISOString(),
};

function report(name: string, value: unknown, verdict?: boolean): void {
  results[name] = value;
  console.log(
    `${name}${verdict === undefined ? "" : verdict ? " [meets target]" : " [MISSES target]"}: ${JSON.stringify(value)}`,
  );
}

// `sef-fleet` under 100,000 forged EventIds: memory bounded, real events paged within the usual p99 (target 5 s).
// SEF_BENCH_ONLY=fleet-flood runs just this part.
async function benchFleetFloodPart(): Promise<void> {
  const flood = await benchFleetFlood(
    Number(process.env.SEF_BENCH_FLEET_FLOOD ?? 100_000),
    Number(process.env.SEF_BENCH_FLEET_FLOOD_SAMPLES ?? 200),
  );
  report(
    "fleetForgedEventIdFlood",
    flood,
    flood.realDuring.count === flood.realDuring.sent && flood.realDuring.p99Ms <= flood.targetP99Ms,
  );
}
if (process.env.SEF_BENCH_ONLY === "fleet-flood") {
  await benchFleetFloodPart();
  writeFileSync("bench-results.json", JSON.stringify(results, null, 2) + "\n");
  console.log("written to bench-results.json");
  process.exit(0);
}

// The kubernetes action (the bundle as packaged, the launcher's flags): Scheduled to approval on a node of 100 pods and
// on three nodes of 100 pods each (three agents, one approval), idle RSS with and without the action (target ≤ 1.1×),
// notice → taint+cordon at 200 ms polling (target p99 ≤ poll + 50 ms). SEF_BENCH_ONLY=kubernetes runs just this part.
async function benchKubernetes(): Promise<void> {
  report("kubernetesDrain100Pods", await benchKubernetesDrain(Number(process.env.SEF_BENCH_K8S_PODS ?? 100)));
  // Three agents on three nodes of one cluster, one Reboot naming all: one approval, once every node has drained.
  const cluster = await benchKubernetesClusterApproval(3, Number(process.env.SEF_BENCH_K8S_PODS ?? 100));
  report("kubernetesClusterApproval3x100", cluster, cluster.approvals === 1);
  const idleRss = await benchKubernetesIdleRss(Number(process.env.SEF_BENCH_K8S_IDLE_SECONDS ?? 30));
  report("kubernetesIdleRss", idleRss, idleRss.ratio <= 1.1);
  const cordon = await benchKubernetesCordonLatency(Number(process.env.SEF_BENCH_K8S_CORDON_SAMPLES ?? 20));
  report("kubernetesNoticeToCordon200ms", cordon, cordon.p99Ms <= cordon.targetMs);
  // What each way of reaching the API costs (bundled, launcher's flags, alone against the peer): the option table.
  report(
    "kubernetesClientOptions",
    await benchKubernetesClientOptions(Number(process.env.SEF_BENCH_K8S_OPTION_ROUNDS ?? 3)),
  );
}
if (process.env.SEF_BENCH_ONLY === "kubernetes") {
  await benchKubernetes();
  writeFileSync("bench-results.json", JSON.stringify(results, null, 2) + "\n");
  console.log("written to bench-results.json");
  process.exit(0);
}

// The packaged agent (`npm run package`'s .deb and .tar.gz). SEF_BENCH_ONLY=artifact runs just this part.
const artifact = await benchArtifact(Number(process.env.SEF_BENCH_ARTIFACT_IDLE_SECONDS ?? 30));
report(
  "artifactSizeMb",
  { deb: artifact.debMb, tarXz: artifact.tarXzMb, tarGz: artifact.tarGzMb },
  artifact.debMb <= 35 && artifact.tarXzMb <= 35,
);
report("debInstallNoNetworkMs", artifact.installNoNetworkMs, artifact.installNoNetworkMs <= 10_000);
report("coldStartToFirstPollMs", artifact.coldStartToFirstPollMs, Math.max(...artifact.coldStartToFirstPollMs) <= 300);
report("idleRssVsBareNode", artifact.idleRssMb, artifact.idleRssMb.ratio <= 1.5);
// Issue 26: the packaged agent beside a Python loop like Microsoft's sample, same run, same simulator (SEF_BENCH_IDLE_*).
// Target: against the loop that does what the documented sample does (a new connection per poll); the kept-alive loop
// is reported beside it as the stricter figure.
const idleVsPython = await benchIdleVsPython(idleOptionsFromEnv());
const { agentVsDocumentedSample } = idleVsPython.headline;
report(
  "idleCpuVsPythonLoop",
  {
    headline: idleVsPython.headline,
    cpuRatios: idleVsPython.cpuRatios,
    schedCpuRatios: idleVsPython.schedCpuRatios,
    rssRatio: idleVsPython.medianRssRatio,
  },
  agentVsDocumentedSample.median <= 1 &&
    agentVsDocumentedSample.spread <= 0.2 &&
    idleVsPython.medianRssRatio.agent <= 1.5,
);
// Issue 26 under churn: a change's time as the agent pays it at 100 and 10,000 retained keys (with fsync and without),
// and a soak (SEF_BENCH_CHURN_SECONDS).
const changeTimes = [100, 10_000].map((keys) => benchCommitTime(keys));
const [few, many] = [changeTimes[0]!, changeTimes[1]!];
report(
  "changeTimeByRetainedKeys",
  changeTimes,
  many.medianMs <= 2 * Math.max(few.medianMs, 1) && many.noFsyncMedianMs <= 2 * Math.max(few.noFsyncMedianMs, 0.5),
);
const soak = await benchChurnSoak(Number(process.env.SEF_BENCH_CHURN_SECONDS ?? 300));
report(
  "churnSoak",
  { ...soak, samples: soak.samples.length },
  soak.transitionsDelivered === soak.transitionsExpected && soak.tornLines === 0,
);
if (process.env.SEF_BENCH_ONLY === "artifact") {
  writeFileSync("bench-results.json", JSON.stringify(results, null, 2) + "\n");
  console.log("written to bench-results.json");
  process.exit(0);
}

for (const interval of [1000, 200]) {
  const r = await benchDetectionLatency(interval, samplesFor(interval));
  report(`detectionLatency${interval}ms`, r, r.storeP99Ms <= r.targetP99Ms && r.jsonlP99Ms <= r.targetP99Ms);
}
const idle = await benchIdleFootprint(idleSeconds);
report("idleFootprint1Hz", idle, idle.cpuPercentOfOneCore < 0.5 && idle.peakRssMb < 80);
await benchKubernetes();
const eh = await benchEventHubsDrain(drainRecords, "key");
report("eventHubsDrainKeyRouting", eh, eh.recordsPerSecond >= 20_000);
// The reference for key routing: the bare SDK, one keyed batch per EventId, nothing of sef around it (no target).
report("eventHubsBareSdkKeyedBatches", await benchEventHubsBareSdkKeyed(drainRecords));
const ehHash = await benchEventHubsDrain(drainRecords, "hash");
report("eventHubsDrainHashRouting", ehHash, ehHash.recordsPerSecond >= 20_000);
const la = await benchLogAnalyticsDrain(drainRecords);
// Issue 11: through the ledger not slower than before it (27,100 records/s: the sink alone with the peer in process).
report("logAnalyticsDrain", la, la.recordsPerSecond >= 27_100);
// References on the same harness: the sink alone (no store, no ledger), peer in a worker thread and in this thread.
report("logAnalyticsSinkAloneReference", await benchLogAnalyticsDrain(drainRecords, "sinkAlone"));
report("logAnalyticsDrainPeerInProcess", await benchLogAnalyticsDrain(drainRecords, "ledger", "inProcess"));
const fleet = await benchEventHubsFleet(fleetOptionsFromEnv());
report(
  "eventHubsFleetConnections",
  fleet,
  fleet.peakPercentOfInstances <= 5 && fleet.lost === 0 && fleet.addedLatencyP99Ms <= 2000,
);
const wave = await benchLogAnalyticsWave(waveOptionsFromEnv());
report(
  "logAnalyticsMaintenanceWave",
  wave,
  wave.limitEnforced &&
    wave.lost === 0 &&
    wave.answers413 === 0 &&
    wave.deadLettered === 0 &&
    wave.ratioToBound <= 1.2 &&
    wave.peakAcceptedPerMinute <= wave.requestsPerMinuteLimit,
);
const fleetLatency = await benchFleetEndToEnd(Number(process.env.SEF_BENCH_FLEET_EVENTS ?? 100), 3);
report("fleetNotificationLatency", fleetLatency, fleetLatency.p99Ms <= fleetLatency.targetP99Ms);
await benchFleetFloodPart();
const fleetScale = await benchFleetScale(Number(process.env.SEF_BENCH_FLEET_VMS ?? 2000), 10);
// Exactly once as people see it: every event paged (one PagerDuty incident) and resolved, every Slack message once.
// Raw repeated PagerDuty requests are reported but merged by dedup_key; every repeat must be an in-doubt re-send.
const seenOnce = (t: typeof fleetScale.slack) =>
  t.triggersMissing === 0 && t.resolvesMissing === 0 && t.repeatedTriggers === 0 && t.repeatedResolves === 0;
report("fleetKill9Scale", fleetScale, seenOnce(fleetScale.pagerDuty) && seenOnce(fleetScale.slack));

const lookups = await benchStoreLookups();
// Flat: the lookup at 1M records costs no more than a few times the one at 1k (timer noise dominates at this scale).
report("storeLookups", lookups, lookups.at(-1)!.depthMicroseconds <= 5 * Math.max(lookups[0]!.depthMicroseconds, 5));

writeFileSync("bench-results.json", JSON.stringify(results, null, 2) + "\n");
console.log("written to bench-results.json");
process.exit(0);
