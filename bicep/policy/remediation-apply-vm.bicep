// The PUT of the sef-vm remediation: the VM's identities and applications as remediation-vm.bicep worked them out.

param resourceName string
param location string
param identity object
param applications array

resource vm 'Microsoft.Compute/virtualMachines@2025-04-01' = {
  name: resourceName
  location: location
  identity: identity
  properties: {
    applicationProfile: {
      galleryApplications: applications
    }
  }
}
