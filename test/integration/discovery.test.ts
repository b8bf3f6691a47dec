// IMDS endpoint discovery end to end: the built agent with no imdsUrl, the "link-local" probe pointed at a closed
// loopback address (no traffic leaves the machine), finds the simulator at 127.0.0.2 through a dhclient lease file
// or the testbed's DHCP responder, forwards a record to a jsonl sink, reports the endpoint in /readyz and /metrics,
// reuses it after a restart, and while nothing is found stays up, not ready, saying why; a rogue address found first
// (accepting TCP, answering garbage) is neither used nor remembered.
import { describe, expect, it } from "vitest";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { createServer as createTcpServer, type Socket } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { startDhcpResponder } from "../../src/testbed/dhcp/index.js";
import { waitForMetricsUrl, runCli, readJsonl, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import type { SefRecord } from "../../src/contract/record.js";
import { metricValue } from "../helpers/metrics.js";

const leaseFor127002 =
  'lease {\n  interface "eth0";\n  fixed-address 10.0.0.4;\n  option unknown-245 7f:0:0:2;\n  expire never;\n}\n';

function setUp(sim: Simulator, discovery: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "sef-discovery-e2e-"));
  mkdirSync(join(dir, "leases"));
  const out = join(dir, "records.jsonl");
  const configPath = join(dir, "config.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalMs: 200,
      dataDir: join(dir, "data"),
      sinks: [`jsonl:${out}`],
      heartbeatIntervalMs: 3_600_000, // one Heartbeat at start
      metricsPort: 0,
      imdsDiscovery: {
        linkLocalAddress: "127.0.0.13", // nothing listens there: the probe fails fast, as 169.254.169.254 does off Azure
        port: sim.port,
        probeTimeoutMs: 500,
        rememberAddresses: ["127.0.0.2"], // the simulator's address stands for Azure's
        retryInitialDelayMs: 200,
        retryMaxDelayMs: 400,
        wireServerEndpointFile: join(dir, "WireServerEndpoint"),
        leaseFiles: { dhclient: [join(dir, "leases", "dhclient*.leases")], networkd: [], networkManager: [] },
        ...discovery,
      },
    }),
  );
  const start = () => runCli(["run", "--config", configPath], { env: { CLOUDCONTROLIP: "" } });
  return { dir, out, configPath, start, records: () => readJsonl<SefRecord>(out) };
}

async function metricsUrl(agent: RunningProcess): Promise<string> {
  return waitForMetricsUrl(agent);
}

const reboot = (id: string) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  notBeforeInSeconds: 900,
  autoStart: false,
});

describe.concurrent("IMDS endpoint discovery end to end", () => {
  it("finds IMDS through a dhclient lease file, forwards a record, and reuses the endpoint after a restart", async () => {
    const sim = await startSimulator({ scenario: "idle", host: "127.0.0.2" });
    const { dir, start, records } = setUp(sim);
    writeFileSync(join(dir, "leases", "dhclient.eth0.leases"), leaseFor127002);
    let agent = start();
    try {
      const url = await metricsUrl(agent);
      const ready = (await (await fetch(`${url}/readyz`)).json()) as { imdsEndpoint: unknown };
      expect(ready.imdsEndpoint).toEqual({ url: `http://127.0.0.2:${sim.port}`, source: "dhclient" });
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(
        metricValue(metrics, "sef_imds_endpoint_info", {
          source: "dhclient",
          endpoint: `http://127.0.0.2:${sim.port}`,
        }),
      ).toBe(1);
      expect(
        metricValue(metrics, "sef_imds_discovery_errors_total", { source: "link-local", reason: "not-answering" }),
      ).toBe(1);
      expect(agent.stderr()).toMatch(/"source":"dhclient".*IMDS endpoint chosen/);
      sim.setEvents([reboot("DDDD0000-0000-4000-8000-000000000001")]);
      await waitUntil(() => records().some((r) => r.RecordType === "Transition"), 15_000, "a record in the jsonl sink");
      const heartbeat = records().find((r) => r.RecordType === "Heartbeat");
      expect(JSON.parse((heartbeat as { Detail: string }).Detail)).toMatchObject({ imdsEndpointSource: "dhclient" });
      expect(await agent.stop("SIGTERM")).toBe(0);

      // Restart without the lease file: the endpoint remembered in the store still answers, so it is reused.
      rmSync(join(dir, "leases", "dhclient.eth0.leases"));
      agent = start();
      await waitUntil(() => agent.stderr().includes("IMDS endpoint chosen"), 15_000, "the endpoint after restart");
      expect(agent.stderr()).toMatch(/"source":"dhclient","reused":true/);
      sim.setEvents([reboot("DDDD0000-0000-4000-8000-000000000002")]);
      await waitUntil(
        () => records().some((r) => r.RecordType === "Transition" && r.EventId.endsWith("2")),
        15_000,
        "a record after restart",
      );
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
  });

  it("finds IMDS through an active DHCP query to the testbed responder, skipping a reply for another transaction", async () => {
    const sim = await startSimulator({ scenario: "idle", host: "127.0.0.2" });
    const responder = await startDhcpResponder({ option245: "127.0.0.2", script: [["wrong-xid", "ok"]] });
    const { start, records } = setUp(sim, {
      activeDhcp: {
        enabled: true,
        interface: "lo",
        serverAddress: "127.0.0.1",
        serverPort: responder.port,
        clientPort: 0,
        bindAddress: "127.0.0.1",
        timeoutMs: 2000,
      },
    });
    const agent = start();
    try {
      const url = await metricsUrl(agent);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(
        metricValue(metrics, "sef_imds_endpoint_info", { source: "dhcp", endpoint: `http://127.0.0.2:${sim.port}` }),
      ).toBe(1);
      expect(metricValue(metrics, "sef_imds_discovery_errors_total", { source: "dhcp", reason: "wrong-xid" })).toBe(1);
      expect(agent.stderr()).toMatch(/"reason":"wrong-xid"/);
      sim.setEvents([reboot("EEEE0000-0000-4000-8000-000000000001")]);
      await waitUntil(() => records().some((r) => r.RecordType === "Transition"), 15_000, "a record in the jsonl sink");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await responder.close();
      await sim.close();
    }
    expect(responder.requests).toHaveLength(1);
  });

  it("stays up and not ready with the reason while nothing is found, then recovers when a lease appears", async () => {
    const sim = await startSimulator({ scenario: "idle", host: "127.0.0.2" });
    const { dir, start, records } = setUp(sim);
    writeFileSync(
      join(dir, "leases", "dhclient.eth0.leases"),
      "lease {\n  option unknown-245 7f:0:0:2:1;\n  expire never;\n}\n",
    );
    const agent = start();
    try {
      const url = await metricsUrl(agent);
      const readyz = await fetch(`${url}/readyz`);
      expect(readyz.status).toBe(503);
      const body = (await readyz.json()) as { failed: string[] };
      expect(body.failed.join("\n")).toMatch(
        /imds endpoint: no IMDS endpoint found \(link-local: not-answering; dhclient: wrong-length/,
      );
      expect(agent.child.exitCode).toBeNull();
      writeFileSync(join(dir, "leases", "dhclient.eth0.leases"), leaseFor127002);
      await waitUntil(() => agent.stderr().includes("IMDS endpoint chosen"), 15_000, "discovery on retry");
      sim.setEvents([reboot("FFFF0000-0000-4000-8000-000000000001")]);
      await waitUntil(() => records().some((r) => r.RecordType === "Transition"), 15_000, "a record in the jsonl sink");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
  });

  it("discovers again after repeated connection failures and follows IMDS to its new address", async () => {
    const first = await startSimulator({ scenario: "idle", host: "127.0.0.2" });
    const second = await startSimulator({ scenario: "idle", host: "127.0.0.4", port: first.port });
    const { dir, start, records } = setUp(first, { rediscoverAfterFailures: 3 });
    writeFileSync(join(dir, "leases", "dhclient.eth0.leases"), leaseFor127002);
    const agent = start();
    try {
      await waitUntil(() => agent.stderr().includes("IMDS endpoint chosen"), 15_000, "the first endpoint");
      first.setEvents([reboot("ABAB0000-0000-4000-8000-000000000001")]);
      await waitUntil(
        () => records().some((r) => r.RecordType === "Transition"),
        15_000,
        "a record from the first address",
      );
      writeFileSync(join(dir, "leases", "dhclient.eth0.leases"), leaseFor127002.replace("7f:0:0:2", "7f:0:0:4"));
      await first.close();
      await waitUntil(
        () => /"endpoint":"http:\/\/127\.0\.0\.4:\d+","source":"dhclient".*"why":"rediscover"/.test(agent.stderr()),
        20_000,
        "rediscovery",
      );
      second.setEvents([reboot("ABAB0000-0000-4000-8000-000000000002")]);
      await waitUntil(
        () => records().some((r) => r.RecordType === "Transition" && r.EventId.endsWith("2")),
        15_000,
        "a record from the new address",
      );
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await first.close().catch(() => undefined);
      await second.close();
    }
  });

  it("never uses nor remembers a rogue address found first that accepts TCP or answers garbage", async () => {
    const sim = await startSimulator({ scenario: "idle", host: "127.0.0.2" });
    const held: Socket[] = [];
    const silent = createTcpServer((socket) => held.push(socket)); // accepts, never answers
    const garbage = createHttpServer((_req, res) => res.writeHead(200).end('{"Events":"all of them"}'));
    await new Promise<void>((r) => silent.listen(sim.port, "127.0.0.14", r));
    await new Promise<void>((r) => garbage.listen(sim.port, "127.0.0.15", r));
    const { dir, start, records } = setUp(sim, {
      verifyTimeoutMs: 500,
      rememberAddresses: ["127.0.0.14", "127.0.0.15"], // were a rogue used, it would be remembered
    });
    mkdirSync(join(dir, "networkd"));
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as {
      imdsDiscovery: { leaseFiles: object };
    };
    config.imdsDiscovery.leaseFiles = {
      dhclient: [join(dir, "leases", "dhclient*.leases")],
      networkd: [join(dir, "networkd", "*")],
      networkManager: [],
    };
    writeFileSync(join(dir, "config.json"), JSON.stringify(config));
    writeFileSync(join(dir, "WireServerEndpoint"), "127.0.0.14\n");
    writeFileSync(join(dir, "leases", "dhclient.eth0.leases"), leaseFor127002.replace("7f:0:0:2", "7f:0:0:f"));
    writeFileSync(join(dir, "networkd", "2"), "ADDRESS=10.0.0.4\nOPTION_245=7F000002\n");
    let agent = start();
    try {
      const url = await metricsUrl(agent);
      const ready = (await (await fetch(`${url}/readyz`)).json()) as { imdsEndpoint: unknown };
      expect(ready.imdsEndpoint).toEqual({ url: `http://127.0.0.2:${sim.port}`, source: "networkd" });
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain('sef_imds_discovery_errors_total{source="waagent",reason="not-imds"} 1');
      expect(metrics).toContain('sef_imds_discovery_errors_total{source="dhclient",reason="not-imds"} 1');
      expect(agent.stderr()).toMatch(
        /"detail":"127\.0\.0\.14:\d+: IMDS did not answer GET \/metadata\/scheduledevents within 500 ms"/,
      );
      expect(agent.stderr()).toMatch(
        /"detail":"127\.0\.0\.15:\d+: malformed scheduled events document: DocumentIncarnation is missing/,
      );
      sim.setEvents([reboot("ACAC0000-0000-4000-8000-000000000001")]);
      await waitUntil(() => records().some((r) => r.RecordType === "Transition"), 15_000, "a record from IMDS");
      expect(await agent.stop("SIGTERM")).toBe(0);

      // Restarted with nothing to discover: nothing was remembered (127.0.0.2 is not an address to remember).
      for (const file of ["WireServerEndpoint", "leases/dhclient.eth0.leases", "networkd/2"]) rmSync(join(dir, file));
      agent = start();
      const restarted = await metricsUrl(agent);
      const readyz = await fetch(`${restarted}/readyz`);
      expect(readyz.status).toBe(503);
      expect(((await readyz.json()) as { failed: string[] }).failed.join("\n")).toContain("no IMDS endpoint found");
      expect(agent.stderr()).not.toContain("IMDS endpoint chosen");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      held.forEach((socket) => socket.destroy());
      await Promise.all([silent, garbage].map((server) => new Promise((r) => server.close(r))));
      await sim.close();
    }
    expect(records().filter((r) => r.RecordType === "Transition")).toHaveLength(1);
  });

  it("`sef discover` prints each source's failure and the endpoint found, exit 0; or exit 1 when none is", async () => {
    const sim = await startSimulator({ scenario: "idle", host: "127.0.0.2" });
    const { dir, configPath } = setUp(sim);
    try {
      writeFileSync(
        join(dir, "leases", "dhclient.eth0.leases"),
        "lease {\n  option unknown-245 7f:0:0:2:1;\n  expire never;\n}\n",
      );
      const none = runCli(["discover", "--config", configPath], { env: { CLOUDCONTROLIP: "" } });
      expect(await none.exited).toBe(1);
      expect(none.stdout()).toMatch(/^link-local +not-answering +127\.0\.0\.13:\d+: ECONNREFUSED$/m);
      expect(none.stdout()).toMatch(
        /^dhclient +wrong-length +\S+dhclient\.eth0\.leases: option 245 has 5 bytes, expected 4$/m,
      );
      expect(none.stdout()).toContain("no IMDS endpoint found");
      writeFileSync(join(dir, "leases", "dhclient.eth0.leases"), leaseFor127002);
      const found = runCli(["discover", "--config", configPath], { env: { CLOUDCONTROLIP: "" } });
      expect(await found.exited).toBe(0);
      expect(found.stdout()).toContain(`endpoint http://127.0.0.2:${sim.port} (source: dhclient)`);
    } finally {
      await sim.close();
    }
  });
});
