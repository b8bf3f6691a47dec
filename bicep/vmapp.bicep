// sef as VM Applications (the Bicep way to publish a release; infra/vmapp/upload.sh does the same with az): an Azure
// Compute Gallery with the applications sef-linux and sef-windows and, for a release whose bundles are uploaded, their
// version with the install/update/remove commands and file names of infra/vmapp/commands.json.

targetScope = 'resourceGroup'

@description('Region of the gallery and the versions\' source.')
param location string = resourceGroup().location

@description('Azure Compute Gallery name (letters, digits, dots and underscores).')
param galleryName string

@description('Gallery application names.')
param linuxApplicationName string = 'sef-linux'
param windowsApplicationName string = 'sef-windows'

@description('sef version to publish (MAJOR.MINOR.PATCH); empty creates the gallery and applications only.')
param version string = ''

@description('A bundle to publish: where the gallery copies it from and its SHA-256, which the version\'s commands check.')
type bundle = {
  @secure()
  @description('Read-only SAS URL of the bundle (infra/vmapp/bundle.sh\'s output, uploaded).')
  url: string

  @minLength(64)
  @maxLength(64)
  @description('The bundle\'s SHA-256, 64 hex digits (sha256sum): a download with another hash is refused on the VM.')
  sha256: string
}

@description('sef-VERSION-vmapp-linux.tar; null: no Linux version.')
param linuxBundle bundle?

@description('sef-VERSION-vmapp-windows.zip; null: no Windows version.')
param windowsBundle bundle?

@secure()
@description('Read-only SAS URL of the agent config (main.bicep\'s agentConfig output) VMs get by default; empty: none.')
param configUrl string = ''

@description('Regions the versions are replicated to (the VMs\' regions); the location is always one of them.')
param targetRegions array = []

@description('Keep this version from being "latest" (a canary release).')
param excludeFromLatest bool = false

param tags object = {}

var commands = loadJsonContent('../infra/vmapp/commands.json')
// The gallery's own region first: a version must be replicated to its source region.
var regions = union([location], targetRegions)

resource gallery 'Microsoft.Compute/galleries@2025-03-03' = {
  name: galleryName
  location: location
  tags: tags
  properties: {
    description: 'sef (Scheduled Events Forwarder) VM Applications'
  }
}

var applications = [
  {
    name: linuxApplicationName
    os: 'linux'
    supportedOSType: 'Linux'
    bundle: linuxBundle
  }
  {
    name: windowsApplicationName
    os: 'windows'
    supportedOSType: 'Windows'
    bundle: windowsBundle
  }
]

resource application 'Microsoft.Compute/galleries/applications@2025-03-03' = [for app in applications: {
  parent: gallery
  name: app.name
  location: location
  tags: tags
  properties: {
    supportedOSType: app.supportedOSType
    description: 'sef (Scheduled Events Forwarder) agent for ${app.supportedOSType}'
  }
}]

resource applicationVersion 'Microsoft.Compute/galleries/applications/versions@2025-03-03' = [for (app, i) in applications: if (!empty(version) && app.bundle != null) {
  parent: application[i]
  name: empty(version) ? 'none' : version
  location: location
  tags: tags
  properties: {
    publishingProfile: {
      source: {
        mediaLink: app.bundle.?url ?? ''
        defaultConfigurationLink: empty(configUrl) ? null : configUrl
      }
      manageActions: {
        // Each command checks the download against the bundle's SHA-256, stored here apart from the blob.
        install: replace(commands[app.os].install, '@BUNDLE_SHA256@', toLower(app.bundle.?sha256 ?? ''))
        update: replace(commands[app.os].update, '@BUNDLE_SHA256@', toLower(app.bundle.?sha256 ?? ''))
        remove: replace(commands[app.os].remove, '@BUNDLE_SHA256@', toLower(app.bundle.?sha256 ?? ''))
      }
      settings: {
        packageFileName: commands[app.os].packageFileName
        // Always set: without it Azure names the file <application>_config (REST spec) or -config (docs).
        configFileName: commands[app.os].configFileName
      }
      targetRegions: [for region in regions: {
        name: region
        regionalReplicaCount: 1
      }]
      excludeFromLatest: excludeFromLatest
    }
    safetyProfile: {
      allowDeletionOfReplicatedLocations: true
    }
  }
}]

@description('Resource id of the gallery (every-vm.bicep\'s rollout.galleryName names it).')
output galleryResourceId string = gallery.id

@description('Resource ids of the applications.')
output applicationIds array = [for name in [linuxApplicationName, windowsApplicationName]: resourceId('Microsoft.Compute/galleries/applications', galleryName, name)]
