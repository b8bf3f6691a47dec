// The active DHCP query with its real defaults — broadcast to 255.255.255.255:67 from 0.0.0.0:68, the MAC of a
// real interface — in a network namespace the test creates (unshare --net, a veth pair), so nothing leaves the
// machine. Runs the built modules in the namespace; needs root, `unshare` and `ip` (as CI has).
import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../../", import.meta.url));

const script = `
const root = process.argv[2];
const { queryOption245 } = await import(root + "src/agent/dist/imds/discovery/dhcp-client.js");
const { activeDhcpSettingsSchema } = await import(root + "src/agent/dist/imds/discovery/settings.js");
const { startDhcpResponder } = await import(root + "src/testbed/dist/dhcp/index.js");
const responder = await startDhcpResponder({ port: 67, host: "0.0.0.0", option245: "168.63.129.16", script: [["wrong-mac", "ok"]] });
const settings = activeDhcpSettingsSchema.parse({ enabled: true, interface: "v0" });
const skipped = [];
const result = await queryOption245(settings, (e) => skipped.push(e.reason));
const request = responder.requests[0];
console.log(JSON.stringify({ address: result.address, skipped, requests: responder.requests.length, broadcastFlag: request.readUInt16BE(10), messageType: request[242] }));
await responder.close();
`;

const setUpNamespace = [
  "ip link set lo up",
  "ip link add v0 type veth peer name v1",
  "ip addr add 10.9.0.1/24 dev v0",
  "ip addr add 10.9.0.2/24 dev v1",
  "ip link set v0 up",
  "ip link set v1 up",
  "ip route add default dev v0",
  'exec "$0" "$1" "$2"',
].join(" && ");

describe("active DHCP query in a private network namespace", () => {
  it("broadcasts a DHCPDISCOVER from port 68 to port 67 and reads option 245 from the reply for its own MAC", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "sef-netns-")), "query.mjs");
    writeFileSync(file, script);
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        "unshare",
        ["--net", "sh", "-c", setUpNamespace, process.execPath, file, root],
        { timeout: 15_000 },
        (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out)),
      );
    });
    expect(JSON.parse(stdout.trim())).toEqual({
      address: "168.63.129.16",
      skipped: ["wrong-mac"],
      requests: 1,
      broadcastFlag: 0x8000,
      messageType: 1,
    });
  });
});
