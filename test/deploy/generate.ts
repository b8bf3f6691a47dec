// Regenerates the derived deployment files: `npx tsx test/deploy/generate.ts`
// (bicep/schema/columns.json from src/contract/, infra/linux/cloud-init.yaml from infra/, the fleet workbook from its .kql files,
// the sef rollout's policy definitions and its management group entry from vmapp-generated.ts and every-vm.bicep).
import { writeFileSync } from "node:fs";
import { cloudInitPath, renderCloudInit } from "./support/cloud-init.js";
import { renderSchemaFile, schemaFilePath } from "./support/schema-file.js";
import {
  managementGroupEntryPath,
  policyDefinitionPaths,
  renderManagementGroupEntry,
  renderPolicyDefinition,
} from "./support/vmapp-generated.js";
import { renderWorkbook, workbookPath } from "./support/workbook.js";

for (const [path, text] of [
  [schemaFilePath, renderSchemaFile()],
  [cloudInitPath, renderCloudInit()],
  [workbookPath, renderWorkbook()],
  [policyDefinitionPaths.vm, renderPolicyDefinition("vm")],
  [policyDefinitionPaths.vmss, renderPolicyDefinition("vmss")],
  [managementGroupEntryPath, renderManagementGroupEntry()],
] as const) {
  writeFileSync(path, text);
  console.log(`wrote ${path}`);
}
