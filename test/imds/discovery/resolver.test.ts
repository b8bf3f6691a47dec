// The resolver and EndpointDiscovery over real loopback HTTP and TCP listeners and real files: precedence (the
// link-local address first, every time), each bad input named and counted while discovery goes on, a rogue address
// (accepting TCP, answering garbage) never used, retries with backoff while nothing is found, rediscovery after
// repeated connection failures, and reuse of the remembered endpoint at the addresses that may be remembered.
import { afterEach, describe, expect, it } from "vitest";
import { createServer as createTcpServer, type Server, type Socket } from "node:net";
import { createServer as createHttpServer, type ServerResponse } from "node:http";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { Registry } from "prom-client";
import { resolveImdsEndpoint, type ResolveRequest } from "../../../src/agent/imds/discovery/resolver.js";
import { EndpointDiscovery, type RememberedEndpoint } from "../../../src/agent/imds/discovery/endpoint-discovery.js";
import { imdsDiscoverySettingsSchema, type ImdsDiscoverySettings } from "../../../src/agent/imds/discovery/settings.js";
import { tcpProbe } from "../../../src/agent/imds/discovery/probe.js";
import { scheduledEventsVerify } from "../../../src/agent/imds/discovery/verify.js";
import { systemClock } from "../../../src/runtime/clock.js";
import { FakeClock, flushAsync } from "../../helpers/fake-clock.js";
import { waitUntil } from "../../helpers/wait.js";
import { metricValue } from "../../helpers/metrics.js";

const servers: Server[] = [];
const heldSockets: Socket[] = [];
afterEach(async () => {
  heldSockets.splice(0).forEach((socket) => socket.destroy());
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

type Answer = "imds" | "accept-only" | ((res: ServerResponse) => void);

/** A listener at host:port: IMDS answering an empty Scheduled Events document (the default), or a rogue one. */
async function listenOn(host: string, port = 0, answer: Answer = "imds"): Promise<number> {
  const server: Server =
    answer === "accept-only"
      ? createTcpServer((socket) => heldSockets.push(socket)) // accepts the connection, never answers
      : createHttpServer((req, res) => {
          if (answer !== "imds") return answer(res);
          if (req.headers.metadata !== "true" || !req.url?.startsWith("/metadata/scheduledevents?api-version="))
            return res.writeHead(400).end();
          res.writeHead(200, { "content-type": "application/json" }).end('{"DocumentIncarnation":0,"Events":[]}');
        });
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return (server.address() as { port: number }).port;
}

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const silentLogger = pino({ level: "silent" });

/** A sandbox: nothing at the "link-local" 127.0.0.3, lease directories under a temp dir, no real system file read. */
function sandbox(port: number, over: Record<string, unknown> = {}): { dir: string; settings: ImdsDiscoverySettings } {
  const dir = mkdtempSync(join(tmpdir(), "sef-discovery-"));
  for (const sub of ["dhclient", "networkd", "nm"]) mkdirSync(join(dir, sub));
  const settings = imdsDiscoverySettingsSchema.parse({
    linkLocalAddress: "127.0.0.3",
    port,
    probeTimeoutMs: 300,
    verifyTimeoutMs: 500,
    rememberAddresses: ["127.0.0.2", "127.0.0.6"],
    wireServerEndpointFile: join(dir, "WireServerEndpoint"),
    leaseFiles: {
      dhclient: [join(dir, "dhclient", "dhclient*.leases")],
      networkd: [join(dir, "networkd", "*")],
      networkManager: [join(dir, "nm", "*")],
    },
    retryInitialDelayMs: 1000,
    retryMaxDelayMs: 4000,
    rediscoverAfterFailures: 3,
    ...over,
  });
  return { dir, settings };
}

function request(
  settings: ImdsDiscoverySettings,
  over: Partial<ResolveRequest> = {},
  env: NodeJS.ProcessEnv = {},
): ResolveRequest {
  return { settings, probe: tcpProbe, context: { env, platform: "linux", nowMs: Date.UTC(2026, 10, 23) }, ...over };
}

describe("resolveImdsEndpoint", () => {
  it("takes an explicit URL without probing anything", async () => {
    const { settings } = sandbox(1);
    const outcome = await resolveImdsEndpoint(request(settings, { explicitUrl: "http://127.0.0.9:1" }));
    expect(outcome).toEqual({
      endpoint: { url: "http://127.0.0.9:1", source: "explicit", reused: false },
      failures: [],
    });
  });

  it("uses the link-local address when it answers", async () => {
    const port = await listenOn("127.0.0.3");
    const { settings } = sandbox(port);
    const outcome = await resolveImdsEndpoint(request(settings, {}, { CLOUDCONTROLIP: "127.0.0.2" }));
    expect(outcome.endpoint).toEqual({ url: `http://127.0.0.3:${port}`, source: "link-local", reused: false });
  });

  it("goes through the sources in order, naming each bad input, until a candidate answers", async () => {
    const port = await listenOn("127.0.0.2");
    const { dir, settings } = sandbox(port);
    writeFileSync(join(dir, "WireServerEndpoint"), "127.0.0.5\n"); // nothing listens there
    copyFileSync(fixture("dhclient-malformed.leases"), join(dir, "dhclient", "dhclient.eth0.leases"));
    copyFileSync(fixture("dhclient-wrong-length.leases"), join(dir, "dhclient", "dhclient.eth1.leases"));
    writeFileSync(
      join(dir, "networkd", "2"),
      "# This is private data. Do not parse.\nADDRESS=10.0.0.4\nOPTION_245=7F000002\n",
    );
    copyFileSync(fixture("nm-device-state"), join(dir, "nm", "2")); // never read: networkd answered first
    const outcome = await resolveImdsEndpoint(
      request(settings, {
        context: {
          env: { CLOUDCONTROLIP: "banana" },
          platform: "linux",
          nowMs: Date.UTC(2026, 10, 23),
          runRegQuery: async () => "\r\nHKEY_LOCAL_MACHINE\\Software\\CloudControl\r\n",
        },
      }),
    );
    expect(outcome.endpoint).toEqual({ url: `http://127.0.0.2:${port}`, source: "networkd", reused: false });
    expect(outcome.failures.map((f) => `${f.source}:${f.reason}`)).toEqual([
      "link-local:not-answering",
      "env:malformed",
      "registry:no-option-245",
      "waagent:not-answering",
      "dhclient:malformed",
      "dhclient:wrong-length",
    ]);
    expect(outcome.failures.find((f) => f.source === "dhclient")?.file).toBe(
      join(dir, "dhclient", "dhclient.eth0.leases"),
    );
  });

  it("tries the link-local address first every time, before a remembered endpoint that answers too", async () => {
    const port = await listenOn("127.0.0.3");
    await listenOn("127.0.0.2", port);
    const { settings } = sandbox(port);
    const remembered = { url: `http://127.0.0.2:${port}`, source: "dhcp" as const };
    const outcome = await resolveImdsEndpoint(request(settings, { remembered }));
    expect(outcome).toEqual({
      endpoint: { url: `http://127.0.0.3:${port}`, source: "link-local", reused: false },
      failures: [],
    });
  });

  it("never trusts a candidate that accepts TCP but does not answer the Scheduled Events API with a document", async () => {
    const port = await listenOn("127.0.0.2");
    await listenOn("127.0.0.4", port, "accept-only");
    await listenOn("127.0.0.5", port, (res) => res.writeHead(200).end("<html>welcome</html>"));
    await listenOn("127.0.0.7", port, (res) => res.writeHead(200).end('{"DocumentIncarnation":-1,"Events":[]}'));
    await listenOn("127.0.0.8", port, (res) => res.writeHead(404).end());
    await listenOn("127.0.0.9", port, (res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(300 * 1024, "x"));
    });
    const { dir, settings } = sandbox(port, { verifyTimeoutMs: 300 });
    writeFileSync(join(dir, "WireServerEndpoint"), "127.0.0.4\n");
    const lease = (n: number, hex: string) =>
      writeFileSync(join(dir, "networkd", String(n)), `ADDRESS=10.0.0.4\nOPTION_245=${hex}\n`);
    [["7F000005"], ["7F000007"], ["7F000008"], ["7F000009"], ["7F000002"]].forEach(([hex], i) => lease(i + 2, hex!));
    const outcome = await resolveImdsEndpoint(
      request(settings, { remembered: { url: `http://127.0.0.5:${port}`, source: "dhcp" } }),
    );
    expect(outcome.endpoint).toEqual({ url: `http://127.0.0.2:${port}`, source: "networkd", reused: false });
    expect(outcome.failures.map((f) => `${f.source}:${f.reason}:${f.detail.replace(/^[\d.]+:\d+: /, "")}`)).toEqual([
      "link-local:not-answering:ECONNREFUSED",
      "remembered:not-imds:malformed scheduled events document: body is not JSON: Unexpected token '<', \"<html>welcome</html>\" is not valid JSON",
      "waagent:not-imds:IMDS did not answer GET /metadata/scheduledevents within 300 ms",
      "networkd:not-imds:malformed scheduled events document: DocumentIncarnation is missing or not a non-negative integer",
      "networkd:not-imds:IMDS answered 404 for /metadata/scheduledevents: ",
      "networkd:not-imds:IMDS body exceeds the 262144-byte cap",
    ]);
  });

  it("reports every source when nothing is found", async () => {
    const { dir, settings } = sandbox(9, { wireServerEndpointFile: `/tmp/${"x".repeat(300)}` }); // ENAMETOOLONG: unreadable even for root
    copyFileSync(fixture("networkd-no-option.lease"), join(dir, "networkd", "2"));
    copyFileSync(fixture("nm-malformed"), join(dir, "nm", "2"));
    mkdirSync(join(dir, "nm", "3")); // a directory matching the pattern is skipped, not an error
    const outcome = await resolveImdsEndpoint(request(settings));
    expect(outcome.endpoint).toBeUndefined();
    expect(outcome.failures.map((f) => `${f.source}:${f.reason}`)).toEqual([
      "link-local:not-answering",
      "waagent:unreadable",
      "networkd:no-option-245",
      "networkmanager:malformed",
    ]);
    expect(outcome.failures[1]!.detail).toBe("ENAMETOOLONG");
  });
});

describe("EndpointDiscovery", () => {
  it("keeps retrying with backoff while nothing is found, says why, and counts each failure", async () => {
    const port = await listenOn("127.0.0.2");
    const { dir, settings } = sandbox(port);
    const clock = new FakeClock();
    const registry = new Registry();
    // The longest jitter: each wait is the whole backoff (1000 ms, then 2000 ms).
    const discovery = new EndpointDiscovery({
      settings,
      clock,
      logger: silentLogger,
      registry,
      env: {},
      platform: "linux",
      random: () => 0.999999,
    });
    await discovery.start();
    expect(discovery.current()).toEqual({ error: expect.stringContaining("link-local: not-answering") });
    expect(discovery.snapshot()).toMatchObject({ url: null, error: expect.stringContaining("no IMDS endpoint found") });
    copyFileSync(fixture("dhclient-wrong-length.leases"), join(dir, "dhclient", "dhclient.eth0.leases"));
    await clock.advance(1000);
    await waitUntil(() => /wrong-length/.test(discovery.snapshot().error ?? ""), 5000, "the second round");
    writeFileSync(
      join(dir, "dhclient", "dhclient.eth0.leases"),
      "lease {\n  option unknown-245 7f:0:0:2;\n  expire never;\n}\n",
    );
    await clock.advance(1999); // the next round waits 2000 ms
    await flushAsync();
    expect(discovery.snapshot().url).toBeNull();
    await clock.advance(1);
    await waitUntil(() => discovery.snapshot().url !== null, 5000, "the third round");
    expect(discovery.snapshot()).toEqual({
      url: `http://127.0.0.2:${port}`,
      source: "dhclient",
      reused: false,
      error: null,
    });
    const text = await registry.metrics();
    expect(
      metricValue(text, "sef_imds_endpoint_info", { source: "dhclient", endpoint: `http://127.0.0.2:${port}` }),
    ).toBe(1);
    expect(
      metricValue(text, "sef_imds_discovery_errors_total", { source: "link-local", reason: "not-answering" }),
    ).toBe(3);
    expect(metricValue(text, "sef_imds_discovery_errors_total", { source: "dhclient", reason: "wrong-length" })).toBe(
      1,
    );
    await discovery.stop();
  });

  it("reuses the remembered endpoint while it answers, and remembers what it found", async () => {
    const port = await listenOn("127.0.0.2");
    const { settings } = sandbox(port);
    const saved: RememberedEndpoint[] = [];
    const memory = {
      load: () => ({ url: `http://127.0.0.2:${port}`, source: "dhcp" as const }),
      save: (e: RememberedEndpoint) => saved.push(e),
    };
    const discovery = new EndpointDiscovery({
      settings,
      clock: systemClock,
      logger: silentLogger,
      env: {},
      platform: "linux",
    });
    await discovery.start(memory);
    expect(discovery.snapshot()).toEqual({
      url: `http://127.0.0.2:${port}`,
      source: "dhcp",
      reused: true,
      error: null,
    });
    expect(saved).toEqual([{ url: `http://127.0.0.2:${port}`, source: "dhcp" }]);
    await discovery.stop();
  });

  it("remembers only the addresses it may remember, and ignores a remembered one at any other address", async () => {
    const port = await listenOn("127.0.0.2");
    await listenOn("127.0.0.5", port);
    const { dir, settings } = sandbox(port, { rememberAddresses: ["169.254.169.254", "168.63.129.16"] });
    writeFileSync(join(dir, "networkd", "2"), "ADDRESS=10.0.0.4\nOPTION_245=7F000002\n");
    const saved: RememberedEndpoint[] = [];
    const discovery = new EndpointDiscovery({
      settings,
      clock: systemClock,
      logger: silentLogger,
      env: {},
      platform: "linux",
    });
    // An older agent remembered 127.0.0.5 (which answers as IMDS does): not an address to remember, so not reused.
    await discovery.start({
      load: () => ({ url: `http://127.0.0.5:${port}`, source: "dhclient" }),
      save: (e) => saved.push(e),
    });
    expect(discovery.snapshot()).toEqual({
      url: `http://127.0.0.2:${port}`,
      source: "networkd",
      reused: false,
      error: null,
    });
    expect(saved).toEqual([]);
    await discovery.stop();
  });

  it("ignores a remembered endpoint that is malformed or on another port than configured", async () => {
    const port = await listenOn("127.0.0.2");
    const other = await listenOn("127.0.0.2");
    const { dir, settings } = sandbox(port);
    writeFileSync(join(dir, "networkd", "2"), "ADDRESS=10.0.0.4\nOPTION_245=7F000002\n");
    for (const url of [`http://127.0.0.2:${other}`, "not a url"]) {
      const discovery = new EndpointDiscovery({
        settings,
        clock: systemClock,
        logger: silentLogger,
        env: {},
        platform: "linux",
      });
      await discovery.start({ load: () => ({ url, source: "dhcp" }), save: () => undefined });
      expect(discovery.snapshot(), url).toEqual({
        url: `http://127.0.0.2:${port}`,
        source: "networkd",
        reused: false,
        error: null,
      });
      await discovery.stop();
    }
  });

  it("discovers again after N consecutive connection failures and switches to the new address", async () => {
    const port = await listenOn("127.0.0.2");
    const { dir, settings } = sandbox(port);
    writeFileSync(join(dir, "networkd", "2"), "ADDRESS=10.0.0.4\nOPTION_245=7F000002\n");
    const discovery = new EndpointDiscovery({
      settings,
      clock: systemClock,
      logger: silentLogger,
      env: {},
      platform: "linux",
    });
    await discovery.start();
    expect(discovery.snapshot().url).toBe(`http://127.0.0.2:${port}`);
    await new Promise((r) => servers.shift()!.close(r)); // the old address stops answering
    await listenOn("127.0.0.6", port);
    writeFileSync(join(dir, "networkd", "2"), "ADDRESS=10.0.0.4\nOPTION_245=7F000006\n");
    discovery.connectionFailed();
    discovery.connectionFailed();
    discovery.answered(); // a success in between starts the count over
    discovery.connectionFailed();
    discovery.connectionFailed();
    await flushAsync();
    expect(discovery.snapshot().url).toBe(`http://127.0.0.2:${port}`);
    discovery.connectionFailed();
    await waitUntil(() => discovery.snapshot().url === `http://127.0.0.6:${port}`, 5000, "rediscovery");
    expect(discovery.snapshot()).toMatchObject({ source: "networkd", reused: false });
    await discovery.stop();
  });

  it("never rediscovers an explicit URL", async () => {
    const { settings } = sandbox(9);
    const discovery = new EndpointDiscovery({
      explicitUrl: "http://127.0.0.9:9",
      settings,
      clock: systemClock,
      logger: silentLogger,
      env: {},
      platform: "linux",
    });
    await discovery.start();
    for (let i = 0; i < 10; i++) discovery.connectionFailed();
    await flushAsync();
    expect(discovery.snapshot()).toEqual({ url: "http://127.0.0.9:9", source: "explicit", reused: false, error: null });
    await discovery.stop();
  });
});

describe("scheduledEventsVerify", () => {
  /** An HTTP listener on 127.0.0.2 answering `status` with `body`; counts the connections still open. */
  async function answering(status: number, body: string): Promise<{ url: string; open: () => number }> {
    const server = createHttpServer((_req, res) => res.writeHead(status).end(body));
    const sockets = new Set<Socket>();
    server.on("connection", (socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve));
    return { url: `http://127.0.0.2:${(server.address() as { port: number }).port}`, open: () => sockets.size };
  }

  it("trusts a document, and leaves no connection open after asking", async () => {
    const imds = await answering(200, '{"DocumentIncarnation":3,"Events":[]}');
    expect(await scheduledEventsVerify(imds.url, "2020-07-01", 2000)).toEqual({
      answered: true,
      detail: "answered a Scheduled Events document",
    });
    await waitUntil(() => imds.open() === 0, 5000, "the verification's connection closed");
  });

  it("says what a refused answer was, cut to 120 characters with an ellipsis when longer", async () => {
    const prefix = "IMDS answered 404 for /metadata/scheduledevents: ";
    const exactly = await answering(404, "x".repeat(120 - prefix.length));
    expect(await scheduledEventsVerify(exactly.url, "2020-07-01", 2000)).toEqual({
      answered: false,
      detail: `${prefix}${"x".repeat(120 - prefix.length)}`,
    });
    const longer = await answering(404, "y".repeat(121 - prefix.length));
    const { detail } = await scheduledEventsVerify(longer.url, "2020-07-01", 2000);
    expect(detail).toBe(`${prefix}${"y".repeat(119 - prefix.length)}…`);
    expect(detail).toHaveLength(120);
  });

  it("gives up when the caller's signal aborts, long before its own deadline", async () => {
    const port = await listenOn("127.0.0.4", 0, "accept-only");
    const controller = new AbortController();
    const verifying = scheduledEventsVerify(`http://127.0.0.4:${port}`, "2020-07-01", 60_000, controller.signal);
    controller.abort(new Error("discovery stopped"));
    expect(await verifying).toEqual({ answered: false, detail: "discovery stopped" });
  });
});
