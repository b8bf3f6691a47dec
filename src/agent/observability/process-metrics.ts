// The process's own metrics: prom-client's default set (CPU, memory, fds, handles, heap, GC, version), except its
// event-loop histogram, whose libuv timer (`monitorEventLoopDelay`) wakes the process 10 times a second even when the
// agent has nothing to do. `nodejs_eventloop_lag_seconds` stays: measured when scraped (one setImmediate's delay).
import processCpuTotal from "prom-client/lib/metrics/processCpuTotal.js";
import processStartTime from "prom-client/lib/metrics/processStartTime.js";
import osMemoryHeap from "prom-client/lib/metrics/osMemoryHeap.js";
import processOpenFileDescriptors from "prom-client/lib/metrics/processOpenFileDescriptors.js";
import processMaxFileDescriptors from "prom-client/lib/metrics/processMaxFileDescriptors.js";
import processResources from "prom-client/lib/metrics/processResources.js";
import processHandles from "prom-client/lib/metrics/processHandles.js";
import processRequests from "prom-client/lib/metrics/processRequests.js";
import heapSizeAndUsed from "prom-client/lib/metrics/heapSizeAndUsed.js";
import heapSpacesSizeAndUsed from "prom-client/lib/metrics/heapSpacesSizeAndUsed.js";
import version from "prom-client/lib/metrics/version.js";
import gc from "prom-client/lib/metrics/gc.js";
import { Gauge, type Registry } from "./prom-client.js";

type DefaultMetric = (registry: Registry, config: Record<string, unknown>) => void;

const defaults = [
  processCpuTotal,
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  processResources,
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
  gc,
] as unknown as DefaultMetric[];

/** Registers the process metrics in `registry`. */
export function registerProcessMetrics(registry: Registry): void {
  for (const register of defaults) register(registry, {});
  const lag: Gauge = new Gauge({
    name: "nodejs_eventloop_lag_seconds",
    help: "Lag of event loop in seconds (measured at scrape: the delay of one setImmediate).",
    registers: [registry],
    collect: async () => {
      const startedNs = process.hrtime.bigint();
      await new Promise<void>((resolve) => setImmediate(resolve));
      lag.set(Number(process.hrtime.bigint() - startedNs) / 1e9);
    },
  });
}
