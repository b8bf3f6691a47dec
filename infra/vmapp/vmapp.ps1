<#
.SYNOPSIS
  The Windows VM Application's install, update and remove actions for sef, run by Azure's VM Application agent as
  SYSTEM from its download directory (...\Downloads\<application name>\<version>\), where the bundle (this script and
  the sef zip) was unpacked into .\bundle.

.DESCRIPTION
  install / update: unpacks the bundled sef-VERSION-win-x64.zip and runs its install.ps1, the installer sef already
  has (it stops the service, swaps C:\Program Files\sef, keeps C:\ProgramData\sef, starts the service and waits for
  /readyz), with the VM Application's configuration file when there is one: sef-config.json (the version's
  settings.configFileName) or "<application name>-config". A lower version installs the same way (rollback).
  remove: stops and unregisters the service and deletes C:\Program Files\sef; C:\ProgramData\sef (config, data,
  logs) stays. Exit code 0 on success, 1 on failure (the agent reports it; the message is on stderr).
#>
[CmdletBinding()]
param(
  [Parameter(Mandatory = $true)][ValidateSet("install", "update", "remove")] [string] $Action
)

Set-StrictMode -Version Latest
$ErrorActionPreference = "Stop"

$ServiceName = "sef"
$InstallDir = Join-Path $env:ProgramFiles "sef"
$Bundle = $PSScriptRoot
$WorkDir = (Get-Location).Path

function Find-Config {
  $application = Split-Path -Leaf (Split-Path -Parent $WorkDir)
  foreach ($name in @("sef-config.json", "$application-config")) {
    $candidate = Join-Path $WorkDir $name
    if (Test-Path -LiteralPath $candidate -PathType Leaf) { return $candidate }
  }
  return ""
}

function Install-Sef {
  $zips = @(Get-ChildItem -LiteralPath $Bundle -Filter "sef-*-win-x64.zip")
  if ($zips.Count -ne 1) { throw "the bundle holds $($zips.Count) sef-*-win-x64.zip files (expected one)" }
  $stage = Join-Path $WorkDir "sef-unpacked"
  if (Test-Path -LiteralPath $stage) { Remove-Item -Recurse -Force -LiteralPath $stage }
  Expand-Archive -LiteralPath $zips[0].FullName -DestinationPath $stage
  $installer = @(Get-ChildItem -LiteralPath $stage -Recurse -Filter "install.ps1")
  if ($installer.Count -ne 1) { throw "$($zips[0].Name) has no single install.ps1" }
  $config = Find-Config
  Write-Host "sef vmapp: $Action from $($zips[0].Name)$(if ($config -ne '') { " with config $config" })"
  if ($config -ne "") { & $installer[0].FullName -ConfigPath $config } else { & $installer[0].FullName }
}

function Remove-Sef {
  $service = Get-Service -Name $ServiceName -ErrorAction SilentlyContinue
  if ($null -ne $service) {
    if ($service.Status -ne "Stopped") {
      Stop-Service -Name $ServiceName
      $service.WaitForStatus("Stopped", (New-TimeSpan -Seconds 60))
    }
    $wrapper = Join-Path $InstallDir "sef-service.exe"
    if (Test-Path -LiteralPath $wrapper) { & $wrapper uninstall } else { & sc.exe delete $ServiceName }
    if ($LASTEXITCODE -ne 0) { throw "unregistering the service $ServiceName failed with exit code $LASTEXITCODE" }
  }
  if (Test-Path -LiteralPath $InstallDir) { Remove-Item -Recurse -Force -LiteralPath $InstallDir }
  Write-Host "sef vmapp: removed sef; kept $(Join-Path $env:ProgramData 'sef') (config, data, logs)"
}

try {
  if ($Action -eq "remove") { Remove-Sef } else { Install-Sef }
  exit 0
} catch {
  [Console]::Error.WriteLine("sef vmapp: FAILED: $_")
  exit 1
}
