// Throttling pauses keyed by data collection rule: when the service throttles one request with a hint,
// every request to that rule (from any sink instance in the process) waits until the pause ends.

export class RulePauses {
  private readonly untilMsByRule = new Map<string, number>();

  /** Pauses `ruleId` until `untilMs` (monotonic milliseconds, `Clock.monotonicMs`); an earlier end never shortens a longer pause. */
  pauseUntil(ruleId: string, untilMs: number): void {
    const current = this.untilMsByRule.get(ruleId) ?? 0;
    if (untilMs > current) this.untilMsByRule.set(ruleId, untilMs);
  }

  /** Milliseconds left in the pause of `ruleId` at `nowMs` (0 when not paused). */
  remainingMs(ruleId: string, nowMs: number): number {
    const untilMs = this.untilMsByRule.get(ruleId);
    if (untilMs === undefined) return 0;
    if (untilMs <= nowMs) {
      this.untilMsByRule.delete(ruleId);
      return 0;
    }
    return untilMs - nowMs;
  }
}

/** The pauses shared by every Log Analytics sink of this process. */
export const processRulePauses = new RulePauses();
