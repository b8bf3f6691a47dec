// What the compiler does not check (it does: bicep-compiler.test.ts): only reviewed resource types and API versions,
// every KQL query loaded from a .kql file, the columns from the generated schema file, roles and their scopes, alerts.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Parser } from "web-tree-sitter";
import { beforeAll, describe, expect, it } from "vitest";
import {
  bicepRoot,
  repoRoot,
  callsOf,
  filesUnder,
  loadBicepParser,
  outputNames,
  parameterDetails,
  parseBicep,
  propertiesNamed,
  resourceDeclarations,
  stringLiteral,
  variables,
  type BicepFile,
} from "./support/bicep.js";
import { resourceGroupScope, snapshot, type Snapshot } from "./support/bicep-cli.js";
import { kqlSources } from "./support/kql-sources.js";
import { stepQueryPath, workbookSteps } from "./support/workbook.js";

const allowedTypes: string[] = (
  JSON.parse(readFileSync(new URL("./resource-types.json", import.meta.url), "utf8")) as { allowed: string[] }
).allowed;

let parser: Parser;
let files: BicepFile[];
const byName = (name: string): BicepFile => {
  const file = files.find((f) => f.name === `bicep/${name}`);
  if (file === undefined) throw new Error(`bicep/${name} not found`);
  return file;
};

let main: Snapshot;

beforeAll(async () => {
  parser = await loadBicepParser();
  files = filesUnder(bicepRoot, ".bicep").map((path) => parseBicep(parser, path));
  main = await snapshot(
    "bicep/main.bicep",
    {
      alertEmailAddresses: ["ops@example.com"],
      agentIdentityGroups: ["web", "batch"],
      deployFleet: true,
      fleetImage: "registry.example/sef-fleet:0.2.0",
    },
    resourceGroupScope,
  );
}, 600_000);

describe("Bicep files", () => {
  it("finds the templates", () => {
    expect(files.map((f) => f.name)).toEqual(
      expect.arrayContaining([
        "bicep/main.bicep",
        "bicep/modules/alerts.bicep",
        "bicep/modules/eventhubs.bicep",
        "bicep/modules/ingestion.bicep",
        "bicep/modules/query-pack.bicep",
        "bicep/modules/workbook.bicep",
        "bicep/modules/workspace-table.bicep",
        "bicep/every-vm.bicep",
        "bicep/every-vm-mg.bicep",
        "bicep/vmapp.bicep",
        "bicep/policy/initiative.bicep",
        "bicep/modules/vmapp-remediation.bicep",
      ]),
    );
  });

  it("every bicep/ file that a doc, comment or script names exists (no vmapp-version.bicep that never was)", () => {
    const sources = [
      ...filesUnder(bicepRoot, ".md"),
      ...filesUnder(bicepRoot, ".bicep"),
      ...filesUnder(bicepRoot, ".bicepparam"),
      ...filesUnder(join(repoRoot, "infra"), "").filter((p) => /\.(sh|json|md|ps1|ya?ml|ts)$/.test(p)),
      join(repoRoot, "README.md"),
    ];
    const missing = sources.flatMap((path) =>
      [...readFileSync(path, "utf8").matchAll(/\bbicep\/[\w./-]+\.(?:bicep|bicepparam|json)\b/g)]
        .map((m) => m[0])
        .filter((named) => !existsSync(join(repoRoot, named)))
        .map((named) => `${path.slice(repoRoot.length)}: ${named}`),
    );
    expect(missing).toEqual([]);
  });
});

describe("Bicep references", () => {
  it("every resource type and API version is in test/deploy/resource-types.json, and every entry is used", () => {
    const used = files.flatMap((f) => resourceDeclarations(f).map((r) => ({ file: f.name, type: r.typeAndVersion })));
    const unknown = used.filter((u) => !allowedTypes.includes(u.type));
    expect(unknown, "add a checked type@version to test/deploy/resource-types.json").toEqual([]);
    expect(allowedTypes.filter((t) => !used.some((u) => u.type === t))).toEqual([]);
  });

  it("every query, body and transformKql property is a .kql file loaded with loadTextContent", () => {
    const sources = kqlSources(files);
    expect(sources.problems).toEqual([]);
    expect(sources.queries.filter((q) => q.property === "transformKql")).toHaveLength(1);
    expect(sources.queries.filter((q) => q.property === "query").length).toBeGreaterThanOrEqual(4);
    expect(sources.queries.filter((q) => q.property === "body").length).toBeGreaterThanOrEqual(9);
  });

  it("every .kql file under bicep/ is loaded by some template or the workbook (no orphaned queries)", () => {
    const loaded = new Set([...kqlSources(files).queries.map((q) => q.path), ...workbookSteps.map(stepQueryPath)]);
    expect(filesUnder(bicepRoot, ".kql").filter((p) => !loaded.has(p))).toEqual([]);
  });

  it("the kql source check rejects an inline query string", () => {
    const inline = parseBicep(
      parser,
      join(bicepRoot, "inline.bicep"),
      "var q = {\n  query: 'ScheduledEvents_CL | take 1'\n}\n",
    );
    expect(kqlSources([inline]).problems).toHaveLength(1);
  });
});

describe("Bicep contents", () => {
  it("the table and the stream declaration take their columns from the generated schema file", () => {
    for (const name of ["modules/workspace-table.bicep", "modules/ingestion.bicep"]) {
      const file = byName(name);
      const json = callsOf(file, "loadJsonContent").map((c) => stringLiteral(c.args[0]));
      expect(json, name).toEqual(["../schema/columns.json"]);
    }
    const table = propertiesNamed(byName("modules/workspace-table.bicep"), "columns").map((p) => p.value.text);
    expect(table).toEqual(["schema.tableColumns"]);
    const ingestion = byName("modules/ingestion.bicep");
    expect(propertiesNamed(ingestion, "columns").map((p) => p.value.text)).toEqual(["schema.streamColumns"]);
    expect(propertiesNamed(ingestion, "outputStream").map((p) => p.value.text)).toEqual([
      "'Custom-${schema.tableName}'",
    ]);
    expect(propertiesNamed(ingestion, "streams").map((p) => p.value.text.replace(/\s+/g, " "))).toEqual([
      "[ schema.streamName ]",
    ]);
  });

  it("Event Hubs is Standard with local (SAS) auth disabled", () => {
    const file = byName("modules/eventhubs.bicep");
    expect(propertiesNamed(file, "disableLocalAuth").map((p) => p.value.text)).toEqual(["true"]);
    expect(propertiesNamed(file, "name").some((p) => stringLiteral(p.value) === "Standard")).toBe(true);
    expect(propertiesNamed(file, "minimumTlsVersion").map((p) => stringLiteral(p.value))).toEqual(["1.2"]);
  });

  it("the agents' identity gets exactly the two data-plane roles, sef fleet's identity the two reader roles", () => {
    const rolesIn = (name: string) =>
      new Set(byName(name).text.match(/'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'/g) ?? []);
    // The rollout's remediation identity has its own roles (policy/initiative.bicep's roleIds, vmapp-policy.test.ts).
    const agentRoles = files
      .filter((f) => !["bicep/modules/fleet.bicep", "bicep/policy/initiative.bicep"].includes(f.name))
      .flatMap((f) => f.text.match(/'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'/g) ?? []);
    expect(new Set(agentRoles)).toEqual(
      new Set(["'3913510d-42f4-4e42-8a64-420c390055eb'", "'2b629674-e913-4c01-ae53-ef4638d8f975'"]),
    );
    // Azure Event Hubs Data Receiver and Storage Blob Data Contributor.
    expect(rolesIn("modules/fleet.bicep")).toEqual(
      new Set(["'a638d3c7-ab3a-418d-83e6-5f17a39d4fde'", "'ba92f5b4-2d11-453d-a403-e96b0029c9fe'"]),
    );
    const scopes = files.flatMap((f) =>
      resourceDeclarations(f)
        .filter((r) => r.typeAndVersion.startsWith("Microsoft.Authorization/roleAssignments@"))
        .map((r) => `${f.name}:${r.node.text.match(/\n\s*scope: (\w+)/)?.[1] ?? "(resource group)"}`),
    );
    expect(scopes.sort()).toEqual([
      "bicep/every-vm-mg.bicep:(resource group)", // the deployment's scope: the management group
      "bicep/every-vm.bicep:(resource group)", // the deployment's scope: the subscription
      "bicep/modules/eventhubs.bicep:hub",
      "bicep/modules/fleet.bicep:checkpoints", // Blob Data Contributor on its own container, not the account
      "bicep/modules/fleet.bicep:hub",
      "bicep/modules/ingestion.bicep:rule",
      "bicep/modules/vmapp-remediation.bicep:agentIdentity",
      "bicep/modules/vmapp-remediation.bicep:gallery",
    ]);
  });

  it("the alert rules cover each EventType, new EventTypes, stuck-started and silent agents", () => {
    const alerts = byName("modules/alerts.bicep");
    const keys = propertiesNamed(alerts, "key").map((p) => stringLiteral(p.value) ?? p.value.text);
    expect(keys).toEqual([
      "'event-${toLower(rule.eventType)}'",
      "event-other-type",
      "event-started-too-long",
      "silent-agent",
    ]);
    const eventTypes = propertiesNamed(alerts, "eventType").map((p) => stringLiteral(p.value));
    expect(eventTypes).toEqual(["Freeze", "Reboot", "Redeploy", "Preempt", "Terminate"]);
    expect(propertiesNamed(alerts, "kind").map((p) => stringLiteral(p.value))).toEqual(["LogAlert"]);
    expect(propertiesNamed(alerts, "emailReceivers")).toHaveLength(1);
  });

  it("main.bicep outputs every value the agent config needs", () => {
    expect(outputNames(byName("main.bicep"))).toEqual(
      expect.arrayContaining([
        "logsIngestionEndpoint",
        "dcrImmutableId",
        "streamName",
        "eventHubsFullyQualifiedNamespace",
        "eventHubName",
        "identityClientId",
        "identityResourceId",
        "agentConfig",
      ]),
    );
  });
});

describe("main.bicep rendered by the Bicep CLI's template engine (bicep snapshot)", () => {
  const roleAssignments = (roleId: string) =>
    main.resources
      .filter((r) => r.type === "Microsoft.Authorization/roleAssignments")
      .filter((r) => String((r.properties as { roleDefinitionId: string }).roleDefinitionId).endsWith(roleId))
      .map((r) => String(r.id));

  it("the stronger setup: each VM group gets its own sender identity with the agents' two data-plane roles", () => {
    expect(main.run.status, main.run.stderr).toBe(0);
    const identities = main.resources
      .filter((r) => r.type === "Microsoft.ManagedIdentity/userAssignedIdentities")
      .map((r) => r.name);
    expect(identities).toEqual(
      expect.arrayContaining(["sef-agent-identity", "sef-agent-identity-web", "sef-agent-identity-batch"]),
    );
    // Event Hubs Data Sender on the hub and Monitoring Metrics Publisher on the rule, for the shared and each group's.
    for (const role of ["2b629674-e913-4c01-ae53-ef4638d8f975", "3913510d-42f4-4e42-8a64-420c390055eb"]) {
      const assigned = roleAssignments(role);
      expect(assigned, role).toHaveLength(3);
      for (const group of ["sef-agent-identity'", "sef-agent-identity-web'", "sef-agent-identity-batch'"])
        expect(
          assigned.filter((id) => id.includes(`/userAssignedIdentities/${group}`)),
          group,
        ).toHaveLength(1);
    }
  });

  it("the fleet's Storage Blob Data Contributor is scoped to its own container, not the storage account", () => {
    const [blobRole, ...more] = roleAssignments("ba92f5b4-2d11-453d-a403-e96b0029c9fe");
    expect(more).toEqual([]);
    expect(blobRole).toMatch(
      /\/blobServices\/default\/containers\/sef-fleet\/providers\/Microsoft\.Authorization\/roleAssignments\//,
    );
  });
});

describe("alerts reach someone and mean something", () => {
  it("an action group without receivers fails the deployment, naming the parameters; no placeholder receiver", () => {
    const alerts = byName("modules/alerts.bicep");
    const actionGroupId = variables(alerts).get("actionGroupId");
    expect(actionGroupId?.type).toBe("ternary_expression");
    const fails = callsOf(alerts, "fail");
    expect(fails).toHaveLength(1);
    expect(actionGroupId?.text).toContain(fails[0]!.node.text);
    const message = stringLiteral(fails[0]!.args[0]) ?? "";
    for (const name of [
      "existingActionGroupResourceId",
      "alertEmailAddresses",
      "alertSmsReceivers",
      "alertWebhookUrls",
      "alertLogicAppReceivers",
    ]) {
      expect(message).toContain(name);
    }
    // Every rule notifies that id (the fail() is evaluated whenever a rule is deployed).
    expect(propertiesNamed(alerts, "actionGroups").map((p) => p.value.text.replace(/\s+/g, " "))).toEqual([
      "[ actionGroupId ]",
    ]);
    const receiverCount = variables(alerts).get("receiverCount")?.text ?? "";
    for (const param of ["emailAddresses", "smsReceivers", "webhookUrls", "logicAppReceivers"])
      expect(receiverCount).toContain(`length(${param})`);

    const main = parameterDetails(byName("main.bicep"));
    const defaults = Object.fromEntries(main.map((p) => [p.name, p.defaultText]));
    expect(defaults).toMatchObject({
      existingActionGroupResourceId: "''",
      alertEmailAddresses: "[]",
      alertSmsReceivers: "[]",
      alertWebhookUrls: "[]",
      alertLogicAppReceivers: "[]",
    });
    expect(main.map((p) => p.name)).not.toContain("alertEmail");
    const params = readFileSync(join(bicepRoot, "main.bicepparam"), "utf8");
    const code = params.replace(/\/\/.*$/gm, "");
    expect(code).not.toMatch(/@[a-z0-9.-]+\.[a-z]+'/i);
    expect(code).toMatch(
      /^param existingActionGroupResourceId = readEnvironmentVariable\('SEF_ACTION_GROUP_ID', ''\)$/m,
    );
    expect(code).toMatch(/^param alertEmailAddresses = .*readEnvironmentVariable\('SEF_ALERT_EMAIL', ''\)/m);
  });

  it("severities per EventType are parameters: Freeze informational, the impactful types warning or higher", () => {
    const main = parameterDetails(byName("main.bicep"));
    const severity = (name: string): { value: number; decorators: string[] } => {
      const p = main.find((d) => d.name === name);
      if (p === undefined) throw new Error(`param ${name} missing`);
      return { value: Number(p.defaultText), decorators: p.decorators };
    };
    expect(severity("freezeAlertSeverity").value).toBe(3);
    for (const name of [
      "rebootAlertSeverity",
      "redeployAlertSeverity",
      "preemptAlertSeverity",
      "terminateAlertSeverity",
      "otherEventTypeAlertSeverity",
    ]) {
      expect(severity(name).value, name).toBeGreaterThanOrEqual(0);
      expect(severity(name).value, name).toBeLessThanOrEqual(2);
    }
    for (const name of main.filter((p) => p.name.endsWith("AlertSeverity")).map((p) => p.name)) {
      expect(severity(name).decorators, name).toEqual(expect.arrayContaining(["@minValue(-1)", "@maxValue(4)"]));
    }
    const alerts = byName("modules/alerts.bicep");
    const severities = propertiesNamed(alerts, "severity").map((p) => p.value.text);
    expect(severities).toEqual([
      "freezeSeverity",
      "rebootSeverity",
      "redeploySeverity",
      "preemptSeverity",
      "terminateSeverity",
      "rule.severity",
      "otherEventTypeSeverity",
      "1",
      "2",
      "rule.severity",
    ]);
    expect(variables(alerts).get("rules")?.text).toBe(
      "filter(concat(eventRules, remainingRules), rule => rule.severity >= 0)",
    );
  });

  it("event alerts window on ingestion_time() like the rule's window, over a 2-day range, and report ObservedAtUtc", () => {
    const alerts = byName("modules/alerts.bicep");
    const rules = descendantsWithProperty(alerts, "query").filter((rule) =>
      /event-of-(other-)?type\.kql/.test(rule.text),
    );
    expect(rules).toHaveLength(2);
    for (const rule of rules) {
      const props = (key: string): string[] =>
        rule.namedChildren
          .filter((c) => c?.type === "object_property" && c.namedChildren[0]?.text === key)
          .map((c) => c!.namedChildren.at(-1)!.text);
      expect(props("evaluationFrequency")).toEqual(["'PT5M'"]);
      expect(props("windowSize")).toEqual(["'PT5M'"]);
      expect(props("overrideQueryTimeRange")).toEqual(["'P2D'"]);
      expect(props("dimensions")[0]).toContain("'ObservedAtUtc'");
    }
    for (const name of ["event-of-type.kql", "event-of-other-type.kql"]) {
      const kql = readFileSync(join(bicepRoot, "queries/alerts", name), "utf8").replace(/\/\/.*$/gm, "");
      expect(kql, name).toContain("| where ingestion_time() > ago(5m)");
      expect(kql, name).not.toMatch(/where TimeGenerated/);
      expect(kql, name).toMatch(/project ObservedAtUtc = tostring\(ObservedAt\)/);
    }
  });
});

/** Object nodes that have a property named `key` (e.g. the rule entries of a var). */
function descendantsWithProperty(file: BicepFile, key: string): import("web-tree-sitter").Node[] {
  return propertiesNamed(file, key)
    .map((p) => p.value.parent?.parent)
    .filter((n): n is import("web-tree-sitter").Node => n !== null && n !== undefined);
}
