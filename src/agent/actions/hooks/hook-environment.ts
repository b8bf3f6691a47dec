// The environment a hook starts from: the agent's variables that locate programs, the user, the locale and the time
// zone (an allowlist), plus the ones the hook names in `passEnvironment`; never the rest (sef's secrets). Pure.

/** Variables every hook gets from the agent's environment, when set (names compared case-insensitively: Windows). */
export const hookAllowedVariables: readonly string[] = [
  // Where programs are, who runs them, the locale and the time zone.
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TMPDIR",
  // Kubernetes: where the API server is (a hook's kubectl finds its in-cluster config), which node this is.
  "KUBERNETES_SERVICE_HOST",
  "KUBERNETES_SERVICE_PORT",
  "NODE_NAME",
  // Windows: what programs need to start and find the system.
  "SYSTEMROOT",
  "SYSTEMDRIVE",
  "WINDIR",
  "COMSPEC",
  "PATHEXT",
  "TEMP",
  "TMP",
  "USERPROFILE",
  "PROGRAMDATA",
  "PROGRAMFILES",
  "PROGRAMFILES(X86)",
  "COMMONPROGRAMFILES",
  "APPDATA",
  "LOCALAPPDATA",
  "COMPUTERNAME",
  "NUMBER_OF_PROCESSORS",
  "PROCESSOR_ARCHITECTURE",
  "OS",
  "PSMODULEPATH",
];

/** Locale categories (`LC_ALL`, `LC_TIME`, …) pass too. */
const localeVariable = /^LC_[A-Z]+$/;

const allowed = new Set(hookAllowedVariables);

/** The variables of `env` a hook gets: the allowlisted ones, `LC_*`, and those named in `passEnvironment`. */
export function hookBaseEnvironment(
  env: NodeJS.ProcessEnv,
  passEnvironment: readonly string[],
): Record<string, string> {
  const passed = new Set(passEnvironment.map((name) => name.toUpperCase()));
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const upper = name.toUpperCase();
    if (allowed.has(upper) || localeVariable.test(upper) || passed.has(upper)) out[name] = value;
  }
  return out;
}
