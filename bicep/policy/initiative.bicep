// The sef initiative's content, shared by the subscription and the management group deployments (imported, compile
// time): the initiative referencing each DeployIfNotExists definition of definitions.bicep once per OS, and the
// parameters of one ring's assignment.

@export()
@description('Role definitions the remediation identity needs: Virtual Machine Contributor (on the scope: update VMs and scale sets, run the deployments), Managed Identity Operator (on the agent identity: attach it), Reader (on the gallery: reference its application versions).')
var roleIds = {
  virtualMachineContributor: '9980e02c-c2be-4d73-94e8-173b1dc7cf3c'
  managedIdentityOperator: 'f1a07417-d97a-45cb-824c-7a7467783830'
  reader: 'acdd72a7-3385-48ef-bd42-f606fba81ae7'
}

// User-defined functions see only their arguments and other functions, so the constants they use are functions too.

// Initiative parameters passed through to every reference unchanged (osType and applicationId differ per reference).
func sharedParameterNames() array => [
  'effect'
  'applicationVersion'
  'configurationReference'
  'enableAutomaticUpgrade'
  'agentIdentityResourceId'
  'ringTagName'
  'ringTagValues'
  'excludedRingTagValues'
  'optOutTagName'
  'locations'
  'scopeToSupportedImages'
  'listOfImageIdToInclude'
]

// One reference per definition (index into definitions) and OS.
func references() array => [
  {
    id: 'linux-vm'
    definition: 0
    osType: 'Linux'
  }
  {
    id: 'windows-vm'
    definition: 0
    osType: 'Windows'
  }
  {
    id: 'linux-vmss'
    definition: 1
    osType: 'Linux'
  }
  {
    id: 'windows-vmss'
    definition: 1
    osType: 'Windows'
  }
]

@export()
@description('The initiative\'s properties, given the ids of the deployed definitions (in the order of definitions) and the parameters the definitions declare (definitions[0].properties.parameters).')
func initiativeProperties(definitionIds array, definitionParameters object) object => {
  displayName: 'sef: the Scheduled Events Forwarder on every VM and scale set'
  description: 'Installs sef as a VM Application at a pinned version, with the agent\'s user-assigned identity (other identities and applications kept), on Linux and Windows VMs and Uniform scale sets in one rollout ring and the versions\' regions; platform-managed, agentless, unsupported-image and opted-out VMs are left alone. Compliance shows which VMs lack sef, run another version or failed to install it.'
  metadata: {
    category: 'Compute'
    version: '2.0.0'
  }
  parameters: union(toObject(sharedParameterNames(), name => name, name => (definitionParameters[name])), {
    linuxApplicationId: definitionParameters.applicationId
    windowsApplicationId: definitionParameters.applicationId
  })
  policyDefinitions: map(references(), reference => {
    policyDefinitionReferenceId: reference.id
    policyDefinitionId: definitionIds[reference.definition]
    parameters: union(toObject(sharedParameterNames(), name => name, name => {
      value: '[parameters(\'${name}\')]'
    }), {
      osType: {
        value: reference.osType
      }
      applicationId: {
        value: reference.osType == 'Linux' ? '[parameters(\'linuxApplicationId\')]' : '[parameters(\'windowsApplicationId\')]'
      }
    })
  })
}

@export()
@description('One ring\'s assignment parameters. A ring with tagValues covers the VMs tagged with one of them; a ring without covers every VM the other rings do not.')
func ringParameters(ring object, rings array, settings object) object => {
  effect: {
    value: settings.effect
  }
  linuxApplicationId: {
    value: '${settings.galleryId}/applications/${settings.linuxApplicationName}'
  }
  windowsApplicationId: {
    value: '${settings.galleryId}/applications/${settings.windowsApplicationName}'
  }
  applicationVersion: {
    value: ring.version
  }
  configurationReference: {
    value: configurationReferenceOf(ring)
  }
  enableAutomaticUpgrade: {
    value: settings.enableAutomaticUpgrade
  }
  agentIdentityResourceId: {
    value: settings.agentIdentityResourceId
  }
  ringTagName: {
    value: settings.ringTagName
  }
  ringTagValues: {
    value: ring.tagValues
  }
  excludedRingTagValues: {
    value: flatten(map(filter(rings, other => (other.name != (ring.name))), other => (other.tagValues)))
  }
  optOutTagName: {
    value: settings.optOutTagName
  }
  locations: {
    value: settings.regions
  }
  scopeToSupportedImages: {
    value: settings.scopeToSupportedImages
  }
  listOfImageIdToInclude: {
    value: settings.customImageIds
  }
}

// A ring's config URL, refused when it carries a SAS expiry (se=): a VM created after the SAS expired could not fetch
// it. A version's default config is copied into the gallery and never expires.
func configurationReferenceOf(ring object) string => contains(toLower(ring.?configurationReference ?? ''), '?se=') || contains(toLower(ring.?configurationReference ?? ''), '&se=')
  ? fail('ring ${ring.name}: configurationReference carries a SAS expiry (se=); use the version\'s default config (upload.sh --config) or a URL that does not expire')
  : ring.?configurationReference ?? ''

@export()
@description('A rollout ring: the VMs tagged with one of tagValues (or, with none, every VM no other ring has) run version.')
type rolloutRing = {
  @description('Name of the ring (the assignment is named <namePrefix>-<name>: at most 24 characters at a management group).')
  @minLength(1)
  @maxLength(11)
  name: string

  @description('sef version (the gallery applications\' version) the ring runs; pin the previous one to roll back.')
  version: string

  @description('Values of the ring tag that put a VM into this ring; empty: every VM that no other ring names.')
  tagValues: string[]

  @description('URL of an agent config blob replacing the version\'s default configuration (optional; a URL with a SAS expiry is refused: prefer the version\'s default config).')
  configurationReference: string?
}

@export()
@description('Where sef\'s VM Applications and identity are, the rings, and how the policy acts.')
type rolloutSettings = {
  @description('Subscription of the resource group below (default: the deployment\'s; required for a management group).')
  subscriptionId: string?

  @description('Resource group of the gallery and the agent identity (main.bicep\'s resource group, upload.sh --resource-group).')
  resourceGroupName: string

  @description('Azure Compute Gallery holding the applications (upload.sh --gallery).')
  galleryName: string

  @description('Name of main.bicep\'s agent identity (default sef-agent-identity).')
  agentIdentityName: string?

  @description('Gallery application names (defaults sef-linux and sef-windows).')
  linuxApplicationName: string?
  windowsApplicationName: string?

  @description('The rollout rings, canary first.')
  rings: rolloutRing[]

  @description('Tag naming a VM\'s ring (default sef-ring).')
  ringTagName: string?

  @description('Tag that leaves a VM alone when true (default sef-opt-out).')
  optOutTagName: string?

  @description('Let the platform move VMs to newer application versions on its own (default false: the rings decide); any version is then compliant, the rings choose only the first install.')
  enableAutomaticUpgrade: bool?

  @description('Regions the application versions are replicated to (upload.sh --target-regions); VMs elsewhere are left alone.')
  regions: string[]

  @description('Only VMs from the marketplace images sef supports or customImageIds (default true): platform-managed VMs come from other images.')
  scopeToSupportedImages: bool?

  @description('Image ids (gallery image versions, managed images) to cover besides the supported marketplace images.')
  customImageIds: string[]?

  @description('DeployIfNotExists (default), AuditIfNotExists (report only) or Disabled.')
  effect: ('DeployIfNotExists' | 'AuditIfNotExists' | 'Disabled')?
}

@export()
@description('The rollout with its defaults filled in and the gallery and agent identity resolved to resource ids.')
func settingsOf(rollout rolloutSettings, defaultSubscriptionId string) object => {
  subscriptionId: rollout.?subscriptionId ?? defaultSubscriptionId
  resourceGroupName: rollout.resourceGroupName
  galleryName: rollout.galleryName
  galleryId: '/subscriptions/${rollout.?subscriptionId ?? defaultSubscriptionId}/resourceGroups/${rollout.resourceGroupName}/providers/Microsoft.Compute/galleries/${rollout.galleryName}'
  agentIdentityName: rollout.?agentIdentityName ?? 'sef-agent-identity'
  agentIdentityResourceId: '/subscriptions/${rollout.?subscriptionId ?? defaultSubscriptionId}/resourceGroups/${rollout.resourceGroupName}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${rollout.?agentIdentityName ?? 'sef-agent-identity'}'
  linuxApplicationName: rollout.?linuxApplicationName ?? 'sef-linux'
  windowsApplicationName: rollout.?windowsApplicationName ?? 'sef-windows'
  ringTagName: rollout.?ringTagName ?? 'sef-ring'
  optOutTagName: rollout.?optOutTagName ?? 'sef-opt-out'
  enableAutomaticUpgrade: rollout.?enableAutomaticUpgrade ?? false
  regions: rollout.regions
  scopeToSupportedImages: rollout.?scopeToSupportedImages ?? true
  customImageIds: rollout.?customImageIds ?? []
  effect: rollout.?effect ?? 'DeployIfNotExists'
}
