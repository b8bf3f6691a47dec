<#
  Runs install.ps1 / vmapp.ps1 scenarios in one pwsh (for windows-scripts.test.ts: one process instead of one a
  scenario). $ScenariosFile: a JSON array of { name, script, parameters, cwd, env }; each script is called with &
  and its parameters splatted, as a caller would, after setting its environment and working directory. Prints one
  JSON object a scenario: its exit code ($LASTEXITCODE after the script's own `exit`), the error it threw, its output.
  What a script writes straight to stderr goes there, between "=== <name>" lines. First, parse.ps1's lines for
  $ParseFiles (PowerShell's parser over them), so the test needs no pwsh of its own for that.
#>
param(
  [Parameter(Mandatory = $true, Position = 0)][string] $ScenariosFile,
  [Parameter(ValueFromRemainingArguments = $true)][string[]] $ParseFiles = @()
)

if ($null -ne $ParseFiles -and $ParseFiles.Count -gt 0) { & (Join-Path $PSScriptRoot "parse.ps1") @ParseFiles }

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
