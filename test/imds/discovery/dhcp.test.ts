// The active DHCP query: packet building and reply checks as pure functions, then the real UDP client against the
// testbed's DHCP responder on loopback answering with option 245 among other options, and with faulty replies.
import { afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { testbedCliPath } from "../../helpers/agent-process.js";
import { buildDhcpRequest, parseDhcpReply, dhcpMagicCookie } from "../../../src/agent/imds/discovery/dhcp-packet.js";
import { queryOption245 } from "../../../src/agent/imds/discovery/dhcp-client.js";
import { activeDhcpSettingsSchema } from "../../../src/agent/imds/discovery/settings.js";
import { DiscoveryParseError } from "../../../src/agent/imds/discovery/failure.js";
import {
  buildReply,
  startDhcpResponder,
  type DhcpReplyKind,
  type DhcpResponder,
} from "../../../src/testbed/dhcp/index.js";

const xid = Buffer.from([1, 2, 3, 4]);
const mac = Buffer.from([0x00, 0x0d, 0x3a, 0x16, 0xa7, 0x1a]);

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof DiscoveryParseError) return err.reason;
    throw err;
  }
  return "none";
}

describe("DHCP packets", () => {
  it("builds a BOOTREQUEST with the xid, MAC, cookie, message type and a request for option 245", () => {
    const discover = buildDhcpRequest({ xid, mac, messageType: "discover", broadcast: true });
    expect(discover.length).toBe(300);
    expect([discover[0], discover[1], discover[2]]).toEqual([1, 1, 6]);
    expect(discover.subarray(4, 8)).toEqual(xid);
    expect(discover.readUInt16BE(10)).toBe(0x8000);
    expect(discover.subarray(28, 34)).toEqual(mac);
    expect(discover.subarray(236, 240)).toEqual(dhcpMagicCookie);
    expect([...discover.subarray(240, 250)]).toEqual([53, 1, 1, 55, 4, 1, 3, 6, 245, 255]);
    const inform = buildDhcpRequest({ xid, mac, messageType: "inform", clientAddress: "10.0.0.4", broadcast: false });
    expect(inform[242]).toBe(8);
    expect([...inform.subarray(12, 16)]).toEqual([10, 0, 0, 4]);
  });

  it("reads option 245 (4 bytes, big-endian) from a reply among other options", () => {
    const request = buildDhcpRequest({ xid, mac, messageType: "discover", broadcast: true });
    const reply = parseDhcpReply(buildReply(request, "ok", { option245: "168.63.129.16" })!, { xid, mac });
    expect(reply.option245).toBe("168.63.129.16");
    expect([...reply.options.keys()]).toEqual(expect.arrayContaining([53, 54, 1, 3, 51, 245, 15]));
  });

  it("names each faulty reply", () => {
    const request = buildDhcpRequest({ xid, mac, messageType: "discover", broadcast: true });
    const kinds: Record<string, DhcpReplyKind> = {
      "wrong-xid": "wrong-xid",
      "wrong-mac": "wrong-mac",
      truncated: "truncated",
      "no-option-245": "no-option-245",
      "wrong-length": "wrong-length",
      "bad-cookie": "bad-cookie",
    };
    for (const [reason, kind] of Object.entries(kinds)) {
      expect(
        reasonOf(() => parseDhcpReply(buildReply(request, kind, { option245: "168.63.129.16" })!, { xid, mac })),
        kind,
      ).toBe(reason);
    }
    expect(
      reasonOf(() => parseDhcpReply(buildReply(request, "short", { option245: "168.63.129.16" })!, { xid, mac })),
    ).toBe("truncated");
    expect(reasonOf(() => parseDhcpReply(request, { xid, mac }))).toBe("malformed"); // a request is not a reply
  });
});

describe("the DHCP client against the testbed responder (UDP on loopback)", () => {
  const responders: DhcpResponder[] = [];
  afterEach(async () => {
    await Promise.all(responders.splice(0).map((r) => r.close()));
  });

  async function query(script: DhcpReplyKind[][], timeoutMs = 400) {
    const responder = await startDhcpResponder({ option245: "127.0.0.2", script });
    responders.push(responder);
    const settings = activeDhcpSettingsSchema.parse({
      enabled: true,
      interface: "lo",
      serverAddress: "127.0.0.1",
      serverPort: responder.port,
      clientPort: 0,
      bindAddress: "127.0.0.1",
      timeoutMs,
    });
    const skipped: string[] = [];
    const started = performance.now();
    try {
      const result = await queryOption245(settings, (err) => skipped.push(err.reason));
      return { address: result.address, reason: undefined, skipped, elapsedMs: performance.now() - started, responder };
    } catch (err) {
      if (!(err instanceof DiscoveryParseError)) throw err;
      return { address: undefined, reason: err.reason, skipped, elapsedMs: performance.now() - started, responder };
    }
  }

  it("gets option 245 from a DHCPOFFER", async () => {
    const result = await query([["ok"]]);
    expect(result).toMatchObject({ address: "127.0.0.2", skipped: [] });
    expect(result.responder.requests).toHaveLength(1);
  });

  it("skips replies for another transaction or MAC and too short to check, then takes ours", async () => {
    const result = await query([["wrong-xid", "wrong-mac", "short", "ok"]]);
    expect(result).toMatchObject({ address: "127.0.0.2", skipped: ["wrong-xid", "wrong-mac", "truncated"] });
  });

  it("fails at once on our reply when it is truncated, lacks option 245 or has a 5-byte one", async () => {
    for (const kind of ["truncated", "no-option-245", "wrong-length"] as const) {
      const result = await query([[kind, "ok"]], 2000);
      expect(result.reason, kind).toBe(kind);
      expect(result.elapsedMs, kind).toBeLessThan(1500);
    }
  });

  it("times out when nothing usable arrives", async () => {
    const result = await query([["wrong-xid"]], 300);
    expect(result).toMatchObject({ address: undefined, reason: "timeout", skipped: ["wrong-xid"] });
    const silent = await query([["silent"]], 300);
    expect(silent.reason).toBe("timeout");
    expect(silent.elapsedMs).toBeGreaterThanOrEqual(290);
  });
});

describe("sef-testbed emulate dhcp", () => {
  it("runs the responder from the command line with a reply script", async () => {
    const child = spawn(
      process.execPath,
      [testbedCliPath, "emulate", "dhcp", "--option-245", "127.0.0.7", "--reply", "wrong-mac,ok"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`no listening line; stdout: ${out}`)), 10_000);
        child.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const match = /listening on udp:\/\/127\.0\.0\.1:(\d+)/.exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(Number(match[1]));
          }
        });
      });
      const skipped: string[] = [];
      const settings = activeDhcpSettingsSchema.parse({
        enabled: true,
        interface: "lo",
        serverAddress: "127.0.0.1",
        serverPort: port,
        clientPort: 0,
        bindAddress: "127.0.0.1",
        timeoutMs: 2000,
      });
      const result = await queryOption245(settings, (err) => skipped.push(err.reason));
      expect(result.address).toBe("127.0.0.7");
      expect(skipped).toEqual(["wrong-mac"]);
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
