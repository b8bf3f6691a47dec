// A bounded number of requests in flight to one target: waiting senders queue in order. It keeps sef fleet within
// what a target takes (Slack and Teams webhooks throttle at about a message a second) and bounds how many
// notifications can be in doubt when an instance dies mid-send: only those in flight, not every one it had claimed.
// Urgent senders (a new event's first notification) wait ahead of the others (updates, resolves).

export class SendSlots {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly waitingUrgent: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /**
   * Resolves true once a slot is held (release it after the request), or false if `signal` aborts first. An `urgent`
   * sender is handed the next free slot before any sender that is not.
   */
  async acquire(signal: AbortSignal, urgent = false): Promise<boolean> {
    const queue = urgent ? this.waitingUrgent : this.waiting;
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
        const index = queue.indexOf(granted);
        if (index >= 0) queue.splice(index, 1);
        resolve(false);
      };
      queue.push(granted);
      signal.addEventListener("abort", aborted, { once: true });
    });
  }

  release(): void {
    const next = this.waitingUrgent.shift() ?? this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }
}
