// The environment a hook starts from (pure): the allowlisted variables in any case, LC_*, and those the hook names.
import { describe, expect, it } from "vitest";
import { hookAllowedVariables, hookBaseEnvironment } from "../../src/agent/actions/hooks/hook-environment.js";

const agentEnv = {
  PATH: "/usr/bin",
  Home: "/home/sef",
  LC_TIME: "C.UTF-8",
  TZ: "UTC",
  SystemRoot: "C:\\Windows",
  SEF_EVENTHUBS_CONNECTION_STRING: "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b",
  AZURE_CLIENT_SECRET: "s3cret-value",
  HTTPS_PROXY: "http://user:pw@proxy:3128",
  LC: "not a locale category",
  LC_time: "lower-case: still a locale category on Windows",
  XLC_ALL: "not one either",
  UNSET: undefined,
};

describe("hookBaseEnvironment", () => {
  it("takes only the allowlisted variables (names in any case) and LC_*", () => {
    expect(hookBaseEnvironment(agentEnv, [])).toEqual({
      PATH: "/usr/bin",
      Home: "/home/sef",
      LC_TIME: "C.UTF-8",
      LC_time: "lower-case: still a locale category on Windows",
      TZ: "UTC",
      SystemRoot: "C:\\Windows",
    });
  });

  it("adds the variables the hook names, in any case, and skips unset ones", () => {
    const env = hookBaseEnvironment(agentEnv, ["https_proxy", "UNSET", "MISSING"]);
    expect(env).toMatchObject({ HTTPS_PROXY: "http://user:pw@proxy:3128" });
    expect(Object.keys(env)).toHaveLength(7);
    expect(env).not.toHaveProperty("UNSET");
  });

  it("passes exactly the documented variables, and nothing of a name merely containing one", () => {
    expect(hookAllowedVariables).toEqual([
      ...["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR"],
      ...["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "NODE_NAME"],
      ...["SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP", "USERPROFILE", "PROGRAMDATA"],
      ...["PROGRAMFILES", "PROGRAMFILES(X86)", "COMMONPROGRAMFILES", "APPDATA", "LOCALAPPDATA", "COMPUTERNAME"],
      ...["NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "OS", "PSMODULEPATH"],
    ]);
    const all = Object.fromEntries(hookAllowedVariables.map((name) => [name, `value of ${name}`]));
    expect(hookBaseEnvironment(all, [])).toEqual(all);
    const lookalikes = {
      XPATH: "x",
      PATH_EXTRA: "y",
      MY_HOME: "z",
      LC_ALL1: "a",
      XLC_ALL: "b",
      LC_: "c",
      "LC_A-B": "d",
    };
    expect(hookBaseEnvironment(lookalikes, [])).toEqual({});
    expect(hookBaseEnvironment({ LC_A: "1", LC_MESSAGES: "2" }, [])).toEqual({ LC_A: "1", LC_MESSAGES: "2" });
  });
});
