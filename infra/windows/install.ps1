<#
.SYNOPSIS
  Installs (or upgrades) the sef agent (Scheduled Events Forwarder) as a Windows service, from the unpacked zip.

.DESCRIPTION
  A thin wrapper around the zip's service wrapper (sef-service.exe, WinSW, with sef-service.xml):
    - copies the zip's files (node.exe, the agent bundle, the wrapper) to C:\Program Files\sef;
    - writes the config to C:\ProgramData\sef\config.json as UTF-8 without BOM; config, data and logs are readable
      by Administrators and the service account (LocalSystem) only;
    - registers the service "sef" (automatic start; restart on failure after 10/30/60 s; exit codes 2 and 78 stop it
      without restart; logs in C:\ProgramData\sef\logs, rolled at 10 MiB) and starts it;
    - checks the result: the service is Running and /readyz answers 200 within 30 s, else it throws with the log tail.
  Stop-Service sef sends Ctrl+C: the agent flushes what the sinks take within shutdownFlushMs and exits; undelivered
  records stay in C:\ProgramData\sef\data. Run it again to upgrade; install the previous zip the same way to roll back.
  Needs Windows PowerShell 5.1 or later and .NET Framework 4 (present on every supported Windows Server).

.PARAMETER ConfigPath
  Agent config (JSON) to install as C:\ProgramData\sef\config.json. Optional on upgrades. A dataDir of /var/lib/sef
  (the Linux default in the example configs) or none is set to C:\ProgramData\sef\data.

.PARAMETER NoStart
  Register the service without starting it.

.EXAMPLE
  Expand-Archive sef-0.1.0-win-x64.zip C:\Temp; C:\Temp\sef-0.1.0-win-x64\install.ps1 -ConfigPath .\loganalytics.json
#>
[CmdletBinding()]
param(
  [string] $ConfigPath = "",
  [switch] $NoStart
)

Set-StrictMode -Version Latest
$ErrorActionPreference = "Stop"

$ServiceName = "sef"
$InstallDir = Join-Path $env:ProgramFiles "sef"
$DataRoot = Join-Path $env:ProgramData "sef"
$DataDir = Join-Path $DataRoot "data"
$LogDir = Join-Path $DataRoot "logs"
$ConfigFile = Join-Path $DataRoot "config.json"
$Wrapper = Join-Path $InstallDir "sef-service.exe"
$Utf8NoBom = New-Object Text.UTF8Encoding $false

function Assert-Admin {
  $principal = New-Object Security.Principal.WindowsPrincipal([Security.Principal.WindowsIdentity]::GetCurrent())
  if (-not $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)) {
    throw "install.ps1 must run as Administrator"
  }
}

function Invoke-Checked([string] $File, [string[]] $Arguments) {
  & $File @Arguments
  if ($LASTEXITCODE -ne 0) { throw "$File $($Arguments -join ' ') failed with exit code $LASTEXITCODE" }
}

function Show-LogTail {
  Get-ChildItem -LiteralPath $LogDir -Filter "*.log" -ErrorAction SilentlyContinue |
    Sort-Object LastWriteTime | Select-Object -Last 2 |
    ForEach-Object { Write-Warning "--- $($_.FullName)"; Get-Content -LiteralPath $_.FullName -Tail 30 | ForEach-Object { Write-Warning $_ } }
}

Assert-Admin
$source = $PSScriptRoot
foreach ($file in @("node.exe", "sef.mjs", "sef-service.exe", "sef-service.xml", "sef-service.mjs")) {
  if (-not (Test-Path -LiteralPath (Join-Path $source $file) -PathType Leaf)) { throw "$source has no ${file}: run install.ps1 from the unpacked sef zip" }
}
if ($ConfigPath -ne "" -and -not (Test-Path -LiteralPath $ConfigPath -PathType Leaf)) { throw "no such config file: $ConfigPath" }
if ($ConfigPath -eq "" -and -not (Test-Path -LiteralPath $ConfigFile)) { throw "$ConfigFile does not exist: pass -ConfigPath" }

# 1. Config, data and logs: Administrators and LocalSystem (the service account) only, nothing inherited.
foreach ($dir in @($DataRoot, $DataDir, $LogDir)) { New-Item -ItemType Directory -Force -Path $dir | Out-Null }
Invoke-Checked "icacls.exe" @($DataRoot, "/inheritance:r", "/grant:r", "*S-1-5-18:(OI)(CI)F", "*S-1-5-32-544:(OI)(CI)F", "/T", "/Q")

# 2. The config, read whatever its encoding (a BOM is dropped) and written as UTF-8 without BOM.
if ($ConfigPath -ne "") {
  $config = [IO.File]::ReadAllText((Resolve-Path -LiteralPath $ConfigPath).Path) | ConvertFrom-Json
  if (-not ($config.PSObject.Properties.Name -contains "dataDir") -or $config.dataDir -eq "/var/lib/sef") {
    $config | Add-Member -NotePropertyName dataDir -NotePropertyValue $DataDir -Force
  }
  [IO.File]::WriteAllText($ConfigFile, ($config | ConvertTo-Json -Depth 20), $Utf8NoBom)
}

# 3. The files: stop the service, swap the install directory.
$existing = Get-Service -Name $ServiceName -ErrorAction SilentlyContinue
if ($null -ne $existing -and $existing.Status -ne "Stopped") {
  Stop-Service -Name $ServiceName
  $existing.WaitForStatus("Stopped", (New-TimeSpan -Seconds 60))
}
if ((Resolve-Path -LiteralPath $source).Path -ne $InstallDir) {
  $stage = "$InstallDir.stage"
  if (Test-Path -LiteralPath $stage) { Remove-Item -Recurse -Force -LiteralPath $stage }
  Copy-Item -Recurse -LiteralPath $source -Destination $stage
  if (Test-Path -LiteralPath $InstallDir) { Remove-Item -Recurse -Force -LiteralPath $InstallDir }
  Move-Item -LiteralPath $stage -Destination $InstallDir
}
Invoke-Checked (Join-Path $InstallDir "node.exe") @((Join-Path $InstallDir "sef.mjs"), "run", "--help") | Out-Null

# 4. The service (WinSW registers it with the recovery actions from sef-service.xml).
if ($null -eq $existing) { Invoke-Checked $Wrapper @("install") }
if ($NoStart) { Write-Host "sef installed, not started: $InstallDir (config $ConfigFile)"; exit 0 }

# 5. Start and check: Running, and /readyz answers 200 within 30 s.
Start-Service -Name $ServiceName
$config = [IO.File]::ReadAllText($ConfigFile) | ConvertFrom-Json
$metrics = if ($config.PSObject.Properties.Name -contains "metrics") { $config.metrics } else { $null }
$enabled = -not ($null -ne $metrics -and $metrics.PSObject.Properties.Name -contains "enabled" -and $metrics.enabled -eq $false)
$port = 9464
if ($config.PSObject.Properties.Name -contains "metricsPort") { $port = $config.metricsPort }
elseif ($null -ne $metrics -and $metrics.PSObject.Properties.Name -contains "port") { $port = $metrics.port }
$metricsHost = if ($null -ne $metrics -and $metrics.PSObject.Properties.Name -contains "host") { $metrics.host } else { "127.0.0.1" }
$url = "http://${metricsHost}:$port/readyz"
$deadline = (Get-Date).AddSeconds(30)
$ready = $false
while ((Get-Date) -lt $deadline) {
  if ((Get-Service -Name $ServiceName).Status -ne "Running") { Start-Sleep -Seconds 1; continue }
  if (-not $enabled) { $ready = $true; break }
  try {
    $response = Invoke-WebRequest -Uri $url -UseBasicParsing -TimeoutSec 2
    if ($response.StatusCode -eq 200) { $ready = $true; break }
  } catch { Start-Sleep -Seconds 1 }
}
if (-not $ready) {
  Show-LogTail
  throw "sef did not become ready within 30 s (service $((Get-Service -Name $ServiceName).Status), $url): see $LogDir"
}
Write-Host "sef installed and ready: $InstallDir (config $ConfigFile, logs $LogDir, $url)"
