<#
.SYNOPSIS
  The Windows VM Application's install, update and remove actions for sef, run by Azure's VM Application agent as
  SYSTEM from its download directory (...\Downloads\<application name>\<version>\), where the bundle (this script,
  the sef zip and its SHA256SUMS) was unpacked into .\bundle.

.DESCRIPTION
  Every action first checks the bundled sef-VERSION-win-x64.zip against the bundle's SHA256SUMS (and against -Sha256
  when given) and refuses a mismatch, then unpacks it and loads its sef-platform.ps1 (the calls only Windows has).
  install / update: runs the zip's install.ps1, the installer sef already has (it stops the service, swaps
  C:\Program Files\sef, keeps C:\ProgramData\sef, starts the service as NT SERVICE\sef and waits for /readyz), with
  the VM Application's configuration file when there is one: sef-config.json (the version's settings.configFileName),
  else Azure's default name, "<application name>_config" or "<application name>-config". A lower version installs
  the same way (rollback).
  remove: stops and unregisters the service and deletes C:\Program Files\sef; C:\ProgramData\sef (config, data,
  logs) stays. Exit code 0 on success, 1 on failure (the agent reports it; the message is on stderr).

.PARAMETER Sha256
  The SHA-256 (hex) the sef zip must have, as the publisher gave it; checked on top of the bundle's SHA256SUMS.
#>
[CmdletBinding()]
param(
  [Parameter(Mandatory = $true)][ValidateSet("install", "update", "remove")] [string] $Action,
  [ValidatePattern("^[0-9a-fA-F]{64}$")][string] $Sha256
)

Set-StrictMode -Version Latest
$ErrorActionPreference = "Stop"

$ServiceName = "sef"
$InstallDir = Join-Path $env:ProgramFiles "sef"
$Bundle = $PSScriptRoot
$WorkDir = (Get-Location).Path

# The VM Application's configuration file in the working directory, or "" when there is none.
function Find-Config {
  $application = Split-Path -Leaf (Split-Path -Parent $WorkDir)
  foreach ($name in @("sef-config.json", "${application}_config", "${application}-config")) {
    $candidate = Join-Path $WorkDir $name
    if (Test-Path -LiteralPath $candidate -PathType Leaf) { return $candidate }
  }
  return ""
}

# Throws unless $File's SHA-256 is the one its line in the bundle's SHA256SUMS gives (and $Sha256, when given).
function Assert-SefHash([IO.FileInfo] $File) {
  $sums = Join-Path $Bundle "SHA256SUMS"
  if (-not (Test-Path -LiteralPath $sums -PathType Leaf)) { throw "the bundle has no SHA256SUMS: refusing $($File.Name)" }
  $listed = @(Get-Content -LiteralPath $sums | Where-Object { $_ -match "^([0-9a-fA-F]{64}) [ *]$([regex]::Escape($File.Name))$" } |
      ForEach-Object { $Matches[1].ToLowerInvariant() })
  if ($listed.Count -ne 1) { throw "SHA256SUMS has $($listed.Count) lines for $($File.Name) (expected one): refusing it" }
  $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $File.FullName).Hash.ToLowerInvariant()
  foreach ($expected in @($listed[0]) + @($(if ($Sha256) { $Sha256.ToLowerInvariant() }))) {
    if ($actual -ne $expected) { throw "$($File.Name) has SHA-256 $actual, not ${expected}: refusing to install it" }
  }
}

# Checks and unpacks the bundled sef zip; returns the folder holding its install.ps1 and sef-platform.ps1.
function Expand-SefZip {
  $zips = @(Get-ChildItem -LiteralPath $Bundle -Filter "sef-*-win-x64.zip")
  if ($zips.Count -ne 1) { throw "the bundle holds $($zips.Count) sef-*-win-x64.zip files (expected one)" }
  Assert-SefHash $zips[0]
  $stage = Join-Path $WorkDir "sef-unpacked"
  if (Test-Path -LiteralPath $stage) { Remove-Item -Recurse -Force -LiteralPath $stage }
  Expand-Archive -LiteralPath $zips[0].FullName -DestinationPath $stage
  $installer = @(Get-ChildItem -LiteralPath $stage -Recurse -Filter "install.ps1")
  if ($installer.Count -ne 1) { throw "$($zips[0].Name) has no single install.ps1" }
  Write-Host "sef vmapp: $Action from $($zips[0].Name) (SHA-256 checked)"
  return $installer[0].DirectoryName
}

function Install-Sef([string] $Unpacked) {
  $config = Find-Config
  $installer = Join-Path $Unpacked "install.ps1"
  if ($config -ne "") { Write-Host "sef vmapp: config $config" }
  if ($config -ne "") { & $installer -ConfigPath $config } else { & $installer }
}

function Remove-Sef {
  $status = Get-SefServiceStatus $ServiceName
  if ($null -ne $status) {
    if ($status -ne "Stopped") { Stop-SefService $ServiceName }
    $wrapper = Join-Path $InstallDir "sef-service.exe"
    if (Test-Path -LiteralPath $wrapper) { Invoke-SefNative $wrapper @("uninstall") | Out-Null }
    else { Invoke-SefNative "sc.exe" @("delete", $ServiceName) | Out-Null }
  }
  if (Test-Path -LiteralPath $InstallDir) { Remove-Item -Recurse -Force -LiteralPath $InstallDir }
  Write-Host "sef vmapp: removed sef; kept $(Join-Path $env:ProgramData 'sef') (config, data, logs)"
}

try {
  $unpacked = Expand-SefZip
  . (Join-Path $unpacked "sef-platform.ps1")
  if ($Action -eq "remove") { Remove-Sef } else { Install-Sef $unpacked }
  exit 0
} catch {
  [Console]::Error.WriteLine("sef vmapp: FAILED: $_")
  exit 1
}
