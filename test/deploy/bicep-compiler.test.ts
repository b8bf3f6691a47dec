// Azure's own tools judge the Bicep: every .bicep and .bicepparam under bicep/ builds with the pinned Bicep CLI with no
// error and no warning and passes `bicep lint`; the remediation templates the policy definitions embed are the
// compiler's output of their modules; any ARM JSON left in bicep/ decompiles. One CLI process per command, side by side.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bicepRoot, filesUnder, repoRoot } from "./support/bicep.js";
import { bicepGlob, describeDiagnostics, diagnostics, runBicep, type BicepRun } from "./support/bicep-cli.js";
import { remediationTemplatePaths } from "./support/vmapp-generated.js";

const out = mkdtempSync(join(tmpdir(), "sef-bicep-build-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** ARM templates in bicep/ (JSON with a deploymentTemplate $schema): the remediation templates, compiler output. */
const armTemplates = filesUnder(bicepRoot, ".json").filter((path) =>
  /deploymentTemplate\.json#/.test(readFileSync(path, "utf8").slice(0, 200)),
);

let build: BicepRun;
let buildParams: BicepRun;
let lint: BicepRun;
let broken: BicepRun;
let decompiles: BicepRun[];

beforeAll(async () => {
  [build, buildParams, lint, broken, ...decompiles] = await Promise.all([
    runBicep(["build", "--pattern", bicepGlob(".bicep"), "--outdir", join(out, "build")]),
    runBicep(["build-params", "--pattern", bicepGlob(".bicepparam"), "--outdir", join(out, "params")]),
    runBicep(["lint", "--pattern", bicepGlob(".bicep")]),
    runBicep(["build", "--stdout", join(repoRoot, "test/deploy/fixtures/broken.bicep")]),
    ...armTemplates.map((path, i) => runBicep(["decompile", path, "--outfile", join(out, `decompiled-${i}.bicep`)])),
  ]);
}, 600_000);

describe("the Bicep CLI (Azure.Bicep.CommandLine 0.49.2)", () => {
  it("builds every .bicep file with no error and no warning (the linter's rules included)", () => {
    expect(describeDiagnostics(diagnostics(build.stderr + build.stdout))).toEqual([]);
    expect(build.status, build.stderr).toBe(0);
    const built = filesUnder(join(out, "build"), ".json").length;
    expect(built).toBe(filesUnder(bicepRoot, ".bicep").length);
  });

  it("builds every .bicepparam file (its template and the parameters it sets) with no error and no warning", () => {
    expect(describeDiagnostics(diagnostics(buildParams.stderr + buildParams.stdout))).toEqual([]);
    expect(buildParams.status, buildParams.stderr).toBe(0);
    expect(filesUnder(join(out, "params"), ".json").length).toBe(filesUnder(bicepRoot, ".bicepparam").length);
  });

  it("bicep lint reports nothing", () => {
    expect(describeDiagnostics(diagnostics(lint.stderr + lint.stdout))).toEqual([]);
    expect(lint.status, lint.stderr).toBe(0);
  });

  it("bicepconfig.json turns no rule off without a // line saying why just above it", () => {
    const lines = readFileSync(join(bicepRoot, "bicepconfig.json"), "utf8").split("\n");
    const unexplained = lines.flatMap((line, i) =>
      /"level":\s*"off"/.test(line) && !/^\s*\/\/ \S/.test(lines[i - 1] ?? "") ? [line.trim()] : [],
    );
    expect(unexplained).toEqual([]);
  });

  it("the diagnostics parser reads the CLI's format (a broken file fails with its path, line and code)", () => {
    expect(broken.status).not.toBe(0);
    expect(describeDiagnostics(diagnostics(broken.stderr))).toEqual([
      expect.stringMatching(/^test\/deploy\/fixtures\/broken\.bicep:3 Error BCP\d+: /),
      expect.stringMatching(/^test\/deploy\/fixtures\/broken\.bicep:5 Warning no-unused-vars: /),
    ]);
  });
});

describe("the compiled rollout", () => {
  it("each policy assignment waits for its role assignments (a remediation started at once would lack the rights)", () => {
    const template = JSON.parse(readFileSync(join(out, "build", "every-vm-mg.json"), "utf8")) as {
      resources: Record<string, { type: string; dependsOn?: string[] }>;
    };
    const [, assignment] = Object.entries(template.resources).find(([, r]) => r.type.endsWith("/policyAssignments"))!;
    const roleSymbols = Object.entries(template.resources)
      .filter(([, r]) => r.type.endsWith("/roleAssignments"))
      .map(([symbol]) => symbol);
    expect(roleSymbols).toEqual(["virtualMachineContributor"]);
    // The module holding the remediation identity's other two role assignments, and the one at the deployment's scope.
    expect(assignment.dependsOn).toEqual(expect.arrayContaining(["remediation", "virtualMachineContributor"]));
  });
});

describe("no hand-written ARM", () => {
  it("the remediation templates the policy definitions embed are the compiler's output of their modules (npm run deploy:generate)", () => {
    expect(Object.keys(remediationTemplatePaths)).toEqual(["vm", "vmss"]);
    for (const path of Object.values(remediationTemplatePaths)) {
      const compiled = readFileSync(join(out, "build", "policy", path.split("/").at(-1)!), "utf8");
      expect(readFileSync(path, "utf8"), path).toBe(compiled);
    }
  });

  it("every ARM template left in bicep/ is compiler output, and the compiler reads it back (bicep decompile, no error)", () => {
    expect(armTemplates.map((p) => relative(repoRoot, p)).sort()).toEqual([
      "bicep/policy/remediation-vm.json",
      "bicep/policy/remediation-vmss.json",
    ]);
    for (const [i, run] of decompiles.entries()) {
      expect(run.status, `${armTemplates[i]}: ${run.stderr}`).toBe(0);
      expect(diagnostics(run.stderr + run.stdout).filter((d) => d.level === "Error")).toEqual([]);
      expect(JSON.parse(readFileSync(armTemplates[i]!, "utf8")).metadata._generator.name).toBe("bicep");
    }
  });
});
