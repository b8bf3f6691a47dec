// The Entra ID credential the Azure sinks use: managed identity (optionally user-assigned) or DefaultAzureCredential,
// with the credential's own retries off: a token request is tried once per send, and the drainer (the sinks' only
// retry owner) tries the send again. Left alone: @azure/core-rest-pipeline's token cycler refreshes a token that is
// still valid in the background (every few seconds in its last minutes); no send waits on those tries.
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from "@azure/identity";

/** As the sinks' `credential` setting spells it. */
export type AzureCredentialKind = "managedIdentity" | "default";

/**
 * No retries inside a token request: `maxRetries` 0 turns off the identity client's pipeline retries (429, 5xx,
 * network) and the managed-identity 404/410 retry policy (MSAL's own retries are off in @azure/identity already).
 */
const oneTryPerToken = { retryOptions: { maxRetries: 0 } };

/** `managedIdentity` → ManagedIdentityCredential; `default` → DefaultAzureCredential; both honour a user-assigned client id. */
export function createAzureCredential(
  kind: AzureCredentialKind,
  managedIdentityClientId: string | undefined,
): TokenCredential {
  if (kind === "default")
    return new DefaultAzureCredential(
      managedIdentityClientId ? { managedIdentityClientId, ...oneTryPerToken } : oneTryPerToken,
    );
  return managedIdentityClientId
    ? new ManagedIdentityCredential({ clientId: managedIdentityClientId, ...oneTryPerToken })
    : new ManagedIdentityCredential(oneTryPerToken);
}
