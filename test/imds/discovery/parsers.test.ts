// The pure discovery parsers over lease-file, registry and WireServer fixtures of every supported format,
// including malformed ones: each bad input fails with its own reason.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { parseDhclientLeases } from "../../../src/agent/imds/discovery/lease-dhclient.js";
import { parseNetworkdLease } from "../../../src/agent/imds/discovery/lease-networkd.js";
import { parseNetworkManagerLease } from "../../../src/agent/imds/discovery/lease-networkmanager.js";
import { parseRegQueryOutput } from "../../../src/agent/imds/discovery/registry-output.js";
import { decodeOption245Text, parseIpv4 } from "../../../src/agent/imds/discovery/option245.js";
import { DiscoveryParseError, type DiscoveryFailureReason } from "../../../src/agent/imds/discovery/failure.js";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8");
const nowMs = Date.UTC(2026, 10, 23, 12, 0, 0);

function reasonOf(fn: () => unknown): DiscoveryFailureReason {
  try {
    fn();
  } catch (err) {
    if (err instanceof DiscoveryParseError) return err.reason;
    throw err;
  }
  throw new Error("expected a DiscoveryParseError");
}

describe("option 245 values", () => {
  it("decodes dhclient hex, networkd hex and dotted forms to the same address", () => {
    expect(decodeOption245Text("a8:3f:81:10")).toBe("168.63.129.16");
    expect(decodeOption245Text("A83F8110")).toBe("168.63.129.16");
    expect(decodeOption245Text("168.63.129.16")).toBe("168.63.129.16");
    expect(decodeOption245Text("7f:0:0:2")).toBe("127.0.0.2");
  });

  it("names wrong lengths and garbage", () => {
    expect(reasonOf(() => decodeOption245Text("a8:3f:81"))).toBe("wrong-length");
    expect(reasonOf(() => decodeOption245Text("a83f811001"))).toBe("wrong-length");
    expect(reasonOf(() => decodeOption245Text("1.2.3.4.5"))).toBe("wrong-length");
    expect(reasonOf(() => decodeOption245Text("zz:yy"))).toBe("malformed");
    expect(reasonOf(() => decodeOption245Text("300.1.1.1"))).toBe("malformed");
    expect(reasonOf(() => parseIpv4("168.63.129"))).toBe("malformed");
  });
});

describe("dhclient leases", () => {
  it("takes the last unexpired lease carrying option 245", () => {
    expect(parseDhclientLeases(fixture("dhclient-azure.leases"), nowMs)).toBe("168.63.129.16");
  });

  it("reads the dotted form and `expire never`", () => {
    expect(parseDhclientLeases(fixture("dhclient-dotted.leases"), nowMs)).toBe("168.63.129.16");
  });

  it("reads the quoted form dhclient prints when every byte is printable", () => {
    expect(parseDhclientLeases('lease {\n  option unknown-245 "ABC\\001";\n  expire never;\n}\n', nowMs)).toBe(
      "65.66.67.1",
    );
  });

  it("skips dhclient6's nested lease6 blocks: an IPv6-only file has no option 245, and is not malformed", () => {
    expect(reasonOf(() => parseDhclientLeases(fixture("dhclient6.leases"), nowMs))).toBe("no-option-245");
    expect(parseDhclientLeases(fixture("dhclient6.leases") + fixture("dhclient-dotted.leases"), nowMs)).toBe(
      "168.63.129.16",
    );
  });

  it("reports expired, missing, wrong-length and malformed leases by reason", () => {
    expect(reasonOf(() => parseDhclientLeases(fixture("dhclient-expired.leases"), nowMs))).toBe("expired");
    expect(reasonOf(() => parseDhclientLeases(fixture("dhclient-no-option.leases"), nowMs))).toBe("no-option-245");
    expect(reasonOf(() => parseDhclientLeases(fixture("dhclient-wrong-length.leases"), nowMs))).toBe("wrong-length");
    expect(reasonOf(() => parseDhclientLeases(fixture("dhclient-malformed.leases"), nowMs))).toBe("malformed");
    expect(reasonOf(() => parseDhclientLeases("lease {\n  option unknown-245 a8:3f:81:10;\n", nowMs))).toBe(
      "malformed",
    );
    expect(reasonOf(() => parseDhclientLeases("lease6 {\n  ia-na 1 {\n}\n", nowMs))).toBe("malformed");
    expect(reasonOf(() => parseDhclientLeases("lease {\n  expire someday;\n}\n", nowMs))).toBe("malformed");
  });
});

describe("systemd-networkd leases", () => {
  it("reads OPTION_245 from the environment-file form and Private_Options from the JSON form", () => {
    expect(parseNetworkdLease(fixture("networkd-env.lease"))).toBe("168.63.129.16");
    expect(parseNetworkdLease(fixture("networkd-json.lease"))).toBe("168.63.129.16");
  });

  it("reports missing, wrong-length and malformed leases by reason", () => {
    expect(reasonOf(() => parseNetworkdLease(fixture("networkd-no-option.lease")))).toBe("no-option-245");
    expect(reasonOf(() => parseNetworkdLease(fixture("networkd-wrong-length.lease")))).toBe("wrong-length");
    expect(reasonOf(() => parseNetworkdLease(fixture("networkd-malformed.lease")))).toBe("malformed");
    expect(reasonOf(() => parseNetworkdLease('{"Address": [10,0,0,4], '))).toBe("malformed");
    expect(reasonOf(() => parseNetworkdLease('{"Private_Options": [{"Option": 245, "Data": "a83f81"}]}'))).toBe(
      "wrong-length",
    );
    expect(reasonOf(() => parseNetworkdLease('{"Private_Options": [{"Option": 249, "Data": "00"}]}'))).toBe(
      "no-option-245",
    );
  });
});

describe("NetworkManager files", () => {
  it("reads private_245 from the device state and dhclient-format lease files", () => {
    expect(parseNetworkManagerLease(fixture("nm-device-state"), nowMs)).toBe("168.63.129.16");
    expect(parseNetworkManagerLease(fixture("dhclient-azure.leases"), nowMs)).toBe("168.63.129.16");
  });

  it("reports an internal lease without the option, and a malformed file", () => {
    expect(reasonOf(() => parseNetworkManagerLease(fixture("nm-internal.lease"), nowMs))).toBe("no-option-245");
    expect(reasonOf(() => parseNetworkManagerLease(fixture("nm-malformed"), nowMs))).toBe("malformed");
  });
});

describe("reg query output (Windows registry)", () => {
  it("reads REG_SZ and REG_DWORD values", () => {
    expect(parseRegQueryOutput(fixture("reg-query-sz.txt"))).toBe("168.63.129.16");
    expect(parseRegQueryOutput(fixture("reg-query-dword.txt"))).toBe("168.63.129.16");
  });

  it("reports a missing value and a value that is not an address", () => {
    expect(reasonOf(() => parseRegQueryOutput(fixture("reg-query-missing.txt")))).toBe("no-option-245");
    expect(reasonOf(() => parseRegQueryOutput(fixture("reg-query-bad.txt")))).toBe("malformed");
  });
});

describe("the Azure Linux agent's WireServerEndpoint file", () => {
  it("holds a dotted address", () => {
    expect(parseIpv4(fixture("WireServerEndpoint"))).toBe("168.63.129.16");
  });
});
