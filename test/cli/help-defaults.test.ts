// Every default the built `sef` and `sef-fleet` show in `--help` is the configuration schema's, as the generated
// configuration reference (infra/docs/config-reference.ts) states it: each option that shows a default maps to its
// setting and says the same, and none shows a default that is neither a setting's nor a value in the code.
import { describe, expect, it } from "vitest";
import { configFlags } from "../../src/agent/config/load.js";
import { settingEntries } from "../../infra/docs/config-reference.js";
import { cliPath, fleetCliPath } from "../helpers/agent-process.js";
import { commandTree } from "../helpers/cli-help.js";

/** The reference's default (`\`1000\``, `` `"info"` ``, `` `["stdout"]` ``, `(discovered)`) as help words it. */
function asHelpShowsIt(defaultText: string): string {
  const text = defaultText.replace(/`/g, "");
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? value.join(",") : String(value);
  } catch {
    return text.replace(/^\((.*)\)$/, "$1");
  }
}

const reference = new Map(settingEntries().map((entry) => [entry.path, entry.defaultText]));

function referenceDefault(path: string): string {
  const text = reference.get(path);
  if (text === undefined) throw new Error(`the configuration reference has no default for ${path}`);
  return asHelpShowsIt(text);
}

/** The setting behind each option that is not one of `configFlags` (the flags of run and check-config). */
const otherSettingOptions: Record<string, string> = {
  "--metrics-port": "metrics.port", // overrides metrics.port: until given, metrics.port's default applies
  "--metrics-host": "metrics.host", // overrides metrics.host likewise
  "tail eventhubs --connection-string-env": "eventhubs.connectionStringEnv",
  "tail eventhubs --credential": "eventhubs.credential",
  "tail eventhubs --client-id": "eventhubs.managedIdentityClientId",
};
/** Options whose default is a value of the command's own code, not a setting (commander shows that value). */
const codeDefaults = new Set(["tail eventhubs --consumer-group", "tail eventhubs --log-level"]);
const ledgerDataDir = /^(outbox|dead-letter) [a-z-]+ --data-dir$/;

/** What help must show as the default of `option` of `command` (words after `sef`), or "code" for a code value. */
function expectedDefault(command: string, option: string): string | "code" | undefined {
  const key = `${command} ${option}`;
  if (codeDefaults.has(key)) return "code";
  if (ledgerDataDir.test(key)) return `$SEF_DATA_DIR, else ${referenceDefault("dataDir")}`;
  const setting =
    otherSettingOptions[key] ??
    otherSettingOptions[option] ??
    Object.entries(configFlags).find(([, f]) => f.flag === option)?.[0];
  return setting === undefined ? undefined : referenceDefault(setting);
}

describe("--help defaults come from the configuration schema", () => {
  it("sef: every option showing a default shows its setting's, as the reference does", async () => {
    const shown = (await commandTree(cliPath)).flatMap((command) =>
      command.options
        .filter((o) => o.shownDefault !== undefined)
        .map((o) => ({ command: command.path.join(" "), option: o })),
    );
    const compared = shown.map(({ command, option }) => {
      const expected = expectedDefault(command, option.long);
      expect(
        expected,
        `sef ${command} ${option.long} shows a default (${option.shownDefault}) that is no setting's: map it to one, or to the code's value`,
      ).toBeDefined();
      if (expected !== "code") expect(option.shownDefault, `sef ${command} ${option.long}`).toBe(expected);
      return `${command} ${option.long}`;
    });
    // Every flag that sets a configuration field shows its default, on both commands that take them.
    for (const command of ["run", "check-config"]) {
      for (const { flag } of Object.values(configFlags))
        expect(compared, `sef ${command} ${flag} shows its default`).toContain(`${command} ${flag}`);
    }
    for (const key of Object.keys(otherSettingOptions).filter((k) => k.includes(" "))) expect(compared).toContain(key);
    expect(compared.filter((k) => ledgerDataDir.test(k))).toHaveLength(5);
  }, 300_000);

  it("sef-fleet shows no default of its own", async () => {
    const [program] = await commandTree(fleetCliPath);
    expect(program!.options.map((o) => o.long)).toEqual(
      expect.arrayContaining(["--config", "--config-env", "--log-level", "--version"]),
    );
    expect(program!.options.filter((o) => o.shownDefault !== undefined)).toEqual([]);
  }, 60_000);
});
