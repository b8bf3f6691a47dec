// Example rollout: `az deployment sub create -l westeurope -f bicep/every-vm.bicep -p bicep/every-vm.bicepparam`.
// The gallery and its application versions come from infra/vmapp/upload.sh; the agent identity from main.bicep.
using 'every-vm.bicep'

param rollout = {
  resourceGroupName: 'sef-rg'
  galleryName: 'sef_gallery'
  // The regions the versions are replicated to (upload.sh --target-regions): VMs elsewhere are left alone.
  regions: [
    'westeurope'
    'northeurope'
  ]
  // Canary first: VMs tagged sef-ring=canary run the new version; every other VM the previous one. Roll forward by
  // raising the broad ring's version once the canaries are healthy; roll back by pinning the previous version.
  rings: [
    {
      name: 'canary'
      version: '0.1.0'
      tagValues: [
        'canary'
      ]
    }
    {
      name: 'broad'
      version: '0.1.0'
      tagValues: []
    }
  ]
}
