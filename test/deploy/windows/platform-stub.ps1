<#
  The tests' sef-platform.ps1 (infra/windows/sef-platform.ps1 holds the real one: the calls only Windows has), for
  install.ps1 and vmapp.ps1 under pwsh on Linux. The same functions; each call is appended as one JSON line to
  $env:SEF_STUB_CALLS. The service "exists" while the file $env:SEF_STUB_SERVICE does, holding its status.
  $env:SEF_STUB_NOT_ADMIN makes the Administrator check fail; $env:SEF_STUB_FAIL names a native program (icacls.exe,
  node.exe, ...) that fails as a native program does for Invoke-SefNative: with a non-zero exit code.
#>

function Write-SefStubCall([string] $Name, [object[]] $Arguments) {
  $line = ConvertTo-Json -Compress -InputObject ([ordered]@{ call = $Name; args = @($Arguments | ForEach-Object { [string] $_ }) })
  Add-Content -LiteralPath $env:SEF_STUB_CALLS -Value $line
}

function Assert-SefAdministrator {
  Write-SefStubCall "Assert-SefAdministrator" @()
  if ($env:SEF_STUB_NOT_ADMIN) { throw "must run as Administrator" }
}

function Get-SefServiceStatus([string] $Name) {
  if (-not (Test-Path -LiteralPath $env:SEF_STUB_SERVICE)) { return $null }
  return (Get-Content -Raw -LiteralPath $env:SEF_STUB_SERVICE).Trim()
}

function Stop-SefService([string] $Name) {
  Write-SefStubCall "Stop-SefService" @($Name)
  Set-Content -LiteralPath $env:SEF_STUB_SERVICE -Value "Stopped"
}

function Start-SefService([string] $Name) {
  Write-SefStubCall "Start-SefService" @($Name)
  Set-Content -LiteralPath $env:SEF_STUB_SERVICE -Value "Running"
}

function Set-SefServiceAccount([string] $Name, [string] $Account) {
  Write-SefStubCall "Set-SefServiceAccount" @($Name, $Account)
}

function Invoke-SefNative([string] $File, [string[]] $Arguments) {
  $program = Split-Path -Leaf $File
  Write-SefStubCall "Invoke-SefNative" (@($program) + @($Arguments))
  if ($env:SEF_STUB_FAIL -eq $program) { throw "$File $($Arguments -join ' ') failed with exit code 5" }
  if ($program -eq "sef-service.exe" -and $Arguments[0] -eq "install") { Set-Content -LiteralPath $env:SEF_STUB_SERVICE -Value "Stopped" }
  if (($program -eq "sef-service.exe" -and $Arguments[0] -eq "uninstall") -or ($program -eq "sc.exe" -and $Arguments[0] -eq "delete")) {
    Remove-Item -LiteralPath $env:SEF_STUB_SERVICE
  }
}
