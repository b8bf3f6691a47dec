// The exposition reader the metric assertions use: one series by its whole label set, its one value.
import { describe, expect, it } from "vitest";
import { metricValue, parseExposition } from "./metrics.js";

const exposition = [
  "# HELP sef_sink_failing Whether a sink is failing",
  "# TYPE sef_sink_failing gauge",
  'sef_sink_failing{sink="loganalytics"} 1',
  'sef_sink_failing{sink="loganalytics-2"} 11',
  'sef_sink_failing{sink="webhook",extra="x"} 10',
  'sef_polls_total{outcome="ok"} 42 1700000000000',
  'sef_text{v="a \\"quoted\\", comma\\\\ and\\nline"} 2',
  "sef_up 1",
  "",
].join("\n");

describe("metricValue", () => {
  it("reads the one series with exactly these labels, whatever its neighbours' values", () => {
    expect(metricValue(exposition, "sef_sink_failing", { sink: "loganalytics" })).toBe(1);
    expect(metricValue(exposition, "sef_polls_total", { outcome: "ok" })).toBe(42);
    expect(metricValue(exposition, "sef_up")).toBe(1);
    expect(metricValue(exposition, "sef_text", { v: 'a "quoted", comma\\ and\nline' })).toBe(2);
  });

  it("fails on no such series, on a label set that is a part of the series', and on a series listed twice", () => {
    expect(() => metricValue(exposition, "sef_sink_failing", { sink: "stdout" })).toThrow(/no series/);
    expect(() => metricValue(exposition, "sef_sink_failing", { sink: "webhook" })).toThrow(/no series/);
    expect(() => metricValue(`${exposition}sef_up 2\n`, "sef_up")).toThrow(/2 series sef_up/);
  });

  it("refuses a line it cannot read instead of skipping it", () => {
    expect(() => parseExposition("sef_up{oops} 1")).toThrow(/unreadable/);
    expect(parseExposition("sef_x +Inf")).toEqual([{ name: "sef_x", labels: {}, value: Number.POSITIVE_INFINITY }]);
  });
});
