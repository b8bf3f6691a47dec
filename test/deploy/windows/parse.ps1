<#
  PowerShell's own parser over scripts, for windows-scripts.test.ts: for each file given, its syntax errors and the
  functions it defines with their parameter names. One JSON object a file on stdout.
#>
param([Parameter(Mandatory = $true, ValueFromRemainingArguments = $true)][string[]] $Files)

foreach ($file in $Files) {
  $tokens = $null
  $errors = $null
  $ast = [System.Management.Automation.Language.Parser]::ParseFile($file, [ref] $tokens, [ref] $errors)
  $functions = [ordered]@{}
  foreach ($f in $ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.FunctionDefinitionAst] }, $true)) {
    $names = @()
    if ($null -ne $f.Parameters) { $names = @($f.Parameters | ForEach-Object { $_.Name.VariablePath.UserPath }) }
    elseif ($null -ne $f.Body.ParamBlock) { $names = @($f.Body.ParamBlock.Parameters | ForEach-Object { $_.Name.VariablePath.UserPath }) }
    $functions[$f.Name] = $names
  }
  $result = [ordered]@{
    file = $file
    errors = @($errors | ForEach-Object { "$($_.Extent.StartLineNumber):$($_.Extent.StartColumnNumber): $($_.Message)" })
    functions = $functions
  }
  [Console]::Out.WriteLine((ConvertTo-Json -Compress -Depth 5 -InputObject $result))
}
