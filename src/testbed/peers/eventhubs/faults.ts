// Fault injection state of the local Event Hubs peer: what the next sends should suffer. Pure state, no I/O;
// the server asks it what to do with each incoming transfer.

/**
 * What happens to one incoming send (a transfer on a hub or partition link):
 * - `server-busy`: rejected with `com.microsoft:server-busy` (nothing stored);
 * - `quota-exceeded`: rejected with `amqp:resource-limit-exceeded` (nothing stored);
 * - `detach`: the link is force-detached (`amqp:link:detach-forced`) before the transfer is settled (nothing stored);
 * - `drop-connection`: the TCP connection is destroyed before the transfer is settled (nothing stored);
 * - `store-then-drop`: the events are stored, then the connection is destroyed before the accept is sent
 *   (the producer cannot know: the in-doubt case that a retry turns into a duplicate).
 */
export type SendFault = "server-busy" | "quota-exceeded" | "detach" | "drop-connection" | "store-then-drop";
export const sendFaults: readonly SendFault[] = [
  "server-busy",
  "quota-exceeded",
  "detach",
  "drop-connection",
  "store-then-drop",
];

export class FaultPlan {
  private readonly queued: Array<SendFault | "ok"> = [];
  private serverBusy = false;
  private acceptDelay = 0;

  /** The next `count` sends suffer `fault` (queued after any already planned). */
  failNextSends(count: number, fault: SendFault = "server-busy"): void {
    for (let i = 0; i < count; i++) this.queued.push(fault);
  }

  /** Plans the next sends one by one: `["ok", "server-busy"]` lets one through, then fails the next. */
  planSends(plan: ReadonlyArray<SendFault | "ok">): void {
    this.queued.push(...plan);
  }

  /** While on, every send is rejected with server-busy. */
  setServerBusy(on: boolean): void {
    this.serverBusy = on;
  }

  /** Delays every accept disposition by `ms` (a slow service); 0 turns it off. */
  setAcceptDelayMs(ms: number): void {
    this.acceptDelay = Math.max(0, ms);
  }

  get acceptDelayMs(): number {
    return this.acceptDelay;
  }

  /** How many planned send faults are still waiting. */
  get pendingSendFaults(): number {
    return this.queued.length;
  }

  /** Forgets every planned fault and turns off server-busy and the accept delay. */
  clear(): void {
    this.queued.length = 0;
    this.serverBusy = false;
    this.acceptDelay = 0;
  }

  /** Consumes the fault for the send arriving now, if any. */
  takeSendFault(): SendFault | undefined {
    const next = this.queued.shift();
    if (next === "ok") return undefined;
    if (next !== undefined) return next;
    return this.serverBusy ? "server-busy" : undefined;
  }
}
