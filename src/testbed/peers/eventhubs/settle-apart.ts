// Settles the deliveries the peer receives so that each one's outcome reaches the client as given. rhea (3.0.5) writes
// the dispositions of one turn as ranges and, after a range of a single delivery, does not compare the next one's
// outcome (lib/session.js, write_dispositions: `first !== last && !are_outcomes_equivalent(...)`): a reject followed
// in the same turn by an accept goes out as one range carrying the reject, so the client retries an event the hub
// stored (a duplicate), and an accept followed by a reject tells the client an event was stored that was not (a loss).
// The service settles every delivery on its own. Here a delivery whose outcome differs from one already settled in this
// turn of the same session waits for the next turn (rhea writes a turn's dispositions on process.nextTick), in order.
import type { Delivery } from "rhea";

/** What a settlement does to its delivery (store and accept, reject with a condition …) and a key naming its outcome. */
export interface Settlement {
  /** Equal keys are outcomes rhea may put in one range: `accepted`, or a rejection's condition and description. */
  readonly outcomeKey: string;
  readonly apply: () => void;
}

interface SessionTurn {
  /** The outcome settled in the current turn, if any. */
  outcomeKey: string | undefined;
  /** Settlements waiting for a later turn, oldest first. */
  readonly waiting: Settlement[];
  nextTurnScheduled: boolean;
}

export class SettleApart {
  private readonly turns = new WeakMap<object, SessionTurn>();

  settle(delivery: Delivery, settlement: Settlement): void {
    const turn = this.turnOf(delivery);
    if (turn.waiting.length === 0 && (turn.outcomeKey === undefined || turn.outcomeKey === settlement.outcomeKey)) {
      this.applyNow(turn, settlement);
      return;
    }
    turn.waiting.push(settlement);
    this.scheduleNextTurn(turn);
  }

  private turnOf(delivery: Delivery): SessionTurn {
    const session = (delivery as unknown as { link: { session: object } }).link.session;
    let turn = this.turns.get(session);
    if (!turn) {
      turn = { outcomeKey: undefined, waiting: [], nextTurnScheduled: false };
      this.turns.set(session, turn);
    }
    return turn;
  }

  private applyNow(turn: SessionTurn, settlement: Settlement): void {
    turn.outcomeKey = settlement.outcomeKey;
    settlement.apply();
    this.scheduleNextTurn(turn);
  }

  /** After rhea's nextTick write: forget this turn's outcome and settle what waits, as far as one outcome goes. */
  private scheduleNextTurn(turn: SessionTurn): void {
    if (turn.nextTurnScheduled) return;
    turn.nextTurnScheduled = true;
    setImmediate(() => {
      turn.nextTurnScheduled = false;
      turn.outcomeKey = undefined;
      while (
        turn.waiting.length > 0 &&
        (turn.outcomeKey === undefined || turn.outcomeKey === turn.waiting[0]!.outcomeKey)
      ) {
        this.applyNow(turn, turn.waiting.shift()!);
      }
      if (turn.waiting.length > 0) this.scheduleNextTurn(turn);
    });
  }
}

export const accepted = "accepted";

export function rejectedKey(condition: string, description: string): string {
  return `rejected ${condition} ${description}`;
}
