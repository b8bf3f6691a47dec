<#
.SYNOPSIS
  Installs (or upgrades) the sef agent (Scheduled Events Forwarder) on a Windows VM and runs it at boot.

.DESCRIPTION
  Node.js is not a native Windows service, so sef runs from a Scheduled Task:
    - trigger: at system startup; principal: SYSTEM (no stored password, no interactive logon);
    - action: PowerShell runs run-sef.ps1, a supervisor loop that starts node and restarts it 5 seconds after any
      exit, so a crash never leaves the VM unwatched (the task's own restart-on-failure is a second layer);
    - settings: no execution time limit, start when available, run on batteries, one instance only.
  Files: the agent in C:\Program Files\sef, config and data under C:\ProgramData\sef (SYSTEM and Administrators only),
  the supervisor's log in C:\ProgramData\sef\logs\supervisor.log, the agent's stderr log next to it.
  Stopping the task (Stop-ScheduledTask sef) ends node without a console signal: records not yet sent stay in the
  durable outbox under C:\ProgramData\sef\data and are sent after the next start. Idempotent: run it again to upgrade.

.PARAMETER Tarball
  The agent package made by `npm pack` (sef-VERSION.tgz).

.PARAMETER ConfigPath
  Agent config (JSON) to install as C:\ProgramData\sef\config.json. Optional on upgrades. A dataDir of /var/lib/sef
  (the Linux default in the example configs) is rewritten to C:\ProgramData\sef\data.

.PARAMETER NodePath
  node.exe to run (default: the one on PATH). Needs Node.js >= 20.19.

.PARAMETER NoStart
  Register the task without starting it now.

.EXAMPLE
  .\install.ps1 -Tarball .\sef-0.1.0.tgz -ConfigPath .\loganalytics.json
#>
[CmdletBinding()]
param(
  [Parameter(Mandatory = $true)][string] $Tarball,
  [string] $ConfigPath = "",
  [string] $NodePath = "",
  [switch] $NoStart
)

Set-StrictMode -Version Latest
$ErrorActionPreference = "Stop"

$TaskName = "sef"
$InstallDir = Join-Path $env:ProgramFiles "sef"
$DataRoot = Join-Path $env:ProgramData "sef"
$DataDir = Join-Path $DataRoot "data"
$LogDir = Join-Path $DataRoot "logs"
$ConfigFile = Join-Path $DataRoot "config.json"
$Supervisor = Join-Path $InstallDir "run-sef.ps1"

function Assert-Admin {
  $principal = New-Object Security.Principal.WindowsPrincipal([Security.Principal.WindowsIdentity]::GetCurrent())
  if (-not $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)) {
    throw "install.ps1 must run as Administrator"
  }
}

function Resolve-Node {
  if ($NodePath -ne "") { $node = $NodePath } else { $node = (Get-Command node.exe -ErrorAction Stop).Source }
  $version = (& $node -p "process.versions.node").Trim()
  $parts = $version.Split(".") | ForEach-Object { [int]$_ }
  if ($parts[0] -lt 20 -or ($parts[0] -eq 20 -and $parts[1] -lt 19)) { throw "Node.js $version is too old: sef needs >= 20.19" }
  return $node
}

function Invoke-Checked([string] $File, [string[]] $Arguments) {
  & $File @Arguments
  if ($LASTEXITCODE -ne 0) { throw "$File $($Arguments -join ' ') failed with exit code $LASTEXITCODE" }
}

Assert-Admin
if (-not (Test-Path -LiteralPath $Tarball -PathType Leaf)) { throw "no such tarball: $Tarball" }
if ($ConfigPath -ne "" -and -not (Test-Path -LiteralPath $ConfigPath -PathType Leaf)) { throw "no such config file: $ConfigPath" }
if ($ConfigPath -eq "" -and -not (Test-Path -LiteralPath $ConfigFile)) { throw "$ConfigFile does not exist: pass -ConfigPath" }
$node = Resolve-Node
$npm = Join-Path (Split-Path -Parent $node) "npm.cmd"
if (-not (Test-Path -LiteralPath $npm)) { $npm = (Get-Command npm.cmd -ErrorAction Stop).Source }

# 1. Directories: config and data readable by SYSTEM and Administrators only.
foreach ($dir in @($DataRoot, $DataDir, $LogDir)) { New-Item -ItemType Directory -Force -Path $dir | Out-Null }
Invoke-Checked "icacls.exe" @($DataRoot, "/inheritance:r", "/grant:r", "*S-1-5-18:(OI)(CI)F", "*S-1-5-32-544:(OI)(CI)F", "/T", "/Q")

# 2. The package, staged next to the install directory and swapped in (the task is stopped first).
$stage = "$InstallDir.stage"
if (Test-Path -LiteralPath $stage) { Remove-Item -Recurse -Force -LiteralPath $stage }
New-Item -ItemType Directory -Force -Path $stage | Out-Null
Invoke-Checked "tar.exe" @("-xzf", (Resolve-Path -LiteralPath $Tarball).Path, "-C", $stage, "--strip-components=1")
if (-not (Test-Path -LiteralPath (Join-Path $stage "dist\cli\main.js"))) { throw "$Tarball has no dist/cli/main.js: build before npm pack" }
Push-Location $stage
try {
  # The tarball ships a built dist\: drop the build-on-install hook (its tools are dev dependencies).
  Invoke-Checked $npm @("pkg", "delete", "scripts.prepare")
  Invoke-Checked $npm @("install", "--omit=dev", "--no-audit", "--no-fund", "--no-update-notifier")
} finally { Pop-Location }

$existing = Get-ScheduledTask -TaskName $TaskName -ErrorAction SilentlyContinue
if ($null -ne $existing) { Stop-ScheduledTask -TaskName $TaskName; Start-Sleep -Seconds 2 }
Get-CimInstance Win32_Process -Filter "Name = 'node.exe'" |
  Where-Object { $_.CommandLine -like "*$InstallDir\dist\cli\main.js*" } |
  ForEach-Object { Stop-Process -Id $_.ProcessId -Force }
if (Test-Path -LiteralPath $InstallDir) { Remove-Item -Recurse -Force -LiteralPath $InstallDir }
Move-Item -LiteralPath $stage -Destination $InstallDir

# 3. The config (dataDir pointed at C:\ProgramData\sef\data when it carries the Linux default).
if ($ConfigPath -ne "") {
  $config = Get-Content -Raw -LiteralPath $ConfigPath | ConvertFrom-Json
  if (-not ($config.PSObject.Properties.Name -contains "dataDir") -or $config.dataDir -eq "/var/lib/sef") {
    $config | Add-Member -NotePropertyName dataDir -NotePropertyValue $DataDir -Force
  }
  $config | ConvertTo-Json -Depth 10 | Set-Content -Encoding utf8 -LiteralPath $ConfigFile
}

# 4. The supervisor loop the task runs: restart node 5 s after any exit; log starts and exits.
$supervisorScript = @"
# Generated by install.ps1: keeps the sef agent running (restarts node 5 seconds after any exit).
`$ErrorActionPreference = "Continue"
`$log = "$LogDir\supervisor.log"
while (`$true) {
  Add-Content -LiteralPath `$log -Value "`$(Get-Date -Format o) starting sef"
  & "$node" "$InstallDir\dist\cli\main.js" run --config "$ConfigFile" 2>> "$LogDir\sef.stderr.log"
  Add-Content -LiteralPath `$log -Value "`$(Get-Date -Format o) sef exited with code `$LASTEXITCODE; restarting in 5 s"
  Start-Sleep -Seconds 5
}
"@
Set-Content -Encoding utf8 -LiteralPath $Supervisor -Value $supervisorScript

# 5. The Scheduled Task: at startup, as SYSTEM, no time limit, restart on failure.
$action = New-ScheduledTaskAction -Execute "powershell.exe" `
  -Argument "-NoProfile -NonInteractive -ExecutionPolicy Bypass -File `"$Supervisor`"" -WorkingDirectory $DataRoot
$trigger = New-ScheduledTaskTrigger -AtStartup
$principal = New-ScheduledTaskPrincipal -UserId "SYSTEM" -LogonType ServiceAccount -RunLevel Highest
$settings = New-ScheduledTaskSettingsSet -ExecutionTimeLimit ([TimeSpan]::Zero) -RestartCount 999 `
  -RestartInterval (New-TimeSpan -Minutes 1) -StartWhenAvailable -AllowStartIfOnBatteries -DontStopIfGoingOnBatteries `
  -MultipleInstances IgnoreNew
Register-ScheduledTask -TaskName $TaskName -Description "sef: Azure Scheduled Events forwarder" -Action $action `
  -Trigger $trigger -Principal $principal -Settings $settings -Force | Out-Null

if (-not $NoStart) { Start-ScheduledTask -TaskName $TaskName }
Write-Host "sef installed: $InstallDir (config $ConfigFile, data $DataDir, task '$TaskName')"
