// A bounded number of requests in flight to one target: waiting senders queue in order. It keeps sef fleet within
// what a target takes (Slack and Teams webhooks throttle at about a message a second) and bounds how many
// notifications can be in doubt when an instance dies mid-send: only those in flight, not every one it had claimed.
// Waiting senders go by priority: a new event's first notification ahead of updates and resolves, and among those
// first notifications, an event a known reporter reported ahead of one only new reporters did (a flood's); and one
// slot beyond the limit is kept for a known reporter's trigger, so it never waits for a flood's requests to be answered.

/** Who is handed a free slot first (lower first); in order of arrival within a priority. */
export const sendPriority = { knownTrigger: 0, trigger: 1, other: 2 } as const;
export type SendPriority = (typeof sendPriority)[keyof typeof sendPriority];

/** A trigger ahead of the rest, and a known reporter's trigger ahead of a flood's. */
export function priorityOf(notification: { readonly action: string; readonly knownReporter: boolean }): SendPriority {
  if (notification.action !== "trigger") return sendPriority.other;
  return notification.knownReporter ? sendPriority.knownTrigger : sendPriority.trigger;
}

/** Slots beyond the limit that only a known reporter's trigger may take. */
export const knownTriggerReserve = 1;

export class SendSlots {
  private inFlight = 0;
  /** Waiting senders, one queue per priority. */
  private readonly waiting: Array<Array<() => void>> = [[], [], []];

  constructor(private readonly limit: number) {}

  /**
   * Resolves true once a slot is held (release it after the request), or false if `signal` aborts first. A free slot
   * goes to the first waiter of the lowest `priority`; a known reporter's trigger may also take the reserve.
   */
  async acquire(signal: AbortSignal, priority: SendPriority = sendPriority.other): Promise<boolean> {
    const queue = this.waiting[priority]!;
    if (signal.aborted) return false;
    if (this.inFlight < this.capFor(priority)) {
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

  /** Frees a slot: the first waiter of the lowest priority takes it if its cap allows. */
  release(): void {
    this.inFlight--;
    const priority = this.waiting.findIndex((queue) => queue.length > 0);
    if (priority < 0 || this.inFlight >= this.capFor(priority as SendPriority)) return;
    this.inFlight++;
    this.waiting[priority]!.shift()!();
  }

  private capFor(priority: SendPriority): number {
    return priority === sendPriority.knownTrigger ? this.limit + knownTriggerReserve : this.limit;
  }
}
