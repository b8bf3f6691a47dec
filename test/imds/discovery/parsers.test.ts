// The pure discovery parsers over lease-file, registry and WireServer fixtures of every supported format,
// including malformed ones: each bad input fails with its own reason.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { parseDhclientLeases } from "../../../src/agent/imds/discovery/lease-dhclient.js";
import { parseNetworkdLease } from "../../../src/agent/imds/discovery/lease-networkd.js";
import { parseNetworkManagerLease } from "../../../src/agent/imds/discovery/lease-networkmanager.js";
import { parseRegQueryOutput, registryKey } from "../../../src/agent/imds/discovery/registry-output.js";
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

/** `reason: message` of the DiscoveryParseError `fn` throws. */
function problemOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof DiscoveryParseError) return `${err.reason}: ${err.message}`;
    throw err;
  }
  throw new Error("expected a DiscoveryParseError");
}

describe("each reader's words for a bad input (exact, since the log and `sef discover` show them)", () => {
  it("option 245 in its textual forms", () => {
    expect(decodeOption245Text(" 7f:00:0:1 ")).toBe("127.0.0.1");
    expect(decodeOption245Text("10.1.2.3")).toBe("10.1.2.3");
    expect(decodeOption245Text("255.0.0.255")).toBe("255.0.0.255");
    expect(decodeOption245Text("7F00000A")).toBe("127.0.0.10");
    expect(problemOf(() => decodeOption245Text("  "))).toBe("malformed: option 245 value is empty");
    expect(problemOf(() => decodeOption245Text("1.2.3"))).toBe(
      'wrong-length: option 245 "1.2.3" has 3 bytes, expected 4',
    );
    expect(problemOf(() => decodeOption245Text("1.2.3.256"))).toBe(
      'malformed: option 245 "1.2.3.256" is not an IPv4 address',
    );
    expect(problemOf(() => decodeOption245Text("1.2.3.4x"))).toBe(
      'malformed: option 245 value "1.2.3.4x" is neither hex bytes nor a dotted IPv4 address',
    );
    expect(problemOf(() => decodeOption245Text("x1.2.3.4"))).toMatch(
      /^malformed: option 245 value "x1.2.3.4" is neither/,
    );
    expect(problemOf(() => decodeOption245Text("1234.1.1.1"))).toMatch(/is neither hex bytes/);
    expect(problemOf(() => decodeOption245Text("a8:3f:81"))).toBe("wrong-length: option 245 has 3 bytes, expected 4");
    expect(problemOf(() => decodeOption245Text("a8:3f:81:100"))).toMatch(/is neither hex bytes/);
    expect(problemOf(() => decodeOption245Text("xa8:3f:81:10"))).toMatch(/is neither hex bytes/);
    expect(problemOf(() => decodeOption245Text("a8:3f:81:10:"))).toMatch(/is neither hex bytes/);
    expect(problemOf(() => decodeOption245Text("a83f811"))).toMatch(/is neither hex bytes/);
    expect(problemOf(() => decodeOption245Text("xa83f8110"))).toMatch(/is neither hex bytes/);
    expect(problemOf(() => decodeOption245Text("a83f8110x"))).toMatch(/is neither hex bytes/);
    expect(problemOf(() => decodeOption245Text("a83f81"))).toBe("wrong-length: option 245 has 3 bytes, expected 4");
    expect(problemOf(() => decodeOption245Text("g".repeat(70)))).toBe(
      `malformed: option 245 value "${"g".repeat(60)}" is neither hex bytes nor a dotted IPv4 address`,
    );
  });

  it("a dotted address given by people", () => {
    expect(parseIpv4(" 010.0.0.1\n")).toBe("10.0.0.1");
    expect(problemOf(() => parseIpv4("1.2.3.4.5"))).toBe('malformed: "1.2.3.4.5" is not an IPv4 address');
    expect(problemOf(() => parseIpv4("1.2.3.256"))).toBe('malformed: "1.2.3.256" is not an IPv4 address');
    expect(problemOf(() => parseIpv4("1.2.3.x4"))).toBe('malformed: "1.2.3.x4" is not an IPv4 address');
    expect(problemOf(() => parseIpv4("1.2.3.4x"))).toBe('malformed: "1.2.3.4x" is not an IPv4 address');
    expect(problemOf(() => parseIpv4("1.2.3.1000"))).toBe('malformed: "1.2.3.1000" is not an IPv4 address');
    expect(problemOf(() => parseIpv4("1.2.3."))).toBe('malformed: "1.2.3." is not an IPv4 address');
    expect(problemOf(() => parseIpv4("9".repeat(70)))).toBe(`malformed: "${"9".repeat(60)}" is not an IPv4 address`);
  });

  it("reg query output of each value type", () => {
    const output = (line: string) => `\r\nHKEY_LOCAL_MACHINE\\Software\\CloudControl\r\n${line}\r\n\r\n`;
    expect(parseRegQueryOutput(output("    cloudcontrolip    reg_expand_sz    10.0.0.1"))).toBe("10.0.0.1");
    expect(parseRegQueryOutput(output("    CloudControlIp    REG_DWORD    0xa83f8110"))).toBe("168.63.129.16");
    expect(parseRegQueryOutput(output("    CloudControlIp    REG_DWORD    0x1"))).toBe("0.0.0.1");
    expect(parseRegQueryOutput(output("    CloudControlIp    REG_BINARY    A83F8110"))).toBe("168.63.129.16");
    expect(parseRegQueryOutput(output("    CloudControlIp    REG_SZ    10.0.0.2   "))).toBe("10.0.0.2");
    expect(problemOf(() => parseRegQueryOutput(output("CloudControlIp    REG_SZ    10.0.0.1")))).toBe(
      "no-option-245: no CloudControlIp value in the reg query output",
    );
    expect(problemOf(() => parseRegQueryOutput(output("    CloudControlIpX    REG_SZ    10.0.0.1")))).toBe(
      "no-option-245: no CloudControlIp value in the reg query output",
    );
    expect(problemOf(() => parseRegQueryOutput(output("    CloudControlIp    REG_DWORD    a83f8110")))).toBe(
      'malformed: REG_DWORD value "a83f8110" is not 0x…',
    );
    expect(problemOf(() => parseRegQueryOutput(output("    CloudControlIp    REG_DWORD    0x1a83f8110")))).toBe(
      'malformed: REG_DWORD value "0x1a83f8110" is not 0x…',
    );
    expect(problemOf(() => parseRegQueryOutput(output("    CloudControlIp    REG_DWORD    0xa83f8110z")))).toBe(
      'malformed: REG_DWORD value "0xa83f8110z" is not 0x…',
    );
    expect(problemOf(() => parseRegQueryOutput(output("    CloudControlIp    REG_MULTI_SZ    10.0.0.1")))).toBe(
      "malformed: CloudControlIp has unsupported type REG_MULTI_SZ",
    );
  });

  it("systemd-networkd leases", () => {
    expect(parseNetworkdLease("  \n# comment\nADDRESS=10.0.0.4\r\nOPTION_245=7F000002\n\n")).toBe("127.0.0.2");
    expect(parseNetworkdLease("OPTION_2450=00\nOPTION_245=7F000003\n")).toBe("127.0.0.3");
    expect(problemOf(() => parseNetworkdLease("ADDRESS=10.0.0.4\nbad line\n"))).toBe(
      "malformed: line 2: expected KEY=VALUE",
    );
    expect(problemOf(() => parseNetworkdLease("address=10.0.0.4\n"))).toBe("malformed: line 1: expected KEY=VALUE");
    expect(problemOf(() => parseNetworkdLease("X ADDRESS=10.0.0.4\n"))).toBe("malformed: line 1: expected KEY=VALUE");
    expect(problemOf(() => parseNetworkdLease("ADDRESS-2=10.0.0.4\n"))).toBe("malformed: line 1: expected KEY=VALUE");
    expect(problemOf(() => parseNetworkdLease("# only a comment\n\n"))).toBe("malformed: no KEY=VALUE lines");
    expect(problemOf(() => parseNetworkdLease("ADDRESS=10.0.0.4\n"))).toBe("no-option-245: no OPTION_245 line");
    expect(problemOf(() => parseNetworkdLease("  {"))).toMatch(/^malformed: not valid JSON \(/);
    expect(problemOf(() => parseNetworkdLease('{"Address": [10, 0, 0, 4]}'))).toBe("no-option-245: no Private_Options");
    expect(problemOf(() => parseNetworkdLease('{"Private_Options": {"Option": 245}}'))).toBe(
      "malformed: Private_Options is not an array",
    );
    expect(problemOf(() => parseNetworkdLease('{"Private_Options": [null, 245, {"Option": "245"}]}'))).toBe(
      "no-option-245: Private_Options has no option 245",
    );
    expect(parseNetworkdLease('{"Private_Options": [{"Option": 245, "Data": [127, 0, 0, 255]}]}')).toBe("127.0.0.255");
    expect(parseNetworkdLease('{"Private_Options": [{"Option": 245, "Data": [0, 0, 0, 0]}]}')).toBe("0.0.0.0");
    for (const data of ["[127, 0, 0, 256]", "[127, 0, 0, -1]", "[127, 0, 0, 1.5]", "{}", "5"])
      expect(problemOf(() => parseNetworkdLease(`{"Private_Options": [{"Option": 245, "Data": ${data}}]}`))).toBe(
        "malformed: option 245 Data is neither a hex string nor a byte array",
      );
  });

  it("NetworkManager key files", () => {
    const text = "[dhcp4]\n; comment\n# comment\n\nDHCP4_PRIVATE_245 = 7f:0:0:4\nip_address=10.0.0.4\n";
    expect(parseNetworkManagerLease(text, nowMs)).toBe("127.0.0.4");
    for (const key of ["private_245", "unknown_245", "option_245", "dhcp4_unknown_245"])
      expect(parseNetworkManagerLease(`${key}=7f:0:0:5`, nowMs)).toBe("127.0.0.5");
    expect(parseNetworkManagerLease("a.b-c_d=1\r\nprivate_245=7f:0:0:6", nowMs)).toBe("127.0.0.6");
    expect(parseNetworkManagerLease("  lease {\n  option unknown-245 7f:0:0:7;\n}\n", nowMs)).toBe("127.0.0.7");
    expect(problemOf(() => parseNetworkManagerLease("[dhcp4]\nkey value\n", nowMs))).toBe(
      "malformed: line 2: expected key=value or [section]",
    );
    expect(problemOf(() => parseNetworkManagerLease("[dhcp4\nk=v\n", nowMs))).toBe(
      "malformed: line 1: expected key=value or [section]",
    );
    expect(problemOf(() => parseNetworkManagerLease("x[dhcp4]\n", nowMs))).toBe(
      "malformed: line 1: expected key=value or [section]",
    );
    expect(problemOf(() => parseNetworkManagerLease("k:y=v\n", nowMs))).toBe(
      "malformed: line 1: expected key=value or [section]",
    );
    expect(problemOf(() => parseNetworkManagerLease("[dhcp4]\n[]\n", nowMs))).toBe(
      "malformed: line 2: expected key=value or [section]",
    );
    expect(problemOf(() => parseNetworkManagerLease("[dhcp4]\n# c\n; c\n", nowMs))).toBe(
      "malformed: no key=value lines",
    );
    expect(problemOf(() => parseNetworkManagerLease("private_2450=7f:0:0:1\n", nowMs))).toBe(
      "no-option-245: no private_245 key",
    );
    expect(problemOf(() => parseNetworkManagerLease("leases {\n", nowMs))).toBe(
      "malformed: line 1: expected key=value or [section]",
    );
  });

  it("dhclient leases", () => {
    const lease = (...statements: string[]) => `lease {\n${statements.map((s) => `  ${s}\n`).join("")}}\n`;
    expect(problemOf(() => parseDhclientLeases("# nothing\n", nowMs))).toBe("no-option-245: no IPv4 lease { … } block");
    expect(problemOf(() => parseDhclientLeases(lease("fixed-address 10.0.0.4;") + lease("renew never;"), nowMs))).toBe(
      "no-option-245: none of 2 lease(s) carries option 245",
    );
    expect(
      problemOf(() =>
        parseDhclientLeases(lease("option unknown-245 7f:0:0:1;", "expire epoch 1;") + lease("expire never;"), nowMs),
      ),
    ).toBe("expired: all 1 lease(s) carrying option 245 have expired");
    // The lease expiring exactly now has expired; one a second later has not.
    const at = (ms: number) => `expire epoch ${ms / 1000};`;
    expect(problemOf(() => parseDhclientLeases(lease("option unknown-245 7f:0:0:1;", at(nowMs)), nowMs))).toMatch(
      /^expired: all 1 lease/,
    );
    expect(parseDhclientLeases(lease("option unknown-245 7f:0:0:1;", at(nowMs + 1000)), nowMs)).toBe("127.0.0.1");
    // The last current lease wins, whatever came before.
    expect(
      parseDhclientLeases(
        lease("option unknown-245 7f:0:0:1;") + lease("option unknown-245 7f:0:0:2;", "expire epoch 1;"),
        nowMs,
      ),
    ).toBe("127.0.0.1");
    expect(
      parseDhclientLeases(lease("option unknown-245 7f:0:0:1;") + lease("OPTION OPTION-245 7f:0:0:2;"), nowMs),
    ).toBe("127.0.0.2");
    expect(parseDhclientLeases(lease("option unknown-245 7f:0:0:3;", "expire 4 2099/1/2 3:04:05;"), nowMs)).toBe(
      "127.0.0.3",
    );
    expect(
      problemOf(() =>
        parseDhclientLeases(lease("option unknown-245 7f:0:0:3;", "expire 4 2026/11/23 11:59:59;"), nowMs),
      ),
    ).toMatch(/^expired: /);
    expect(parseDhclientLeases(lease("option unknown-245 7f:0:0:3;", "expire 4 2026/11/23 12:00:01;"), nowMs)).toBe(
      "127.0.0.3",
    );
    for (const bad of [
      "4 2026/11/23 12:00",
      "x4 2026/11/23 12:00:00",
      "4 2026/11/23 12:00:00x",
      "epoch 12x",
      "epoch",
      "xepoch 12",
    ])
      expect(problemOf(() => parseDhclientLeases(lease(`expire ${bad};`), nowMs))).toBe(
        `malformed: cannot read "expire ${bad}"`,
      );
    expect(problemOf(() => parseDhclientLeases(lease("option unknown-245 7f:0:0;"), nowMs))).toBe(
      "wrong-length: option 245 has 3 bytes, expected 4",
    );
    expect(parseDhclientLeases(lease('option unknown-245 "\\177\\000\\000\\011";'), nowMs)).toBe("127.0.0.9");
    expect(parseDhclientLeases(lease('option unknown-245 "A\\"B\\\\";'), nowMs)).toBe("65.34.66.92");
    expect(parseDhclientLeases(lease('option unknown-245 "\\18AB";'), nowMs)).toBe("49.56.65.66");
    expect(problemOf(() => parseDhclientLeases(lease('option unknown-245 "ABC";'), nowMs))).toBe(
      "wrong-length: option 245 has 3 bytes, expected 4",
    );
    expect(problemOf(() => parseDhclientLeases("lease {\n  renew never\n}\n", nowMs))).toBe(
      'malformed: line 2: statement does not end in ";"',
    );
    expect(problemOf(() => parseDhclientLeases("lease {\n  x { y;\n}\n", nowMs))).toBe(
      "malformed: line 2: unexpected brace inside a lease",
    );
    expect(problemOf(() => parseDhclientLeases("lease {\n  x } y;\n}\n", nowMs))).toBe(
      "malformed: line 2: unexpected brace inside a lease",
    );
    expect(problemOf(() => parseDhclientLeases("default-duid 1;\nnot a statement\n", nowMs))).toBe(
      'malformed: line 2: expected "lease {" or a statement ending in ";"',
    );
    expect(problemOf(() => parseDhclientLeases("lease6 {\n  ia-na 1 {\n  } } }\n", nowMs))).toBe(
      'malformed: line 3: unbalanced "}"',
    );
    expect(problemOf(() => parseDhclientLeases("lease {\n", nowMs))).toBe("malformed: the last block is not closed");
    // Nested blocks of another kind are skipped whole, braces counted per line; comments are not statements.
    expect(
      parseDhclientLeases(
        "lease6 {\n  ia-na 1 { } {\n  }\n}\n# a comment {\n" + lease("option unknown-245 7f:0:0:8; # the host"),
        nowMs,
      ),
    ).toBe("127.0.0.8");
    expect(parseDhclientLeases("lease{\n}\n" + lease("option unknown-245 7f:0:0:9;"), nowMs)).toBe("127.0.0.9");
  });
});

describe("each reader at the edges of what it accepts", () => {
  const lease = (...statements: string[]) => `lease {\n${statements.map((s) => `  ${s}\n`).join("")}}\n`;

  it("a dotted address given by people: 255 in every byte", () => {
    expect(parseIpv4("255.255.255.255")).toBe("255.255.255.255");
  });

  it("reg query output: LF line ends, a stray carriage return, another value naming CloudControlIp, 0x twice", () => {
    const output = (line: string) => `\r\nHKEY_LOCAL_MACHINE\\Software\\CloudControl\r\n${line}\r\n\r\n`;
    expect(
      parseRegQueryOutput("HKEY_LOCAL_MACHINE\\Software\\CloudControl\n    CloudControlIp    REG_SZ    10.0.0.3\n"),
    ).toBe("10.0.0.3");
    expect(problemOf(() => parseRegQueryOutput(output("    CloudControlIp    REG_SZ    10.0.0.1\rx")))).toBe(
      'malformed: "10.0.0.1\rx" is not an IPv4 address',
    );
    expect(problemOf(() => parseRegQueryOutput(output("    Note    REG_SZ    CloudControlIp REG_SZ 10.0.0.9")))).toBe(
      "no-option-245: no CloudControlIp value in the reg query output",
    );
    expect(problemOf(() => parseRegQueryOutput(output("    CloudControlIp    REG_DWORD    0x0xa83f8110")))).toBe(
      'malformed: REG_DWORD value "0x0xa83f8110" is not 0x…',
    );
  });

  it("key=value lines with a stray carriage return are malformed, not cut off at it", () => {
    expect(problemOf(() => parseNetworkdLease("OPTION_245=7F000002\r7F000003\n"))).toBe(
      "malformed: line 1: expected KEY=VALUE",
    );
    expect(problemOf(() => parseNetworkManagerLease("private_245=7f:0:0:5\rjunk\n", nowMs))).toBe(
      "malformed: line 1: expected key=value or [section]",
    );
  });

  it("NetworkManager: a dhclient-format file told by a line opening `lease {`, not by the words anywhere", () => {
    expect(parseNetworkManagerLease("lease{\n  option unknown-245 7f:0:0:7;\n}\n", nowMs)).toBe("127.0.0.7");
    expect(problemOf(() => parseNetworkManagerLease("name=my lease {\n", nowMs))).toBe(
      "no-option-245: no private_245 key",
    );
    expect(problemOf(() => parseNetworkManagerLease("[dhcp4]x\n", nowMs))).toBe(
      "malformed: line 1: expected key=value or [section]",
    );
  });

  it("dhclient: blocks told by their whole opening line, free spacing inside statements, quoted values whole", () => {
    expect(parseDhclientLeases("lease{\n  option unknown-245 7f:0:0:9;\n}\n", nowMs)).toBe("127.0.0.9");
    expect(problemOf(() => parseDhclientLeases("old-lease {\n  option unknown-245 7f:0:0:1;\n}\n", nowMs))).toBe(
      "no-option-245: no IPv4 lease { … } block",
    );
    for (const opening of ["lease { x", "*foo {", "foo { x"])
      expect(
        problemOf(() => parseDhclientLeases(`${opening}\n}\n`, nowMs)),
        opening,
      ).toBe('malformed: line 1: expected "lease {" or a statement ending in ";"');
    const skipped = 'interface  "eth0" {\n  send host-name "x";\n}\nlease6{\n}\n';
    expect(parseDhclientLeases(skipped + lease("option unknown-245 7f:0:0:2;"), nowMs)).toBe("127.0.0.2");
    expect(
      parseDhclientLeases(lease("option  unknown-245 \t7f:0:0:3;", "expire  4  2099/1/2 \t3:04:05 ;"), nowMs),
    ).toBe("127.0.0.3");
    expect(parseDhclientLeases(lease("option unknown-245 7f:0:0:4;", "expire never ;"), nowMs)).toBe("127.0.0.4");
    expect(problemOf(() => parseDhclientLeases(lease("xoption unknown-245 7f:0:0:1;"), nowMs))).toBe(
      "no-option-245: none of 1 lease(s) carries option 245",
    );
    expect(parseDhclientLeases(lease("option unknown-245 7f:0:0:1;", "xexpire epoch 1;"), nowMs)).toBe("127.0.0.1");
    for (const value of ['x"ABC\\001"', '"ABC\\001"x'])
      expect(
        problemOf(() => parseDhclientLeases(lease(`option unknown-245 ${value};`), nowMs)),
        value,
      ).toMatch(/^malformed: option 245 value .* is neither hex bytes/);
  });

  it("the key queried is the one reg prints; spacing before a quoted value and an epoch, and around key lines", () => {
    expect(fixture("reg-query-sz.txt").split("\r\n")[1]).toBe(registryKey.replace("HKLM", "HKEY_LOCAL_MACHINE"));
    expect(parseDhclientLeases(lease('option unknown-245  "ABC\\001";'), nowMs)).toBe("65.66.67.1");
    expect(
      parseDhclientLeases(lease("option unknown-245 7f:0:0:6;", `expire epoch  ${nowMs / 1000 + 1};`), nowMs),
    ).toBe("127.0.0.6");
    expect(parseNetworkManagerLease("[dhcp4]\n   \n  private_245=7f:0:0:5  \n", nowMs)).toBe("127.0.0.5");
  });
});
