// The soak's flatness verdict: a saw-tooth with no trend reads as flat at every phase, while the same saw-tooth on a
// climb of 0.5 MB an hour does not; the textbook band (no lag) would call a flat saw-tooth a climb.
import { describe, expect, it } from "vitest";
import { trendOf } from "./trend.js";

const minute = 60;
const tooth = 18 * minute;
/** RSS every 10 s for `seconds`: a saw-tooth of 1 MB every 18 minutes at `phase`, on a climb of `perHour` MB. */
function soak(seconds: number, phase: number, perHour: number): Array<[number, number]> {
  const points: Array<[number, number]> = [];
  for (let t = 0; t < seconds; t += 10) points.push([t, 60 + (t * perHour) / 3600 + ((t + phase) % tooth) / tooth]);
  return points;
}

describe("trendOf", () => {
  it("gives a line's slope exactly, with no noise", () => {
    const line = Array.from({ length: 50 }, (_, i) => [i * 10, 3 + i * 0.5] as [number, number]);
    const trend = trendOf(line, 1200);
    expect(trend.slope).toBeCloseTo(0.05, 12);
    expect(trend.noise).toBeCloseTo(0, 9);
  });

  it("reads a saw-tooth without a trend as flat over 45 and 90 minutes, at every phase", () => {
    for (const seconds of [45 * minute, 90 * minute]) {
      for (let phase = 0; phase < tooth; phase += minute) {
        const { slope, noise } = trendOf(soak(seconds, phase, 0), 20 * minute);
        expect(Math.abs(slope)).toBeLessThanOrEqual(noise);
      }
    }
    // Without the lag the band assumes independent samples: some phases would read as a climb.
    const textbook = Array.from({ length: tooth / minute }, (_, k) => trendOf(soak(90 * minute, k * minute, 0), 0));
    expect(textbook.some(({ slope, noise }) => Math.abs(slope) > noise)).toBe(true);
  });

  it("does not read a climb of 0.5 MB an hour under the same saw-tooth as flat", () => {
    for (const seconds of [45 * minute, 90 * minute]) {
      const { slope, noise } = trendOf(soak(seconds, 0, 0.5), 20 * minute);
      expect(slope * 3600).toBeGreaterThan(noise * 3600);
      expect(slope * 3600).toBeGreaterThan(0.4);
    }
  });
});
