// The Entra ID credential the Azure sinks use: managed identity (optionally user-assigned) or DefaultAzureCredential.
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from "@azure/identity";

/** As the sinks' `credential` setting spells it. */
export type AzureCredentialKind = "managedIdentity" | "default";

/** `managedIdentity` → ManagedIdentityCredential; `default` → DefaultAzureCredential; both honour a user-assigned client id. */
export function createAzureCredential(kind: AzureCredentialKind, managedIdentityClientId: string | undefined): TokenCredential {
  if (kind === "default") return new DefaultAzureCredential(managedIdentityClientId ? { managedIdentityClientId } : {});
  return managedIdentityClientId ? new ManagedIdentityCredential({ clientId: managedIdentityClientId }) : new ManagedIdentityCredential();
}
