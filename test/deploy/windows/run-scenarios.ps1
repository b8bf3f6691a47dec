<#
  Runs install.ps1 / vmapp.ps1 scenarios in one pwsh (for windows-scripts.test.ts: one process instead of one a
  scenario). $ScenariosFile: a JSON array of { name, script, parameters, cwd, env }; each script is called with &
  and its parameters splatted, as a caller would, after setting its environment and working directory. Prints one
  JSON object a scenario: its exit code ($LASTEXITCODE after the script's own `exit`), the error it threw, its output.
  What a script writes straight to stderr goes there, between "=== <name>" lines.
#>
param([Parameter(Mandatory = $true)][string] $ScenariosFile)

$scenarios = Get-Content -Raw -LiteralPath $ScenariosFile | ConvertFrom-Json
foreach ($scenario in $scenarios) {
  foreach ($variable in $scenario.env.PSObject.Properties) { Set-Item -LiteralPath "env:$($variable.Name)" -Value $variable.Value }
  Set-Location -LiteralPath $scenario.cwd
  $parameters = @{}
  foreach ($p in $scenario.parameters.PSObject.Properties) { $parameters[$p.Name] = $p.Value }
  [Console]::Error.WriteLine("=== $($scenario.name)")
  $global:LASTEXITCODE = $null
  $threw = $null
  $output = try { & $scenario.script @parameters *>&1 | Out-String } catch { $threw = "$_" }
  $result = [ordered]@{ name = $scenario.name; exitCode = $global:LASTEXITCODE; threw = $threw; output = "$output" }
  foreach ($variable in $scenario.env.PSObject.Properties) { Remove-Item -LiteralPath "env:$($variable.Name)" }
  [Console]::Out.WriteLine((ConvertTo-Json -Compress -InputObject $result))
}
