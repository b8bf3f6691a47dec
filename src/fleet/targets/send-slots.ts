// A bounded number of requests in flight to one target: waiting senders queue in order. It keeps sef fleet within
// what a target takes (Slack and Teams webhooks throttle at about a message a second) and bounds how many
// notifications can be in doubt when an instance dies mid-send: only those in flight, not every one it had claimed.

export class SendSlots {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** Resolves true once a slot is held (release it after the request), or false if `signal` aborts first. */
  async acquire(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    if (this.inFlight < this.limit) {
      this.inFlight++;
      return true;
    }
    return new Promise<boolean>((resolve) => {
      const granted = (): void => {
        signal.removeEventListener("abort", aborted);
        resolve(true); // the slot was handed over by release(): inFlight already counts it
      };
      const aborted = (): void => {
        const index = this.waiting.indexOf(granted);
        if (index >= 0) this.waiting.splice(index, 1);
        resolve(false);
      };
      this.waiting.push(granted);
      signal.addEventListener("abort", aborted, { once: true });
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }
}
