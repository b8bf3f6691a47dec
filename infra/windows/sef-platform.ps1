<#
.SYNOPSIS
  The calls only Windows has, for install.ps1 and the VM Application's vmapp.ps1 (both dot-source this file from the
  unpacked sef zip): the Administrator check, the Service Control Manager, the service account and native programs
  (icacls.exe, sc.exe, sef-service.exe, node.exe). Nothing else; the scripts' logic stays in the scripts, where the
  tests run it under pwsh with this file replaced by one that records the calls (infra/windows/README.md).
#>

# Throws unless this PowerShell runs elevated (as Administrator or SYSTEM).
function Assert-SefAdministrator {
  $principal = New-Object Security.Principal.WindowsPrincipal([Security.Principal.WindowsIdentity]::GetCurrent())
  if (-not $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)) {
    throw "must run as Administrator"
  }
}

# The service's status ("Running", "Stopped", ...), or $null when no such service is registered.
function Get-SefServiceStatus([string] $Name) {
  $service = Get-Service -Name $Name -ErrorAction SilentlyContinue
  if ($null -eq $service) { return $null }
  return [string] $service.Status
}

# Stops the service and waits up to 60 s for it to be Stopped (the agent flushes on Ctrl+C; WinSW kills it after 30 s).
function Stop-SefService([string] $Name) {
  Stop-Service -Name $Name
  (Get-Service -Name $Name).WaitForStatus("Stopped", (New-TimeSpan -Seconds 60))
}

function Start-SefService([string] $Name) {
  Start-Service -Name $Name
}

# Has the service log on as $Account (a virtual account "NT SERVICE\<name>" has no password).
function Set-SefServiceAccount([string] $Name, [string] $Account) {
  Invoke-SefNative "sc.exe" @("config", $Name, "obj=", $Account)
}

# Runs a native program and throws when it exits non-zero; its output is returned.
function Invoke-SefNative([string] $File, [string[]] $Arguments) {
  & $File @Arguments
  if ($LASTEXITCODE -ne 0) { throw "$File $($Arguments -join ' ') failed with exit code $LASTEXITCODE" }
}
