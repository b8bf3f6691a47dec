// The data directory used when the config names none: /var/lib/sef on Linux, under ProgramData on Windows.
import { describe, expect, it } from "vitest";
import { platformDataDir } from "../../src/agent/config/data-dir.js";
import { agentConfigSchema } from "../../src/agent/config/schema.js";

describe("platformDataDir", () => {
  it("is the packages' state directory on Linux, whatever the environment says", () => {
    expect(platformDataDir("linux", { ProgramData: "D:\\Data" })).toBe("/var/lib/sef");
  });

  it("is ProgramData\\sef\\data on Windows (the folder the MSI and install.ps1 create), not C:\\var\\lib\\sef", () => {
    expect(platformDataDir("win32", { ProgramData: "D:\\Data" })).toBe("D:\\Data\\sef\\data");
    expect(platformDataDir("win32", { PROGRAMDATA: "E:\\PD" })).toBe("E:\\PD\\sef\\data");
    expect(platformDataDir("win32", {})).toBe("C:\\ProgramData\\sef\\data");
  });

  it("is the config's default when dataDir is left out", () => {
    expect(agentConfigSchema.parse({}).dataDir).toBe(platformDataDir());
    expect(agentConfigSchema.parse({ dataDir: "/srv/sef" }).dataDir).toBe("/srv/sef");
  });
});
