// Regenerates the derived deployment files: `npx tsx test/deploy/generate.ts`
// (bicep/schema/columns.json from src/contract/, infra/linux/cloud-init.yaml from infra/, the fleet workbook from its .kql files,
// the sef rollout's management group entry from every-vm.bicep, and the policy definitions' remediation templates:
// the Bicep CLI's own build of bicep/policy/remediation-vm.bicep and -vmss.bicep, nothing written here).
import { writeFileSync } from "node:fs";
import { cloudInitPath, renderCloudInit } from "./support/cloud-init.js";
import { describeDiagnostics, diagnostics, runBicep } from "./support/bicep-cli.js";
import { renderSchemaFile, schemaFilePath } from "./support/schema-file.js";
import {
  managementGroupEntryPath,
  remediationTemplatePaths,
  renderManagementGroupEntry,
} from "./support/vmapp-generated.js";
import { renderWorkbook, workbookPath } from "./support/workbook.js";

for (const [path, text] of [
  [schemaFilePath, renderSchemaFile()],
  [cloudInitPath, renderCloudInit()],
  [workbookPath, renderWorkbook()],
  [managementGroupEntryPath, renderManagementGroupEntry()],
] as const) {
  writeFileSync(path, text);
  console.log(`wrote ${path}`);
}

for (const path of Object.values(remediationTemplatePaths)) {
  const run = await runBicep(["build", path.replace(/\.json$/, ".bicep"), "--outfile", path]);
  const problems = describeDiagnostics(diagnostics(run.stderr + run.stdout));
  if (run.status !== 0 || problems.length > 0) throw new Error(`bicep build of ${path}: ${problems.join("; ")}`);
  console.log(`wrote ${path} (bicep build)`);
}
