// The exact secret values a loaded configuration and the environment hold (connection strings, client secrets,
// webhook keys and credential headers), for redaction wherever text leaves the agent. Pure: config and env in.
import type { AgentConfig } from "./schema.js";
import { inlineSecrets } from "./secret-file.js";
import { referencedVariables } from "./rules.js";

/** Names of variables that hold a credential, whatever reads them (the Azure SDKs read `AZURE_CLIENT_SECRET`). */
const credentialVariableName =
  /SECRET|PASSWORD|PASSWD|TOKEN|CONNECTION_?STRING|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SAS_?KEY|CREDENTIAL/i;
/** …unless the name says the value is where the credential is kept, not the credential itself. */
const locationVariableName = /_(FILE|PATH|DIR)$/i;

/** The values of the environment variables whose names say they hold a credential. */
export function environmentSecretValues(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env).flatMap(([name, value]) =>
    credentialVariableName.test(name) && !locationVariableName.test(name) && value ? [value] : [],
  );
}

/**
 * Every secret value of the loaded configuration: the settings that hold a secret inline (as each sink names them) and
 * the variables the configuration names for credentials and header values, plus `environmentSecretValues`.
 */
export function configSecretValues(config: AgentConfig, env: NodeJS.ProcessEnv): string[] {
  const inline = stringsAt(config, inlineSecrets(config));
  const referenced = referencedVariables(config as unknown as Record<string, unknown>).flatMap((name) => {
    const value = env[name];
    return value ? [value, value.trim()] : [];
  });
  return [...inline, ...referenced, ...environmentSecretValues(env)];
}

/** The strings at the dotted `paths` of `value` (a path leading nowhere or to another type gives nothing). */
export function stringsAt(value: unknown, paths: readonly string[]): string[] {
  return paths.flatMap((path) => {
    const found = valueAtPath(value, path.split("."));
    return typeof found === "string" ? [found] : [];
  });
}

/** The value at a dotted path whose segments may themselves hold dots (a header named `X.Key`). */
function valueAtPath(value: unknown, segments: readonly string[]): unknown {
  if (segments.length === 0) return value;
  if (typeof value !== "object" || value === null) return undefined;
  for (let take = segments.length; take >= 1; take--) {
    const key = segments.slice(0, take).join(".");
    if (Object.hasOwn(value, key)) return valueAtPath((value as Record<string, unknown>)[key], segments.slice(take));
  }
  return undefined;
}
