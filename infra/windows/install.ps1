<#
.SYNOPSIS
  Installs (or upgrades) the sef agent (Scheduled Events Forwarder) as a Windows service, from the unpacked zip.

.DESCRIPTION
  A thin wrapper around the zip's service wrapper (sef-service.exe, WinSW, with sef-service.xml):
    - copies the zip's files (node.exe, the agent bundle, the wrapper) to C:\Program Files\sef;
    - writes the config to C:\ProgramData\sef\config.json as UTF-8 without BOM; C:\ProgramData\sef is Administrators'
      and SYSTEM's, the service's virtual account NT SERVICE\sef reads it and the config, and writes only data and logs;
    - registers the service "sef" (automatic start; restart on failure after 10/30/60 s; exit codes 2 and 78 stop it
      without restart; logs in C:\ProgramData\sef\logs, rolled at 10 MiB), has it log on as NT SERVICE\sef (no
      password, no rights beyond those) and starts it;
    - checks the result: the service is Running and /readyz answers 200 within -ReadyTimeoutSeconds (30), else it
      throws with the log tail. Exit code 0 when installed, 1 (the error on stderr) otherwise.
  The calls only Windows has (service control, icacls, sc.exe, the Administrator check) are in sef-platform.ps1.
  Stop-Service sef sends Ctrl+C: the agent flushes what the sinks take within shutdownFlushMs and exits; undelivered
  records stay in C:\ProgramData\sef\data. Run it again to upgrade; install the previous zip the same way to roll back.
  Needs Windows PowerShell 5.1 or later and .NET Framework 4 (present on every supported Windows Server).

.PARAMETER ConfigPath
  Agent config (JSON) to install as C:\ProgramData\sef\config.json. Optional on upgrades. A dataDir of /var/lib/sef
  (the Linux default in the example configs) or none is set to C:\ProgramData\sef\data.

.PARAMETER NoStart
  Register the service without starting it.

.PARAMETER ReadyTimeoutSeconds
  How long the service may take to be Running with /readyz answering 200 (default 30).

.EXAMPLE
  Expand-Archive sef-0.1.0-win-x64.zip C:\Temp; C:\Temp\sef-0.1.0-win-x64\install.ps1 -ConfigPath .\loganalytics.json
#>
[CmdletBinding()]
param(
  [string] $ConfigPath = "",
  [switch] $NoStart,
  [ValidateRange(1, 3600)][int] $ReadyTimeoutSeconds = 30
)

Set-StrictMode -Version Latest
$ErrorActionPreference = "Stop"
. (Join-Path $PSScriptRoot "sef-platform.ps1")

$ServiceName = "sef"
$ServiceAccount = "NT SERVICE\$ServiceName"
$InstallDir = Join-Path $env:ProgramFiles "sef"
$DataRoot = Join-Path $env:ProgramData "sef"
$DataDir = Join-Path $DataRoot "data"
$LogDir = Join-Path $DataRoot "logs"
$ConfigFile = Join-Path $DataRoot "config.json"
$Wrapper = Join-Path $InstallDir "sef-service.exe"
$Utf8NoBom = New-Object Text.UTF8Encoding $false

# The SID of the service's virtual account NT SERVICE\<name> (what `sc.exe showsid` prints): S-1-5-80- then the SHA-1
# of the upper-cased name in UTF-16LE as five little-endian 32-bit numbers. Known before the service exists.
function Get-SefServiceSid([string] $Name) {
  $hash = [Security.Cryptography.SHA1]::Create().ComputeHash([Text.Encoding]::Unicode.GetBytes($Name.ToUpperInvariant()))
  $parts = foreach ($i in 0, 4, 8, 12, 16) { [BitConverter]::ToUInt32($hash, $i) }
  return "S-1-5-80-" + ($parts -join "-")
}

# icacls's arguments for C:\ProgramData\sef: Administrators and SYSTEM full control, nothing inherited; the service
# account reads everything (the config) and changes only data and logs.
function Get-SefAclCommands([string] $Sid) {
  return @(
    , @($DataRoot, "/inheritance:r", "/grant:r", "*S-1-5-18:(OI)(CI)F", "*S-1-5-32-544:(OI)(CI)F", "*${Sid}:(OI)(CI)RX", "/T", "/Q")
    , @($DataDir, "/grant:r", "*${Sid}:(OI)(CI)M", "/T", "/Q")
    , @($LogDir, "/grant:r", "*${Sid}:(OI)(CI)M", "/T", "/Q")
  )
}

function Show-LogTail {
  Get-ChildItem -LiteralPath $LogDir -Filter "*.log" -ErrorAction SilentlyContinue |
    Sort-Object LastWriteTime | Select-Object -Last 2 |
    ForEach-Object { Write-Warning "--- $($_.FullName)"; Get-Content -LiteralPath $_.FullName -Tail 30 | ForEach-Object { Write-Warning $_ } }
}

# The config as the service will read it: any encoding in (a BOM is dropped), a Linux or missing dataDir made
# C:\ProgramData\sef\data, UTF-8 without BOM out.
function Write-SefConfig([string] $Path) {
  $config = [IO.File]::ReadAllText((Resolve-Path -LiteralPath $Path).Path) | ConvertFrom-Json
  if (-not ($config.PSObject.Properties.Name -contains "dataDir") -or $config.dataDir -eq "/var/lib/sef") {
    $config | Add-Member -NotePropertyName dataDir -NotePropertyValue $DataDir -Force
  }
  [IO.File]::WriteAllText($ConfigFile, ($config | ConvertTo-Json -Depth 20), $Utf8NoBom)
}

# Copies the unpacked zip over C:\Program Files\sef (through a stage directory), unless it is run from there.
function Copy-SefFiles([string] $Source) {
  if ((Resolve-Path -LiteralPath $Source).Path -eq $InstallDir) { return }
  $stage = "$InstallDir.stage"
  if (Test-Path -LiteralPath $stage) { Remove-Item -Recurse -Force -LiteralPath $stage }
  Copy-Item -Recurse -LiteralPath $Source -Destination $stage
  if (Test-Path -LiteralPath $InstallDir) { Remove-Item -Recurse -Force -LiteralPath $InstallDir }
  Move-Item -LiteralPath $stage -Destination $InstallDir
}

# The readiness URL from the config, or "" when the metrics server is off.
function Get-SefReadyzUrl {
  $config = [IO.File]::ReadAllText($ConfigFile) | ConvertFrom-Json
  $metrics = if ($config.PSObject.Properties.Name -contains "metrics") { $config.metrics } else { $null }
  if ($null -ne $metrics -and $metrics.PSObject.Properties.Name -contains "enabled" -and $metrics.enabled -eq $false) { return "" }
  $port = 9464
  if ($config.PSObject.Properties.Name -contains "metricsPort") { $port = $config.metricsPort }
  elseif ($null -ne $metrics -and $metrics.PSObject.Properties.Name -contains "port") { $port = $metrics.port }
  $metricsHost = if ($null -ne $metrics -and $metrics.PSObject.Properties.Name -contains "host") { $metrics.host } else { "127.0.0.1" }
  return "http://${metricsHost}:$port/readyz"
}

# Starts the service and waits until it is Running and /readyz answers 200; throws with the log tail otherwise.
function Wait-SefReady {
  Start-SefService $ServiceName
  $url = Get-SefReadyzUrl
  $deadline = (Get-Date).AddSeconds($ReadyTimeoutSeconds)
  while ((Get-Date) -lt $deadline) {
    if ((Get-SefServiceStatus $ServiceName) -ne "Running") { Start-Sleep -Seconds 1; continue }
    if ($url -eq "") { return $url }
    try {
      $response = Invoke-WebRequest -Uri $url -UseBasicParsing -TimeoutSec 2
      if ($response.StatusCode -eq 200) { return $url }
    } catch { Start-Sleep -Seconds 1 }
  }
  Show-LogTail
  throw "sef did not become ready within $ReadyTimeoutSeconds s (service $(Get-SefServiceStatus $ServiceName), $url): see $LogDir"
}

function Install-Sef {
  Assert-SefAdministrator
  $source = $PSScriptRoot
  foreach ($file in @("node.exe", "sef.mjs", "sef-service.exe", "sef-service.xml", "sef-service.mjs", "sef-platform.ps1")) {
    if (-not (Test-Path -LiteralPath (Join-Path $source $file) -PathType Leaf)) { throw "$source has no ${file}: run install.ps1 from the unpacked sef zip" }
  }
  if ($ConfigPath -ne "" -and -not (Test-Path -LiteralPath $ConfigPath -PathType Leaf)) { throw "no such config file: $ConfigPath" }
  if ($ConfigPath -eq "" -and -not (Test-Path -LiteralPath $ConfigFile)) { throw "$ConfigFile does not exist: pass -ConfigPath" }

  # 1. Config, data and logs, and who may do what there.
  foreach ($dir in @($DataRoot, $DataDir, $LogDir)) { New-Item -ItemType Directory -Force -Path $dir | Out-Null }
  foreach ($arguments in (Get-SefAclCommands (Get-SefServiceSid $ServiceName))) { Invoke-SefNative "icacls.exe" $arguments | Out-Null }
  if ($ConfigPath -ne "") { Write-SefConfig $ConfigPath }

  # 2. The files: stop the service, swap the install directory, check the agent runs.
  $status = Get-SefServiceStatus $ServiceName
  if ($null -ne $status -and $status -ne "Stopped") { Stop-SefService $ServiceName }
  Copy-SefFiles $source
  Invoke-SefNative (Join-Path $InstallDir "node.exe") @((Join-Path $InstallDir "sef.mjs"), "run", "--help") | Out-Null

  # 3. The service (WinSW registers it with the recovery actions from sef-service.xml), as its virtual account.
  if ($null -eq $status) { Invoke-SefNative $Wrapper @("install") | Out-Null }
  Set-SefServiceAccount $ServiceName $ServiceAccount
  if ($NoStart) { Write-Host "sef installed, not started: $InstallDir (config $ConfigFile, account $ServiceAccount)"; return }

  # 4. Start and check.
  $url = Wait-SefReady
  Write-Host "sef installed and ready: $InstallDir (config $ConfigFile, logs $LogDir, account $ServiceAccount$(if ($url -ne '') { ", $url" }))"
}

Install-Sef
exit 0
