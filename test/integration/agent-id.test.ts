// Identity (issue 12 item 14), end to end: with instance metadata unavailable, two installations still give different
// RecordIds (a persisted random AgentId); the metadata is retried until it answers; after a restart the AgentId and
// the RecordId formula stay the same.
import { describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli, readJsonl, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { recordSource, transitionRecordId } from "../../src/contract/record-id.js";
import type { TransitionRecord } from "../../src/contract/record.js";

/** A minimal IMDS on loopback: a settable scheduled-events document, and instance metadata that fails until enabled. */
async function fakeImds() {
  const state = { document: { DocumentIncarnation: 1, Events: [] as unknown[] }, computeUp: false, computeServed: 0 };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (path === "/metadata/scheduledevents") send(200, state.document);
    else if (path === "/metadata/instance/compute" && state.computeUp) {
      state.computeServed += 1;
      send(200, {
        name: "vm-from-imds",
        vmId: "9d3c5f2a-0000-4000-8000-0000000000aa",
        location: "norwayeast",
        resourceGroupName: "rg",
        subscriptionId: "s",
      });
    } else send(503, { error: "unavailable" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    state,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const event = (status: "Scheduled" | "Started") => ({
  EventId: "5E1D0001-0000-4000-8000-00000000E001",
  EventStatus: status,
  EventType: "Reboot",
  ResourceType: "VirtualMachine",
  Resources: ["vm-from-imds"],
  NotBefore: status === "Scheduled" ? new Date(Date.now() + 3_600_000).toUTCString() : "",
});

describe("agent identity", () => {
  it("keeps RecordIds unique across installations while instance metadata is down, retries it, and stays stable across restarts", async () => {
    const imds = await fakeImds();
    imds.state.document = { DocumentIncarnation: 1, Events: [event("Scheduled")] };
    const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), "sef-agent-id-")));
    const start = (dir: string): RunningProcess =>
      runCli(
        [
          "run",
          "--imds-url",
          imds.url,
          "--poll-interval-ms",
          "200",
          "--data-dir",
          join(dir, "data"),
          "--sink",
          `jsonl:${join(dir, "out.jsonl")}`,
          "--heartbeat-interval-ms",
          "0",
        ],
        {
          env: { SEF_METRICS_PORT: "0" },
        },
      );
    const transitions = (dir: string) =>
      readJsonl<TransitionRecord>(join(dir, "out.jsonl")).filter((r) => r.RecordType === "Transition");
    let agents = dirs.map(start);
    try {
      await waitUntil(
        () => dirs.every((d) => transitions(d).length === 1),
        20_000,
        "a Scheduled record from each agent",
      );
      const [a, b] = dirs.map((d) => transitions(d)[0]!);
      expect(a!.VmId).toBe("");
      expect(b!.VmId).toBe("");
      expect(a!.AgentId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(a!.AgentId).not.toBe(b!.AgentId);
      expect(a!.RecordId).not.toBe(b!.RecordId);
      expect(readFileSync(join(dirs[0]!, "data", "agent-id"), "utf8").trim()).toBe(a!.AgentId);

      // Instance metadata comes back: both agents pick it up within seconds (retries back off from 1 s).
      imds.state.computeUp = true;
      await waitUntil(() => imds.state.computeServed >= 2, 15_000, "both agents to read instance metadata again");
      imds.state.document = { DocumentIncarnation: 2, Events: [event("Started")] };
      await waitUntil(() => dirs.every((d) => transitions(d).length === 2), 15_000, "a Started record from each agent");
      for (const d of dirs)
        expect(transitions(d)[1]).toMatchObject({
          EventStatus: "Started",
          VmName: "vm-from-imds",
          VmId: "9d3c5f2a-0000-4000-8000-0000000000aa",
        });

      // Restart the first agent: same AgentId, and the RecordId follows the documented formula.
      expect(await agents[0]!.stop("SIGTERM")).toBe(0);
      agents = [start(dirs[0]!), agents[1]!];
      imds.state.document = { DocumentIncarnation: 3, Events: [] };
      await waitUntil(() => transitions(dirs[0]!).length === 3, 15_000, "a Completed record after the restart");
      const completed = transitions(dirs[0]!)[2]!;
      expect(completed.AgentId).toBe(a!.AgentId);
      expect(completed.RecordId).toBe(transitionRecordId(recordSource(completed), completed.EventId, "Completed"));
      expect(a!.RecordId).toBe(transitionRecordId(recordSource(a!), a!.EventId, "Scheduled"));
    } finally {
      await Promise.all(agents.map((agent) => agent.stop("SIGKILL")));
      await imds.close();
    }
  });
});
