// The approver against the real IMDS simulator (`sef-testbed simulate`): an approved Scheduled event moves to Started.
import { afterEach, describe, expect, it } from "vitest";
import { approveEvents } from "../../src/agent/actions/approval/approver.js";
import { startRequestPoster } from "./fixtures.js";
import { decideApproval, sampleApprovalPolicy } from "../../src/agent/actions/approval/policy.js";
import { parseScenario, startSimulator, type Simulator } from "../../src/testbed/simulator/index.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { vm } from "./fixtures.js";

const scenario = parseScenario(
  {
    name: "approval-test",
    description: "one Freeze event far in the future, so only an approval can start it",
    durationSeconds: 3600,
    steps: [
      {
        at: 0,
        events: [
          {
            EventId: "A1B2C3D4-0000-4000-8000-000000000001",
            EventType: "Freeze",
            Resources: ["WestNO_0", "WestNO_1"],
            DurationInSeconds: 5,
            notBeforeInSeconds: 1800,
          },
        ],
      },
    ],
  },
  "inline",
);

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe("approval against the IMDS simulator", () => {
  it("moves an approved Scheduled event to Started", async () => {
    sim = await startSimulator({ scenario, port: 0, startOn: "listen", logger: silentLogger() });
    const before = sim.status().document.Events;
    expect(before).toHaveLength(1);
    const ev = before[0]!;
    expect(ev.EventStatus).toBe("Scheduled");

    const decision = decideApproval(
      {
        EventId: ev.EventId,
        EventStatus: "Scheduled",
        EventType: ev.EventType,
        ResourceType: "VirtualMachine",
        Resources: ev.Resources,
        NotBefore: null,
        Description: "",
        EventSource: "Platform",
        DurationInSeconds: 5,
      },
      "WestNO_0",
      sampleApprovalPolicy,
      false,
    );
    expect(decision.approve).toBe(true);

    const post = startRequestPoster(sim.url);
    const [record] = await approveEvents(
      [
        {
          EventId: ev.EventId,
          EventType: ev.EventType,
          EventStatus: "Scheduled",
          DocumentIncarnation: sim.status().incarnation,
          reason: decision.reason,
        },
      ],
      { vm, mode: "on", postStartRequest: post, agentVersion: "0.1.0", logger: silentLogger() },
    );
    await post.close();
    expect(record).toMatchObject({ Outcome: "Approved", HttpStatus: 200 });
    const after = sim.status();
    expect(after.document.Events[0]!.EventStatus).toBe("Started");
    expect(after.approvals.map((a) => a.EventId)).toEqual([ev.EventId]);
  });
});
