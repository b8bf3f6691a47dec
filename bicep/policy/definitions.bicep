// The two DeployIfNotExists policy definitions of the sef rollout (sef-vm, sef-vmss), written in Bicep: the rules in
// Azure Policy's language, and as remediation the compiler's output of remediation-vm.bicep / remediation-vmss.bicep
// (remediation-*.json, written by `npm run deploy:generate`, checked equal to `bicep build` by the tests).

// Functions see only their arguments and other functions, so the constants they use are functions too.

// Marketplace image publishers sef supports (Microsoft's scopeToSupportedImages idea): platform-managed VMs (AKS node
// images, Databricks, Azure Red Hat OpenShift, Batch's own images) come from other images and are left alone.
func supportedPublishers() array => [
  'Canonical'
  'Debian'
  'RedHat'
  'SUSE'
  'almalinux'
  'resf'
  'Oracle'
  'MicrosoftCBLMariner'
  'MicrosoftWindowsServer'
  'MicrosoftWindowsDesktop'
]

// Resource groups that platforms manage for their clusters (AKS: MC_, Databricks: databricks-rg-, Service Fabric
// managed clusters: SFC_); several are under deny assignments, where a remediation can only fail.
func managedResourceGroupPatterns() array => [
  'MC_*'
  'databricks-rg-*'
  'SFC_*'
]

func param(type string, description string) object => {
  type: type
  metadata: {
    displayName: split(description, ':')[0]
    description: description
  }
}

func parameters() object => {
  effect: union(param('String', 'Effect: DeployIfNotExists installs sef, AuditIfNotExists only reports, Disabled turns the policy off'), {
    allowedValues: [
      'DeployIfNotExists'
      'AuditIfNotExists'
      'Disabled'
    ]
    defaultValue: 'DeployIfNotExists'
  })
  osType: union(param('String', 'OS type: the VMs this reference covers (the application is built for one OS)'), {
    allowedValues: [
      'Linux'
      'Windows'
    ]
  })
  applicationId: param('String', 'Gallery application: resource id of the sef VM Application for this OS (…/galleries/G/applications/sef-linux)')
  applicationVersion: param('String', 'Version: the sef version this ring runs (a version of the application, MAJOR.MINOR.PATCH)')
  configurationReference: union(param('String', 'Config blob: URL of an agent config replacing the version\'s default configuration (one that does not expire); empty for the version\'s'), {
    defaultValue: ''
  })
  enableAutomaticUpgrade: union(param('Boolean', 'Automatic upgrade: the platform moves VMs to newer versions on its own; any version of the application is then compliant (the rings only choose the first install)'), {
    defaultValue: false
  })
  agentIdentityResourceId: param('String', 'Agent identity: resource id of the user-assigned identity sef authenticates with (main.bicep\'s identityResourceId)')
  ringTagName: union(param('String', 'Ring tag: name of the tag that puts a VM into a rollout ring'), {
    defaultValue: 'sef-ring'
  })
  ringTagValues: union(param('Array', 'Ring: ring tag values this assignment covers; empty covers every VM whose ring tag is not in excludedRingTagValues'), {
    defaultValue: []
  })
  excludedRingTagValues: union(param('Array', 'Other rings: ring tag values left to other assignments (used when ringTagValues is empty)'), {
    defaultValue: []
  })
  optOutTagName: union(param('String', 'Opt-out tag: a VM or scale set with this tag set to true is left alone'), {
    defaultValue: 'sef-opt-out'
  })
  locations: param('Array', 'Regions: the regions the application versions are replicated to; VMs elsewhere are left alone (their install would fail)')
  scopeToSupportedImages: union(param('Boolean', 'Supported images only: only VMs from the marketplace images sef supports (or listOfImageIdToInclude); false: any image'), {
    defaultValue: true
  })
  listOfImageIdToInclude: union(param('Array', 'Custom images: image ids (gallery image versions, managed images) to cover besides the supported marketplace images'), {
    defaultValue: []
  })
}

func tag(name string) string => '[concat(\'tags[\', parameters(\'${name}\'), \']\')]'

func ringCondition() object => {
  anyOf: [
    {
      field: tag('ringTagName')
      in: '[parameters(\'ringTagValues\')]'
    }
    {
      allOf: [
        {
          value: '[length(parameters(\'ringTagValues\'))]'
          equals: 0
        }
        {
          field: tag('ringTagName')
          notIn: '[parameters(\'excludedRingTagValues\')]'
        }
      ]
    }
  ]
}

func imageCondition() object => {
  anyOf: [
    {
      value: '[parameters(\'scopeToSupportedImages\')]'
      equals: false
    }
    {
      field: 'Microsoft.Compute/imagePublisher'
      in: supportedPublishers()
    }
    {
      field: 'Microsoft.Compute/imageId'
      in: '[parameters(\'listOfImageIdToInclude\')]'
    }
  ]
}

// `prefix`: the alias prefix of the VM's profile (Microsoft.Compute/virtualMachines/ or
// Microsoft.Compute/virtualMachineScaleSets/virtualMachineProfile.).
func commonScope(type string, prefix string) array => [
  {
    field: 'type'
    equals: type
  }
  {
    field: '${prefix}storageProfile.osDisk.osType'
    equals: '[parameters(\'osType\')]'
  }
  {
    field: 'location'
    in: '[parameters(\'locations\')]'
  }
  {
    field: 'tags[\'aks-managed-orchestrator\']'
    exists: false
  }
  {
    field: 'tags[\'aks-managed-poolName\']'
    exists: false
  }
  {
    allOf: map(managedResourceGroupPatterns(), pattern => {
      value: '[resourceGroup().name]'
      notLike: pattern
    })
  }
  // A VM created without the VM agent never runs a VM Application (Linux and Windows profiles).
  {
    field: '${prefix}osProfile.linuxConfiguration.provisionVMAgent'
    notEquals: false
  }
  {
    field: '${prefix}osProfile.windowsConfiguration.provisionVMAgent'
    notEquals: false
  }
  imageCondition()
  {
    field: tag('optOutTagName')
    notEquals: 'true'
  }
  ringCondition()
]

// VMs of a Flexible scale set are VMs: the VM rule covers them by their own tags, and the scale set rule leaves
// Flexible scale sets alone (one rule per VM: no flipping between a scale set's ring and its VMs'). A Uniform scale
// set with a Manual upgrade policy is left alone too: its model would read compliant while its instances run nothing.
func scaleSetScope() array => [
  {
    field: 'Microsoft.Compute/virtualMachineScaleSets/orchestrationMode'
    notEquals: 'Flexible'
  }
  {
    field: 'Microsoft.Compute/virtualMachineScaleSets/upgradePolicy.mode'
    notEquals: 'Manual'
  }
]

func sefEntryCondition(apps string) object => {
  allOf: [
    {
      anyOf: [
        {
          field: '${apps}[*].packageReferenceId'
          equals: '[concat(parameters(\'applicationId\'), \'/versions/\', parameters(\'applicationVersion\'))]'
        }
        {
          allOf: [
            {
              value: '[parameters(\'enableAutomaticUpgrade\')]'
              equals: true
            }
            {
              field: '${apps}[*].packageReferenceId'
              like: '[concat(parameters(\'applicationId\'), \'/versions/*\')]'
            }
          ]
        }
      ]
    }
    {
      anyOf: [
        {
          value: '[length(parameters(\'configurationReference\'))]'
          equals: 0
        }
        {
          field: '${apps}[*].configurationReference'
          equals: '[parameters(\'configurationReference\')]'
        }
      ]
    }
  ]
}

// Compliant: the agent identity attached, the application listed at the ring's version and the resource provisioned
// (every version is installed with treatFailureAsDeploymentFailure, so a failed install leaves it Failed).
func existence(type string, prefix string) object => {
  allOf: [
    {
      field: 'identity.type'
      contains: 'UserAssigned'
    }
    {
      field: 'identity.userAssignedIdentities'
      containsKey: '[parameters(\'agentIdentityResourceId\')]'
    }
    {
      field: '${type}/provisioningState'
      equals: 'Succeeded'
    }
    {
      count: {
        field: '${prefix}applicationProfile.galleryApplications[*]'
        where: sefEntryCondition('${prefix}applicationProfile.galleryApplications')
      }
      greater: 0
    }
  ]
}

func deploymentParameters(type string) object => {
  provisioningState: {
    value: '[field(\'${type}/provisioningState\')]'
  }
  resourceName: {
    value: '[field(\'name\')]'
  }
  location: {
    value: '[field(\'location\')]'
  }
  agentIdentityResourceId: {
    value: '[parameters(\'agentIdentityResourceId\')]'
  }
  applicationId: {
    value: '[parameters(\'applicationId\')]'
  }
  applicationVersion: {
    value: '[parameters(\'applicationVersion\')]'
  }
  configurationReference: {
    value: '[parameters(\'configurationReference\')]'
  }
  enableAutomaticUpgrade: {
    value: '[parameters(\'enableAutomaticUpgrade\')]'
  }
}

func definition(what string, description string, type string, prefix string, scope array, template object) object => {
  displayName: 'sef: install the Scheduled Events Forwarder (VM Application) and attach its identity on ${what}'
  description: description
  mode: 'Indexed'
  metadata: {
    category: 'Compute'
    version: '2.0.0'
  }
  parameters: parameters()
  policyRule: {
    if: {
      allOf: concat(commonScope(type, prefix), scope)
    }
    then: {
      effect: '[parameters(\'effect\')]'
      details: {
        type: type
        name: '[field(\'name\')]'
        evaluationDelay: 'AfterProvisioning'
        // Virtual Machine Contributor and Managed Identity Operator: what the remediation's deployment needs.
        roleDefinitionIds: [
          '/providers/Microsoft.Authorization/roleDefinitions/9980e02c-c2be-4d73-94e8-173b1dc7cf3c'
          '/providers/Microsoft.Authorization/roleDefinitions/f1a07417-d97a-45cb-824c-7a7467783830'
        ]
        existenceCondition: existence(type, prefix)
        deployment: {
          properties: {
            mode: 'incremental'
            parameters: deploymentParameters(type)
            template: template
          }
        }
      }
    }
  }
}

@export()
@description('The policy definitions: name (after the prefix: sef-vm, sef-vmss) and properties.')
var definitions = [
  {
    name: 'vm'
    properties: definition(
      'virtual machines',
      'Virtual machines of the given OS, in the ring (ring tag) and the versions\' regions, from a supported image, with the VM agent, not opted out and not managed by a platform (AKS, Databricks, Service Fabric managed clusters), get the sef VM Application at the ring\'s version and the agent\'s user-assigned identity (their other identities and applications kept). Compliant: both present and provisioned. VMs of a Flexible scale set are virtual machines and covered here, by their own tags.',
      'Microsoft.Compute/virtualMachines',
      'Microsoft.Compute/virtualMachines/',
      [],
      loadJsonContent('remediation-vm.json')
    )
  }
  {
    name: 'vmss'
    properties: definition(
      'scale sets',
      'Uniform scale sets with an Automatic or Rolling upgrade policy, of the given OS, in the ring and the versions\' regions, from a supported image, not opted out and not managed by a platform, get the sef VM Application at the ring\'s version in their VM profile and the agent\'s user-assigned identity (their other identities and applications kept). Flexible scale sets are left to the VM rule (their VMs are VMs), Manual upgrade policies to their owners (their instances take a model only on az vmss update-instances).',
      'Microsoft.Compute/virtualMachineScaleSets',
      'Microsoft.Compute/virtualMachineScaleSets/virtualMachineProfile.',
      scaleSetScope(),
      loadJsonContent('remediation-vmss.json')
    )
  }
]
