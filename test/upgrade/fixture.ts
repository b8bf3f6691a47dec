// What the upgrade fixture's older agent was given (make-store-fixture.ts) and the upgrade test checks against
// (store-upgrade.test.ts): its events, its hooks' names, the sink it parked.

/** The simulator's events, in the scenario event format. */
export const fixtureEvents = {
  /** Approved by the old agent (approval rule: Freeze), its "note" hook succeeded. */
  freeze: {
    EventId: "F1EE2E00-0000-4000-8000-00000000F001",
    EventType: "Freeze",
    Resources: ["WestNO_0"],
    DurationInSeconds: 5,
    notBeforeInSeconds: 3600,
    autoStart: false,
  },
  /** Its "note" hook succeeded; its "slow" hook was running when the old agent was killed. */
  reboot: {
    EventId: "B007B007-0000-4000-8000-00000000B002",
    EventType: "Reboot",
    Resources: ["WestNO_0"],
    notBeforeInSeconds: 3600,
    autoStart: false,
  },
};

export const fixtureHookNames = { note: "note", slow: "slow" } as const;

/** A jsonl sink whose directory cannot be made (every append fails, its records stay pending), parked by the old agent. */
export const parkedSinkSpec = "jsonl:/dev/null/parked.jsonl";
