// The simulated IMDS over real sockets: request rules, api-version shapes, approvals, compute, faults and the control API.
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { parseScenario, type ScenarioInput } from "../../src/testbed/simulator/scenario-schema.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import type { SimulatorClock as Clock } from "../../src/testbed/simulator/sim-state.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { waitFor } from "../helpers/wait.js";

const open: Simulator[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function start(
  partial: Partial<ScenarioInput> = {},
  options: { clock?: Clock; startOn?: "listen" | "first-request" } = {},
): Promise<Simulator> {
  const scenario = parseScenario(
    {
      name: "http-test",
      description: "test",
      durationSeconds: 100_000,
      steps: [
        {
          at: 0,
          events: [
            {
              EventId: "E1",
              EventType: "Freeze",
              Resources: ["WestNO_0", "WestNO_1"],
              notBeforeInSeconds: 3600,
              Description: "d",
              DurationInSeconds: 5,
            },
          ],
        },
      ],
      ...partial,
    },
    "test",
  );
  const sim = await startSimulator({ scenario, port: 0, ...options });
  open.push(sim);
  return sim;
}

const md = { Metadata: "true" };
const se = "/metadata/scheduledevents?api-version=2020-07-01";

async function get(
  sim: Simulator,
  path: string,
  headers: Record<string, string> = md,
): Promise<{ status: number; json: unknown; type: string | undefined }> {
  const res = await request(`${sim.url}${path}`, { headers });
  const text = await res.body.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.statusCode, json, type: res.headers["content-type"] as string | undefined };
}

async function post(
  sim: Simulator,
  path: string,
  body: string,
  headers: Record<string, string> = md,
): Promise<{ status: number; text: string }> {
  const res = await request(`${sim.url}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body,
  });
  return { status: res.statusCode, text: await res.body.text() };
}

describe("request rules", () => {
  it("answers the document as application/json with Metadata: true", async () => {
    const sim = await start();
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await get(sim, se);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/json/);
    expect(res.json).toMatchObject({
      DocumentIncarnation: 1,
      Events: [{ EventId: "E1", EventStatus: "Scheduled", EventType: "Freeze" }],
    });
  });

  it("rejects a missing or wrong Metadata header, X-Forwarded-For and duplicate parameters with 400", async () => {
    const sim = await start();
    expect(await get(sim, se, {})).toMatchObject({
      status: 400,
      json: { error: "Required metadata header not specified" },
    });
    expect((await get(sim, se, { Metadata: "false" })).status).toBe(400);
    expect((await get(sim, se, { Metadata: "TRUE" })).status).toBe(200);
    expect((await get(sim, se, { ...md, "X-Forwarded-For": "10.0.0.1" })).status).toBe(400);
    expect((await get(sim, `${se}&api-version=2020-07-01`)).status).toBe(400);
    expect((await get(sim, `${se}&foo=1&foo=2`)).status).toBe(400);
  });

  it("rejects a missing or unknown api-version with the newest versions listed", async () => {
    const sim = await start();
    for (const path of [
      "/metadata/scheduledevents",
      "/metadata/scheduledevents?api-version=2021-01-01",
      "/metadata/scheduledevents?api-version=",
    ]) {
      const res = await get(sim, path);
      expect(res.status).toBe(400);
      const body = res.json as { error: string; "newest-versions": string[] };
      expect(body.error).toMatch(/^Bad request\. api-version is invalid or was not specified in the request\./);
      expect(body["newest-versions"]).toEqual(["2020-07-01", "2019-08-01", "2019-04-01"]);
    }
    expect((await get(sim, "/metadata/instance/compute?api-version=2020-07-01")).status).toBe(400);
  });

  it("answers 405 for other methods and 404 for unknown paths", async () => {
    const sim = await start();
    const put = await request(`${sim.url}${se}`, { method: "PUT", headers: md, body: "{}" });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe("GET, POST");
    await put.body.dump();
    const del = await request(`${sim.url}/metadata/instance/compute?api-version=2021-02-01`, {
      method: "DELETE",
      headers: md,
    });
    expect(del.statusCode).toBe(405);
    await del.body.dump();
    expect((await get(sim, "/metadata/nothing?api-version=2020-07-01")).status).toBe(404);
    expect((await get(sim, "/")).status).toBe(404);
    const status = sim.status();
    expect(status.requests["/metadata/nothing"]).toEqual({ "404": 1 });
    expect(status.requests["/metadata/scheduledevents"]).toEqual({ "405": 1 });
  });
});

describe("document shape by api-version", () => {
  it("old versions lack newer fields and prefix resource names", async () => {
    const sim = await start();
    const event = async (v: string): Promise<Record<string, unknown>> =>
      ((await get(sim, `/metadata/scheduledevents?api-version=${v}`)).json as { Events: Record<string, unknown>[] })
        .Events[0]!;
    expect(await event("2017-03-01")).toMatchObject({ Resources: ["_WestNO_0", "_WestNO_1"] });
    expect(Object.keys(await event("2017-11-01"))).toEqual([
      "EventId",
      "EventStatus",
      "EventType",
      "ResourceType",
      "Resources",
      "NotBefore",
    ]);
    expect(await event("2019-04-01")).toHaveProperty("Description", "d");
    expect(await event("2019-04-01")).not.toHaveProperty("EventSource");
    expect(await event("2019-08-01")).toHaveProperty("EventSource", "Platform");
    expect(await event("2019-08-01")).not.toHaveProperty("DurationInSeconds");
    const latest = await event("2020-07-01");
    expect(latest).toMatchObject({ DurationInSeconds: 5, Resources: ["WestNO_0", "WestNO_1"] });
    expect(latest.NotBefore).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(Math.abs(Date.parse(latest.NotBefore as string) - (Date.now() + 3_600_000))).toBeLessThan(5000);
  });
});

describe("approvals", () => {
  it("validates the body and header", async () => {
    const sim = await start();
    const ok = JSON.stringify({ StartRequests: [{ EventId: "E1" }] });
    expect((await post(sim, se, ok, {})).status).toBe(400);
    expect((await post(sim, se, "{not json")).status).toBe(400);
    expect((await post(sim, se, JSON.stringify({ StartRequests: [] }))).status).toBe(400);
    expect((await post(sim, se, JSON.stringify({ StartRequests: [{ Id: "E1" }] }))).status).toBe(400);
    expect(
      (await post(sim, se, JSON.stringify({ StartRequests: [{ EventId: "E1" }], DocumentIncarnation: "one" }))).status,
    ).toBe(400);
    expect((await post(sim, se, JSON.stringify({ StartRequests: [{ EventId: "nope" }] }))).status).toBe(400);
    expect(((await get(sim, se)).json as { Events: { EventStatus: string }[] }).Events[0]?.EventStatus).toBe(
      "Scheduled",
    );
  });

  it("an approval starts the event at once (new incarnation, NotBefore empty); approving again is still 200", async () => {
    const sim = await start({ startedForSeconds: 100_000 });
    const before = (await get(sim, se)).json as { DocumentIncarnation: number };
    const body = JSON.stringify({
      StartRequests: [{ EventId: "E1" }],
      DocumentIncarnation: before.DocumentIncarnation,
    });
    expect(await post(sim, se, body)).toEqual({ status: 200, text: "" });
    const after = (await get(sim, se)).json as {
      DocumentIncarnation: number;
      Events: { EventStatus: string; NotBefore: string }[];
    };
    expect(after.DocumentIncarnation).toBe(before.DocumentIncarnation + 1);
    expect(after.Events[0]).toMatchObject({ EventStatus: "Started", NotBefore: "" });
    expect((await post(sim, se, body)).status).toBe(200);
    expect(((await get(sim, se)).json as { DocumentIncarnation: number }).DocumentIncarnation).toBe(
      after.DocumentIncarnation,
    );
    const approvals = sim.status().approvals;
    expect(approvals.map((a) => [a.EventId, a.outcome, a.count])).toEqual([
      ["E1", "started", 1],
      ["E1", "already-started", 2],
    ]);
    expect(Date.parse(approvals[0]!.at)).toBeGreaterThan(Date.now() - 10_000);
  });

  it("approvalDelayMs holds a StartRequests POST (counted in approvalsHeld) and applies it after the delay, even when the client left", async () => {
    const scenario = parseScenario(
      {
        name: "held",
        description: "test",
        durationSeconds: 100_000,
        steps: [
          {
            at: 0,
            events: [{ EventId: "E1", EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 3600 }],
          },
        ],
      },
      "test",
    );
    const sim = await startSimulator({ scenario, approvalDelayMs: 400 });
    open.push(sim);
    await get(sim, se);
    const client = new AbortController();
    const sent = request(`${sim.url}${se}`, {
      method: "POST",
      headers: { ...md, "Content-Type": "application/json" },
      body: JSON.stringify({ StartRequests: [{ EventId: "E1" }] }),
      signal: client.signal,
    });
    for (let i = 0; i < 100 && sim.status().approvalsHeld === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sim.status()).toMatchObject({ approvalsHeld: 1, approvals: [] });
    client.abort();
    await sent.catch(() => undefined);
    expect(((await get(sim, se)).json as { Events: { EventStatus: string }[] }).Events[0]?.EventStatus).toBe(
      "Scheduled",
    );
    for (let i = 0; i < 200 && sim.status().approvalsHeld === 1; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sim.status()).toMatchObject({
      approvalsHeld: 0,
      approvals: [{ EventId: "E1", outcome: "started", count: 1 }],
    });
    expect(((await get(sim, se)).json as { Events: { EventStatus: string }[] }).Events[0]?.EventStatus).toBe("Started");
  });

  it("an approved event is removed after its Started duration (fake clock)", async () => {
    let nowMs = 1_700_000_000_000;
    const clock: Clock = { now: () => nowMs, sleep: async () => undefined };
    const sim = await start({ speed: 10, startedForSeconds: 50 }, { clock });
    await get(sim, se);
    expect((await post(sim, se, JSON.stringify({ StartRequests: [{ EventId: "E1" }] }))).status).toBe(200);
    nowMs += 4_999;
    expect(((await get(sim, se)).json as { Events: unknown[] }).Events).toHaveLength(1);
    nowMs += 1;
    expect((await get(sim, se)).json).toEqual({ DocumentIncarnation: 3, Events: [] });
  });
});

describe("instance metadata", () => {
  it("serves the scenario VM's compute metadata, or the VM named by X-Sef-Sim-Vm", async () => {
    const sim = await start({
      vm: { name: "WestNO_0", vmScaleSetName: "WestNO", zone: "2", vmId: "11111111-2222-3333-4444-555555555555" },
    });
    const mine = (await get(sim, "/metadata/instance/compute?api-version=2021-02-01")).json as Record<string, unknown>;
    expect(mine).toMatchObject({
      name: "WestNO_0",
      vmId: "11111111-2222-3333-4444-555555555555",
      vmScaleSetName: "WestNO",
      zone: "2",
      osType: "Linux",
      location: "norwayeast",
      resourceGroupName: "sef-sim-rg",
    });
    for (const field of [
      "name",
      "vmId",
      "resourceId",
      "subscriptionId",
      "resourceGroupName",
      "location",
      "vmScaleSetName",
      "zone",
      "osType",
    ]) {
      expect(typeof mine[field], field).toBe("string");
    }
    expect(mine.resourceId).toBe(
      `/subscriptions/${String(mine.subscriptionId)}/resourceGroups/sef-sim-rg/providers/Microsoft.Compute/virtualMachineScaleSets/WestNO/virtualMachines/0`,
    );
    const other = (
      await get(sim, "/metadata/instance/compute?api-version=2021-02-01", { ...md, "X-Sef-Sim-Vm": "WestNO_1" })
    ).json as Record<string, unknown>;
    expect(other).toMatchObject({ name: "WestNO_1", subscriptionId: mine.subscriptionId, vmScaleSetName: "WestNO" });
    expect(other.vmId).not.toBe(mine.vmId);
    expect((await get(sim, "/metadata/instance?api-version=2021-02-01")).json).toMatchObject({
      compute: { name: "WestNO_0" },
    });
    expect((await get(sim, "/metadata/instance/compute?api-version=2021-02-01", {})).status).toBe(400);
    // Scheduled events are broadcast: every VM sees the same document.
    expect((await get(sim, se, { ...md, "X-Sef-Sim-Vm": "WestNO_1" })).json).toEqual((await get(sim, se)).json);
  });

  it("serves configurable resource tags as tags and tagsList: the scenario VM's, or per VM", async () => {
    const sim = await start({ vm: { name: "WestNO_0", tags: { env: "prod", owner: "sre" } } });
    const compute = async (vm?: string) =>
      (await get(sim, "/metadata/instance/compute?api-version=2021-02-01", vm ? { ...md, "X-Sef-Sim-Vm": vm } : md))
        .json as Record<string, unknown>;
    expect(await compute()).toMatchObject({
      tags: "env:prod;owner:sre",
      tagsList: [
        { name: "env", value: "prod" },
        { name: "owner", value: "sre" },
      ],
    });
    expect(await compute("WestNO_1")).toMatchObject({ tags: "env:prod;owner:sre" });
    sim.setVmTags("WestNO_1", { env: "staging" });
    expect(await compute("WestNO_1")).toMatchObject({
      tags: "env:staging",
      tagsList: [{ name: "env", value: "staging" }],
    });
    const untagged = await start();
    expect((await get(untagged, "/metadata/instance/compute?api-version=2021-02-01")).json).toMatchObject({
      tags: "",
      tagsList: [],
    });
  });
});

describe("faults", () => {
  it("serves status faults for a window, then the document again; only on GET scheduledevents", async () => {
    let nowMs = 1_700_000_000_000;
    const clock: Clock = { now: () => nowMs, sleep: async () => undefined };
    const sim = await start(
      {
        speed: 1,
        steps: [
          { at: 0, events: [] },
          { at: 10, fault: { kind: "status", status: 500, forSeconds: 5 } },
          { at: 20, fault: { kind: "status", status: 429, count: 1, retryAfterSeconds: 3 } },
        ],
      },
      { clock },
    );
    expect((await get(sim, se)).status).toBe(200);
    nowMs += 10_000;
    expect(await get(sim, se)).toMatchObject({ status: 500, json: { error: expect.any(String) } });
    expect((await get(sim, "/metadata/instance/compute?api-version=2021-02-01")).status).toBe(200);
    expect((await get(sim, se)).status).toBe(500);
    nowMs += 5_000;
    expect((await get(sim, se)).status).toBe(200);
    nowMs += 5_000;
    const throttled = await request(`${sim.url}${se}`, { headers: md });
    expect(throttled.statusCode).toBe(429);
    expect(throttled.headers["retry-after"]).toBe("3");
    await throttled.body.dump();
    expect((await get(sim, se)).status).toBe(200);
    expect(sim.status().faultsServed).toEqual({ "status:500": 2, "status:429": 1 });
    expect(sim.status().requests["/metadata/scheduledevents"]).toEqual({ "200": 3, "500": 2, "429": 1 });
  });

  it("serves malformed, huge and reset answers", async () => {
    const sim = await start({
      steps: [
        {
          at: 0,
          events: [{ EventId: "E1", EventType: "Freeze", Resources: ["WestNO_0"] }],
          fault: { kind: "malformed-json", count: 4 },
        },
      ],
    });
    const bodies: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const res = await request(`${sim.url}${se}`, { headers: md });
      expect(res.statusCode).toBe(200);
      bodies.push(await res.body.text());
    }
    expect(bodies[0]).toMatch(/^\{"DocumentIncarnation":1,/);
    expect(() => JSON.parse(bodies[0]!)).toThrow();
    expect(bodies[1]).toContain("<html>");
    expect(bodies[2]).toBe("");
    expect(Array.isArray((JSON.parse(bodies[3]!) as { Events?: unknown }).Events)).toBe(false);
    expect((await get(sim, se)).json).toMatchObject({ DocumentIncarnation: 1 });

    const huge = await start({ steps: [{ at: 0, events: [], fault: { kind: "huge-body", sizeBytes: 2_000_000 } }] });
    const big = await request(`${huge.url}${se}`, { headers: md });
    const text = await big.body.text();
    expect(text.length).toBeGreaterThanOrEqual(2_000_000);
    expect((JSON.parse(text) as { Events: unknown[] }).Events.length).toBeGreaterThan(100);

    const reset = await start({ steps: [{ at: 0, events: [], fault: { kind: "reset", count: 1 } }] });
    await expect(request(`${reset.url}${se}`, { headers: md })).rejects.toThrow();
    expect((await get(reset, se)).status).toBe(200);
    expect(reset.status().requests["/metadata/scheduledevents"]).toEqual({ reset: 1, "200": 1 });
  });

  it("answers the first call late when the scenario says so", async () => {
    const clock = new FakeClock(Date.UTC(2024, 0, 1));
    const sim = await start(
      { steps: [{ at: 0, events: [], fault: { kind: "slow", delayMs: 300, count: 1 } }] },
      { clock },
    );
    let firstStatus: number | undefined;
    const first = get(sim, se).then((r) => (firstStatus = r.status));
    await waitFor("the first call to be held", () => clock.pendingSleeps === 1);
    await clock.advance(299);
    expect(clock.pendingSleeps, "the held answer woke before its delay").toBe(1);
    expect(firstStatus).toBeUndefined();
    await clock.advance(1);
    await first;
    expect(firstStatus).toBe(200);
    // The second call is not held: answered with the fake time standing still.
    expect((await get(sim, se)).status).toBe(200);
    expect(clock.pendingSleeps).toBe(0);
  });
});

describe("control API (test-only)", () => {
  it("starts the scenario on the first scheduled-events request by default", async () => {
    const sim = await start();
    expect(sim.status()).toMatchObject({ started: false, incarnation: 0, document: { Events: [] } });
    await get(sim, "/metadata/instance/compute?api-version=2021-02-01");
    expect(sim.status().started).toBe(false);
    await get(sim, se);
    expect(sim.status()).toMatchObject({ scenario: "http-test", started: true, incarnation: 1, ended: false });
    const listening = await start({}, { startOn: "listen" });
    expect(listening.status().started).toBe(true);
  });

  it("replaces the document through POST /__sim/document and reports status through GET /__sim/status", async () => {
    const sim = await start();
    await get(sim, se);
    const before = Date.now();
    const res = await post(
      sim,
      "/__sim/document",
      JSON.stringify({
        Events: [{ EventId: "N1", EventType: "Reboot", Resources: ["WestNO_0"], EventStatus: "Started" }],
      }),
      {},
    );
    expect(res.status).toBe(200);
    const answer = JSON.parse(res.text) as { changedAtMs: number; DocumentIncarnation: number };
    expect(answer.DocumentIncarnation).toBe(2);
    expect(answer.changedAtMs).toBeGreaterThanOrEqual(before);
    expect((await get(sim, se)).json).toMatchObject({
      DocumentIncarnation: 2,
      Events: [{ EventId: "N1", EventStatus: "Started", NotBefore: "" }],
    });
    expect((await post(sim, "/__sim/document", JSON.stringify({ Events: [{ EventId: "N2" }] }), {})).status).toBe(400);
    expect((await post(sim, "/__sim/document", "{}", {})).status).toBe(400);
    const status = (await get(sim, "/__sim/status", {})).json as Record<string, unknown>;
    expect(status).toMatchObject({
      scenario: "http-test",
      incarnation: 2,
      document: { DocumentIncarnation: 2 },
      requests: { "/metadata/scheduledevents": { "200": 2 } },
    });
    expect(status.requests).not.toHaveProperty("/__sim/status");
    expect(sim.setEvents([]).incarnation).toBe(3);
  });

  it("POST /__sim/advance moves scenario time forward", async () => {
    const sim = await start({ speed: 1 });
    await get(sim, se);
    const res = await post(sim, "/__sim/advance", JSON.stringify({ seconds: 3600 }), {});
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({ incarnation: 2, document: { Events: [{ EventStatus: "Started" }] } });
    expect((await get(sim, "/__sim/advance", {})).status).toBe(405);
  });
});
