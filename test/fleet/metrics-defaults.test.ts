// The fleet's default metrics (prom-client's process, heap, event-loop and GC collectors) are collected once per
// process: every FleetMetrics serves the same collectors instead of starting monitors of its own that never stop.
import { describe, expect, it } from "vitest";
import { FleetMetrics } from "../../src/fleet/metrics.js";

describe("FleetMetrics' default metrics", () => {
  it("are the same collectors in every instance, each exposed once beside the instance's own series", async () => {
    const first = new FleetMetrics(["pd"]);
    const second = new FleetMetrics(["chat"]);
    for (const name of ["sef_fleet_nodejs_eventloop_lag_seconds", "sef_fleet_nodejs_gc_duration_seconds"]) {
      const metric = first.registry.getSingleMetric(name);
      expect(metric, name).toBeDefined();
      expect(second.registry.getSingleMetric(name), name).toBe(metric);
    }
    const text = await second.registry.metrics();
    expect(text.match(/^# TYPE sef_fleet_nodejs_eventloop_lag_seconds gauge$/gm)).toHaveLength(1);
    expect(text).toMatch(/^sef_fleet_notifications_total\{target="chat",action="trigger",outcome="sent"\} 0$/m);
    expect(text).not.toMatch(/target="pd"/);
  });
});
